package fieldfailures

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sample() *Results {
	r := &Results{Started: time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC), Server: "v1.37.2", ClientGo: "v0.37.2",
		Bounds: Bounds{Sync: Duration(20 * time.Second), Converge: Duration(20 * time.Second), MinWindow: Duration(10 * time.Second), MaxRequestsPerMinute: 240}}
	for _, row := range Catalogue {
		r.Rows = append(r.Rows, RowResult{ID: row.ID, Clients: []ClientResult{
			{Client: Stock, Window: Duration(21 * time.Second), Requests: 70, RequestsPerMinute: 200},
			{Client: DropIn, Synced: true, SyncTime: Duration(5050 * time.Millisecond), Converged: true, ConvergeTime: Duration(40 * time.Millisecond),
				Requests: 4, RequestsPerMinute: 11.4, Fallbacks: map[string]int{"streaming-list-ignored": 1}},
			{Client: Reflector, Synced: true, SyncTime: Duration(2 * time.Second), Converged: false, Regressions: []string{"cm-0: 12 -> 11"}},
		}, Notes: []string{"a note | with a pipe"}})
	}
	return r
}

func TestRenderHasEveryRowAndOutcome(t *testing.T) {
	var b strings.Builder
	if err := Render(&b, sample()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, row := range Catalogue {
		if !strings.Contains(page, "| "+strings.ReplaceAll(row.Failure, "|", `\|`)+" | ") {
			t.Errorf("table lacks row %s", row.ID)
		}
		for _, rep := range row.Reports {
			if !strings.Contains(page, "["+rep.Ref+"]("+rep.URL+")") {
				t.Errorf("row %s lacks its report link %s", row.ID, rep.Ref)
			}
		}
	}
	for _, want := range []string{
		"**never synced** (20.0 s bound)",
		"synced in 5.05 s, converged in 0.04 s",
		"**store did not converge** (20.0 s bound), **1 resourceVersion regression(s)**",
		"| 200 / 11 / 0 |",
		"fallback `streaming-list-ignored` ×1",
		"reflector went back in time: cm-0: 12 -> 11",
		"stock client-go v0.37.2",
		"In this run: stock synced and converged in 0 of 11 rows (never synced in 11); drop-in synced and converged in 11 of 11 rows (never synced in 0); reflector synced and converged in 0 of 11 rows (never synced in 0).",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, "\n|---|---|---|---|---|---|---|\n"); n != 1 {
		t.Errorf("%d summary tables", n)
	}
}

func TestRenderRejectsUnknownRow(t *testing.T) {
	r := sample()
	r.Rows = append(r.Rows, RowResult{ID: "no-such-row"})
	if err := Render(&strings.Builder{}, r); err == nil || !strings.Contains(err.Error(), "no-such-row") {
		t.Fatalf("want an error naming the row, got %v", err)
	}
}

func TestResultsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	want := sample()
	if err := want.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var a, b strings.Builder
	if err := Render(&a, want); err != nil {
		t.Fatal(err)
	}
	if err := Render(&b, got); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Error("a saved and loaded run renders differently")
	}
	if got.Rows[0].Clients[1].SyncTime != Duration(5050*time.Millisecond) {
		t.Errorf("sync time %v", got.Rows[0].Clients[1].SyncTime)
	}
}

func TestCatalogueIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, row := range Catalogue {
		if seen[row.ID] || row.Failure == "" || row.Emulation == "" || len(row.Reports) == 0 {
			t.Errorf("row %+v: duplicate or incomplete", row)
		}
		seen[row.ID] = true
		for _, rep := range row.Reports {
			if !strings.HasPrefix(rep.URL, "https://github.com/") || rep.Says == "" || !strings.Contains(rep.Ref, "#") {
				t.Errorf("row %s report %+v", row.ID, rep)
			}
		}
	}
}
