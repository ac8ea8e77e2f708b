package matrix

import (
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/e2e/chaos"
)

func TestMarkdownRendersEveryCellAndEscapesPipes(t *testing.T) {
	r := Report{Generated: "2026-01-01T00:00:00Z", Command: "go run ./cmd/matrix", Go: "go1.26", ClientGo: "v0.37.2",
		Rows: []Row{{Server: "v1.18.19", Config: Configs[0], Cells: []Cell{
			{Scenario: ScenarioSync, Client: Ours, Outcome: Pass, Detail: "synced in 0.2s"},
			{Scenario: ScenarioSync, Client: Stock, Outcome: Fail, Detail: "never synced | within 30s"},
		}}, {Server: "v1.33.9", Config: Configs[1], Err: "binary: build failed"}},
		Chaos: []chaos.Result{{Replay: 7, Server: "v1.36.3", Config: "HA", FaultsByKind: map[string]int{"drop-watches": 2},
			Informers: []chaos.InformerRun{{Name: "steadywatch", Converged: true, ConvergenceSeconds: 1.5}}}},
	}
	r.NotRun = []NotRun{{Server: "v1.22.17", Why: "not built | no time"}}
	md := Markdown(r)
	for _, want := range []string{
		"| v1.18.19 | watch cache on | initial sync (reflector.New) | ✅ synced in 0.2s | ❌ never synced \\| within 30s |",
		"| v1.18.19 | watch cache on | recovery from 410 (compaction + watch 410) | — ", // missing cell is n/a
		"| v1.33.9 | watch cache off | — | not run: binary: build failed | not run |",
		"| v1.36.3 | HA | 7 |", "| v1.22.17 | not built \\| no time |", "✅ 1.5 s", "GENERATED", `"replay": 7`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestListPath(t *testing.T) {
	if got := listPath(nil, "ns", true); got != "no list request" {
		t.Fatalf("got %q", got)
	}
}
