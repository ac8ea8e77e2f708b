package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPageHeadingsAreTheGenerators renders docs/benchmarks.md again from the
// results files next to it (as -render does, into a copy) and checks that
// the page's headings and section markers are the ones the generator writes
// now, in the same order: a heading changed in the generator and not on the
// page (or on the page by hand) fails here.
func TestPageHeadingsAreTheGenerators(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	page, err := os.ReadFile(filepath.Join(docs, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(docs, "benchmarks.md"), filepath.Join(out, "benchmarks.md"))
	copyFile(t, filepath.Join(docs, "bench", "notes.md"), filepath.Join(out, "bench", "notes.md"))
	results, err := filepath.Glob(filepath.Join(docs, "bench", "results-*.json"))
	if err != nil || len(results) == 0 {
		t.Fatalf("no results files in %s: %v", docs, err)
	}
	// The sections of their own runs first, then the full run, which keeps
	// them (as the page was written).
	var own, full []string
	for _, f := range results {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch {
		case r.relistOnly() || r.shardingOnly():
			own = append(own, f)
		case len(r.Sync) > 0:
			full = append(full, f)
		default:
			t.Errorf("%s: no scenario of the bench in it (a renamed or unknown key?)", f)
		}
	}
	for _, f := range append(own, full...) {
		copyFile(t, f, filepath.Join(out, "bench", filepath.Base(f)))
		if err := rerender(filepath.Join(out, "bench", filepath.Base(f)), out); err != nil {
			t.Fatalf("render %s: %v", f, err)
		}
	}
	again, err := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, got := headings(string(again)), headings(string(page))
	if !slices.Equal(got, want) {
		for i := 0; i < max(len(got), len(want)); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("heading %d:\n page      %q\n generator %q", i, g, w)
			}
		}
	}
}

// headings returns page's heading and HTML comment (marker) lines.
func headings(page string) []string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "<!--") {
			out = append(out, l)
		}
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
