package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

// stampRE matches a timeline line's time stamp.
var stampRE = regexp.MustCompile(`^\[(\d\d:\d\d\.\d)\] `)

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
	// watch cache in one response (no limit). v1.18 has no watch progress
	// notifications, so when the apiserver's own writes (such as its endpoint lease)
	// moved the newest resourceVersion past the last ConfigMap write, the
	// ConfigMap watch cache cannot catch up: the server answers 504 "Too large
	// resource version" and, the version known to exist, we list the most
	// recent state at once (KEP-1904). Both are real v1.18 answers; either
	// must end in one list that succeeds.
	servedFromCache := regexp.MustCompile(`ours   sent          LIST rv=[0-9]+ -> 200`).MatchString(s)
	mostRecent := strings.Contains(s, "fallback too-large-rv-cache-stuck-most-recent") &&
		strings.Contains(s, `ours   sent          LIST rv="" -> 200`)
	if !servedFromCache && !mostRecent {
		t.Errorf("output lacks our list NotOlderThan the current resourceVersion (LIST rv=<n> without limit -> 200), " +
			"and lacks the fallback to the most recent list after 504 Too large resource version")
	}
	// Lines in time order; the deliberate drops shown as expected faults,
	// never as client-go's bare INTERNAL_ERROR text.
	last := ""
	for _, line := range strings.Split(s, "\n") {
		if m := stampRE.FindStringSubmatch(line); m != nil {
			if m[1] < last {
				t.Errorf("line out of time order (after %s): %s", last, line)
			}
			last = m[1]
		}
		if strings.Contains(line, "INTERNAL_ERROR; received from peer") {
			t.Errorf("a deliberate drop shown as client-go's error text: %s", line)
		}
	}
	if !strings.Contains(s, "connection dropped by the demo (expected fault") {
		t.Error("no drop is labelled as an expected fault")
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

// Lines are stamped when written, so the stamps never go backwards even when
// a request's answer is known long after it was sent; such a line says when
// the request was sent.
func TestTimelineInTimeOrder(t *testing.T) {
	var out bytes.Buffer
	tl := newTimeline(&out)
	start := tl.start
	now := start
	tl.now = func() time.Time { return now }
	now = start.Add(1200 * time.Millisecond)
	tl.say("demo", "dropped the watch connections")
	now = start.Add(1300 * time.Millisecond)
	// Sent at 0.1s, answered now: written now, with its sending time.
	tl.sayRequest("ours", faults.Request{Time: start.Add(100 * time.Millisecond), Verb: "list", RawQuery: "resourceVersion=5", Status: 200})
	// Sent 0.1s ago: no sending time.
	tl.sayRequest("stock", faults.Request{Time: now.Add(-100 * time.Millisecond), Verb: "watch", RawQuery: "resourceVersion=7&watch=true", Status: 200})
	want := "[00:01.2] demo   dropped the watch connections\n" +
		"[00:01.3] ours   sent          LIST rv=5 -> 200 (sent at 00:00.1)\n" +
		"[00:01.3] stock  sent          WATCH rv=7 -> 200\n"
	if out.String() != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestExpectedFaults(t *testing.T) {
	const reset = `an error on the server ("unable to decode an event from the watch stream: stream error: stream ID 7; INTERNAL_ERROR; received from peer") has prevented the request from succeeding`
	var e expected
	// Not announced: shown as it is.
	if got, ok := e.label("watch from \"5\" failed (server-error): " + reset); ok || !strings.Contains(got, "INTERNAL_ERROR; received from peer") {
		t.Errorf("unannounced reset: %q %v, want it unchanged", got, ok)
	}
	e.dropped(1)
	got, ok := e.label("watch from \"5\" failed (server-error): " + strings.ReplaceAll(reset, "ID 7", "ID 9"))
	if want := `watch from "5" failed (server-error): connection dropped by the demo (expected fault; client-go reports the reset stream 9 as INTERNAL_ERROR)`; !ok || got != want {
		t.Errorf("announced drop: %q %v, want %q", got, ok, want)
	}
	// The same stream's error again (the transition after "Watch failed"): still expected.
	if _, ok := e.label(strings.ReplaceAll(reset, "ID 7", "ID 9")); !ok {
		t.Error("the same stream's second report is not labelled")
	}
	// The one announced drop is used up: another stream's reset is shown.
	if _, ok := e.label(strings.ReplaceAll(reset, "ID 7", "ID 11")); ok {
		t.Error("a reset beyond the announced drops is labelled expected")
	}
	e.during("apiserver-1 restarting")
	if got, ok := e.label("list failed: connection refused"); !ok || got != "expected fault (apiserver-1 restarting): list failed: connection refused" {
		t.Errorf("window: %q %v", got, ok)
	}
	e.during("")
	if got, ok := e.label("list failed: connection refused"); ok || got != "list failed: connection refused" {
		t.Errorf("after the window: %q %v", got, ok)
	}
}
