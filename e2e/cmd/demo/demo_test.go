package main

import (
	"bytes"
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

// TestCurrentScenes runs the demo's scenes on the current apiserver (real
// kube-apiserver v1.36.3 from the harness) and checks its verdict and the
// lines a reader relies on.
func TestCurrentScenes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real apiservers")
	}
	var out, errb bytes.Buffer
	code := run([]string{"--scenes", "compaction,drop"}, &out, &errb)
	s := out.String()
	t.Log(s)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errb.String())
	}
	for _, want := range []string{
		`410 Gone; relisting NotOlderThan(`, // compaction: our relist after the 410
		"rv=",                               // the relist request as sent
		"fallbacks by reason",               // the summary table header
		"compaction  ours ",                 // one row per scene and side
		"drop        ours ",                 //
		"RESULT: steadywatch synced, never went back", // the verdict
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// After a dropped watch ours resumes: no relist in the drop scene.
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "drop ") && strings.Contains(line, " ours ") {
			if f := strings.Fields(line); len(f) < 4 || f[3] != "0" {
				t.Errorf("drop scene: ours relisted: %q", line)
			}
		}
	}
}
