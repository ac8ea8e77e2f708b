package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A full write (or -render) of a run without the relist-memory and sharding
// results keeps those sections of the existing page, which runs of their own
// wrote there.
func TestFullWriteKeepsSectionsOfTheirOwnRuns(t *testing.T) {
	out := t.TempDir()
	relist := relistBegin + "\n## Relist memory\n\nhand-merged rows\n" + relistEnd
	sharding := shardingBegin + "\n## Sharding\n\nreplicas\n" + shardingEnd
	old := "# Benchmarks\n\n## At a glance\n\n" + relist + "\n\n" + sharding + "\n\n" + recoveryHeading + "\n"
	if err := os.WriteFile(filepath.Join(out, "benchmarks.md"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &report{Size: "small", Recovery: &recoveryReport{Objects: 10, Server: "v1.37.2", Runs: map[string][]recoveryRun{}}}
	if err := r.write(out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i6, i7, i2 := strings.Index(page, relist), strings.Index(page, sharding), strings.Index(page, recoveryHeading+" at")
	if i6 < 0 || i7 < 0 || i2 < 0 || !(i6 < i7 && i7 < i2) {
		t.Fatalf("want the old relist memory and sharding sections, in that order, before the watch-410 recovery section (at %d, %d, %d):\n%s", i6, i7, i2, page)
	}
	if strings.Count(page, relistBegin) != 1 || strings.Count(page, shardingBegin) != 1 {
		t.Errorf("a section is there twice:\n%s", page)
	}
	if !strings.Contains(page, "The relist memory and sharding scenarios ran on their own") {
		t.Errorf("the summary does not point to the kept sections:\n%s", page)
	}
}

// The Summary counts the Targets rows of each goal, met and missed, and
// names the worst miss; it comes before everything but the title and intro.
func TestSummaryCountsGoalsMetAndMissed(t *testing.T) {
	runs := func(ms ...float64) []syncRun {
		var rs []syncRun
		for _, m := range ms {
			rs = append(rs, syncRun{Result: &syncResult{SyncMs: m, PeakHeap: uint64(m) << 20, wireStats: wireStats{Requests: map[string]int{"list": 1}}}})
		}
		return rs
	}
	r := &report{Sync: []*syncReport{{Server: "v1.33.13", Objects: 10000, Kind: "configmaps", Runs: map[string][]syncRun{
		"stock": runs(100, 100), "stock-list": runs(100, 100), "sw-informer": runs(50, 50), "sw-reflector": runs(120, 110),
	}}}}
	r.Servers = []serverRun{{serverSpec: serverSpec{Spec: "v1.33.13"}}}
	md := r.markdown("results-small.json", "## Method\n\nnotes", map[string]string{"sync-overview": "sync-overview.png"}, nil)
	sum, tg := strings.Index(md, "## Summary"), strings.Index(md, "## Targets")
	if sum < 0 || tg < 0 || sum > strings.Index(md, "## How to reproduce") {
		t.Fatalf("want the Summary before How to reproduce, and a Targets section:\n%s", md)
	}
	summary := md[sum:strings.Index(md, "## How to reproduce")]
	for _, want := range []string{
		"![Initial sync overview](bench/sync-overview.png)",
		// sw-informer 0.5x and sw-reflector 1.15x, each against stock and stock-list.
		"| Initial sync time, where stock lists | <= 1x | 0.50x–1.15x | **missed** in 2 of 4 (worst: `v1.33.13` initial sync 10k ConfigMaps, sw-reflector vs stock, 1.15x) |",
		"| Initial sync client peak heap, where stock lists | <= 0.6x | 0.50x–1.15x | **missed** in 2 of 4",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(md[sum+1:], "## Summary") || strings.Count(md, "sync-overview.png") != 1 {
		t.Errorf("the summary or its chart is on the page twice")
	}
}
