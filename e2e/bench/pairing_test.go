package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseContenders(t *testing.T) {
	got, err := parseContenders("sync-contenders", " stock, sw-informer ,", false)
	if err != nil || strings.Join(got, ",") != "stock,sw-informer" {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := parseContenders("cost-contenders", "", false); err != nil || got != nil {
		t.Fatalf("empty list: got %v, %v; want nil (the default set)", got, err)
	}
	for _, tc := range []struct {
		list string
		cr   bool
		want string
	}{
		{"stock,nope", false, `unknown contender "nope"`},
		{"sw-informer-cr-nogzip", false, "is not a ConfigMap contender"},
		{"stock-cr,stock", true, `"stock" is not a custom-resource contender`},
	} {
		if _, err := parseContenders("x", tc.list, tc.cr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseContenders(%q, cr=%v) = %v, want an error with %q", tc.list, tc.cr, err, tc.want)
		}
	}
}

func TestPairedHeapLeavesOutRunsFromDifferentBaselines(t *testing.T) {
	run := func(base, peak float64) costRun { return costRun{HeapBase: base, HeapPeak: peak} }
	p := &costReport{Runs: map[string][]costRun{
		"stock": {run(600, 1200), run(620, 1240), run(600, 1200)},
		// The second run started 500 MiB higher: its larger peak is the
		// collector's room, not the work, so it must not be compared.
		"ours": {run(610, 910), run(1120, 1880), run(700, 1000)},
	}}
	s, left := pairedCostHeap(p, "ours", "stock")
	if left != 2 || s.N != 1 {
		t.Fatalf("left out %d, kept %d; want 2 and 1 (the third pair too: 700 > 600*1.15)", left, s.N)
	}
	if s.Median != 0.5 {
		t.Errorf("median %v, want 0.5 (300/600)", s.Median)
	}
	if got := heapVs(p, "ours", "stock"); !strings.Contains(got, "2 of 3 pairs left out") {
		t.Errorf("heapVs = %q", got)
	}
	p.Runs["ours"] = []costRun{run(1120, 1880)}
	if got := heapVs(p, "ours", "stock"); !strings.HasPrefix(got, "n/a") {
		t.Errorf("heapVs with no comparable pair = %q, want n/a", got)
	}
}

func TestSummaryReportsOnlyApiserverCostContendersTheRunIncluded(t *testing.T) {
	run := costRun{HeapBase: 600, HeapPeak: 1200, Result: &syncResult{wireStats: wireStats{Requests: map[string]int{"watch-list": 8}}}}
	r := &report{Cost: []*costReport{{Server: "v1.37.2", Informers: 8, Objects: 5000,
		Contenders: []string{"stock", "sw-informer", "sw-informer-gate1"},
		Runs:       map[string][]costRun{"stock": {run}, "sw-informer": {run}}}}}
	var b strings.Builder
	r.targetsSection(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	out := b.String()
	if strings.Contains(out, "sw-reflector | **did not sync**") {
		t.Errorf("sw-reflector was not in the run but is reported as not synced:\n%s", out)
	}
	if !strings.Contains(out, "sw-informer-gate1 | **did not sync**") {
		t.Errorf("sw-informer-gate1 was in the run without results but is not reported:\n%s", out)
	}
	if !strings.Contains(out, "sw-informer vs stock (stock streams: never worse) | 1.00x") {
		t.Errorf("missing the sw-informer row:\n%s", out)
	}
}

func TestApiserverCostProfileNames(t *testing.T) {
	for suffix, want := range map[string]string{
		".cpu":                    "cost-v1.37.2-nocache-stock-1.cpu.pprof",
		"-baseline.heap":          "cost-v1.37.2-nocache-stock-1-baseline.heap.pprof",
		"-baseline-restart0.heap": "cost-v1.37.2-nocache-stock-1-baseline-restart0.heap.pprof",
	} {
		if got := costProfileName("v1.37.2/nocache", "stock", 1, suffix); got != want {
			t.Errorf("costProfileName(%q) = %q, want %q", suffix, got, want)
		}
	}
}
