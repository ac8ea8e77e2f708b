package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{{"--scenes", "nope"}, {"--scenes", ","}, {"--timeout", "-1s"}, {"--no-such-flag"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %q)", args, code, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", args, out.String())
		}
	}
}

// TestScenes runs the demo's legacy, compaction and drop scenes on real
// kube-apiservers (build.Legacy and build.Current, from the harness) and checks its
// verdict, its summary rows and the lines a reader relies on.
func TestScenes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real apiservers")
	}
	var out, errb bytes.Buffer
	code := run([]string{"--scenes", "legacy,compaction,drop", "--stock-bound", "5s"}, &out, &errb)
	s := out.String()
	t.Log(s)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errb.String())
	}
	for _, want := range []string{
		"stock  NOT SYNCED    after 5s",                    // legacy: client-go waits for a bookmark v1.18 never sends
		"streaming list unsupported (version v1.18.19)",    // legacy: our sync path, from compat
		"ours   sent          LIST rv=\"\" limit=1 -> 200", // legacy: the current resourceVersion, then a list not older than it
		"410 Gone; relisting NotOlderThan(",                // compaction: our relist after the 410
		"RESULT: steadywatch synced, never went back",      // the verdict
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// legacy: the list we sent instead of a streaming list, served from the
	// watch cache in one response (no limit).
	if !regexp.MustCompile(`ours   sent          LIST rv=[0-9]+ -> 200`).MatchString(s) {
		t.Errorf("output lacks our list NotOlderThan the current resourceVersion (LIST rv=<n> without limit)")
	}
	rows := map[string][]string{} // "scene/side" -> summary fields
	for _, line := range strings.Split(s, "\n") {
		if f := strings.Fields(line); len(f) > 3 && (f[1] == "stock" || f[1] == "ours") {
			rows[f[0]+"/"+f[1]] = f
		}
	}
	for _, sc := range []string{"legacy", "compaction", "drop"} {
		f := rows[sc+"/ours"]
		if f == nil || f[2] == "never" || !strings.Contains(strings.Join(f, " "), " 0 yes (") {
			t.Errorf("%s: ours row %q: want synced, 0 went back, store == truth", sc, f)
		}
	}
	if f := rows["legacy/stock"]; f == nil || f[2] != "never" {
		t.Errorf("legacy: stock row %q: want never synced", f)
	}
	if f := rows["drop/ours"]; f == nil || f[3] != "0" {
		t.Errorf("drop: ours row %q: want 0 relists (the watch resumes)", f)
	}
}
