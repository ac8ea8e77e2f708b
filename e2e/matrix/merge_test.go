package matrix

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/e2e/chaos"
)

func TestParseReportReadsJSONAndRenderedPage(t *testing.T) {
	r := Report{Generated: "2026-01-01T00:00:00Z", Command: "go run ./cmd/matrix", Go: "go1.26", ClientGo: "client-go v0.37.2",
		Rows:  []Row{{Server: "v1.18.19", Config: Configs[0], Cells: []Cell{{Scenario: ScenarioSync, Client: Ours, Outcome: Pass, Detail: "x"}}}},
		Chaos: []chaos.Result{{Replay: 7, Server: "v1.37.2"}}}
	raw, _ := json.Marshal(r)
	for name, data := range map[string]string{"json": string(raw), "page": Markdown(r)} {
		got, err := ParseReport([]byte(data))
		if err != nil || !reflect.DeepEqual(got.Rows, r.Rows) || got.Generated != r.Generated || len(got.Chaos) != 1 {
			t.Errorf("%s: ParseReport = %+v, %v", name, got, err)
		}
	}
	if _, err := ParseReport([]byte("# no json here")); err == nil {
		t.Error("ParseReport accepted a page without raw results")
	}
}

func TestMergeKeepsLatestRowPerServerAndConfigAndAttributesRuns(t *testing.T) {
	old := Report{Generated: "2026-11-23T19:18:31Z", Command: "old", Rows: []Row{
		{Server: "v1.37.2", Config: Configs[0], Err: "old"},
		{Server: "v1.18.19+v1.37.2", Config: Configs[3]},
		{Server: "v1.18.19", Config: Configs[0]},
	}, Chaos: []chaos.Result{{Replay: 1}}}
	newer := Report{Generated: "2026-11-25T02:00:00Z", Command: "new",
		Runs: []RunInfo{{Generated: "2026-11-25T02:00:00Z", Command: "new", Seconds: map[string]float64{"v1.19.16": 90, "v1.37.2": 60}}},
		Rows: []Row{
			{Server: "v1.19.16", Config: Configs[1], Run: 1},
			{Server: "v1.19.16", Config: Configs[0], Run: 1},
			{Server: "v1.37.2", Config: Configs[0], Run: 1},
		}}
	rows, runs, results := Merge(newer, old) // order of arguments: later wins
	var got []string
	for _, r := range rows {
		got = append(got, r.Server+"/"+r.Config.Name+"/"+runs[r.Run-1].Command)
	}
	want := []string{
		"v1.18.19/watch cache on/old",
		"v1.19.16/watch cache on/new", "v1.19.16/watch cache off/new",
		"v1.37.2/watch cache on/old", // the old report came last here, so its row wins
		"v1.18.19+v1.37.2/" + ConfigMixed + "/old",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(runs) != 2 || runs[0].Command != "old" || runs[1].Command != "new" { // oldest first
		t.Fatalf("runs = %+v", runs)
	}
	if !reflect.DeepEqual(runs[1].Servers, []string{"v1.19.16"}) || !reflect.DeepEqual(runs[1].Seconds, map[string]float64{"v1.19.16": 90}) {
		t.Errorf("new run = %+v, want only v1.19.16 (its v1.37.2 row was replaced)", runs[1])
	}
	if !reflect.DeepEqual(runs[0].Servers, []string{"v1.18.19", "v1.37.2", "v1.18.19+v1.37.2"}) {
		t.Errorf("old run servers = %v", runs[0].Servers)
	}
	if len(results) != 1 {
		t.Errorf("chaos results = %d, want 1", len(results))
	}
	md := Markdown(Report{Generated: "g", Command: "c", Rows: rows, Runs: runs})
	if !strings.Contains(md, "| 2 | 2026-11-25T02:00:00Z | v1.19.16 | `new` (, ) | v1.19.16 90 s |") {
		t.Errorf("runs table missing:\n%s", md)
	}
}

func TestChaosOriginsNamesTheRunThatMeasuredThem(t *testing.T) {
	first := Report{Generated: "2026-11-23T19:18:31Z", Command: "c1", Chaos: []chaos.Result{{Replay: 1}}}
	second := Report{Generated: "2026-11-25T03:00:00Z", Command: "c2", Chaos: first.Chaos, ChaosFrom: ChaosOrigins(first)}
	want := []string{"2026-11-23T19:18:31Z by `c1`"}
	if got := ChaosOrigins(second, Report{Generated: "x"}); !reflect.DeepEqual(got, want) {
		t.Errorf("ChaosOrigins = %q, want %q", got, want)
	}
	if md := Markdown(second); !strings.Contains(md, "carried over unchanged from the page generated 2026-11-23T19:18:31Z by `c1`") {
		t.Errorf("page does not say where its chaos results come from:\n%s", md)
	}
}
