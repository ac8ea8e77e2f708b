package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/soak"
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

func TestSceneHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--scenes", "help"}, &out, &errb); code != 0 {
		t.Fatalf("--scenes help: exit %d, want 0 (stderr %q)", code, errb.String())
	}
	for _, name := range sceneNames() {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("--scenes help lacks scene %q:\n%s", name, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"--scenes", "nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "  bad-bookmark ") {
		t.Errorf("an unknown scene: exit %d, stderr %q; want 2 and the list of scenes", code, errb.String())
	}
}

// stockFails is, per scene, what stock client-go does wrong in it (a
// substring of its failures); "" = nothing (the control scene). Ours must
// be correct in every scene.
var stockFails = map[string][]string{
	"redelivered":  {"went back in time", "store != server"},
	"cut-stream":   {"request storm"},
	"bad-bookmark": {"store != server"},
	"retry-after":  {"request storm"},
	"legacy":       {"never synced", "store != server"},
	"stale-reads":  {"reads right after its own write were stale"},
	"drop":         nil,
}

// TestScenes runs every scene on real kube-apiservers (build.Current and
// build.Legacy, from the harness) and checks each side's verdict: stock's
// failure in each fault scene, both correct in the control scene, ours
// correct everywhere; and that each scene prints its start and result lines.
func TestScenes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real apiservers")
	}
	var out, errb bytes.Buffer
	cfg := config{scenes: sceneNames(), timeout: 5 * time.Minute}
	results, err := demo(t.Context(), cfg, &out, &errb)
	s := out.String()
	t.Log(s)
	if err != nil {
		t.Fatalf("demo: %v; stderr:\n%s", err, errb.String())
	}
	got := map[string]result{}
	for _, r := range results {
		got[r.scene+"/"+r.who] = r
	}
	for _, name := range sceneNames() {
		if len(stockFails[name]) == 0 && name != "drop" {
			t.Errorf("scene %s: no expected stock failure in the test's table", name)
		}
		for _, who := range []string{stock, ours} {
			r, ok := got[name+"/"+who]
			if !ok {
				t.Errorf("%s/%s: no result", name, who)
				continue
			}
			if name == "stale-reads" && (r.loop == nil || r.loop.cycles != staleCycles) {
				t.Errorf("%s/%s: the controller loop did not run its %d cycles: %+v", name, who, staleCycles, r.loop)
			}
			failures := strings.Join(r.failures(), "; ")
			want := stockFails[name]
			if who == ours {
				want = nil
			}
			if len(want) == 0 && failures != "" {
				t.Errorf("%s/%s: %s; want correct", name, who, failures)
			}
			for _, w := range want {
				if !strings.Contains(failures, w) {
					t.Errorf("%s/%s: failures %q lack %q", name, who, failures, w)
				}
			}
		}
		if !regexp.MustCompile(`(?m)^\[\d\d:\d\d\.\d\] scene  \d/\d ` + name + `: `).MatchString(s) {
			t.Errorf("no start line for scene %s", name)
		}
		if !regexp.MustCompile(`(?m)^\[\d\d:\d\d\.\d\] result ` + name + `: stock .* \| ours correct `).MatchString(s) {
			t.Errorf("no result line for scene %s with ours correct", name)
		}
	}
	// Lines in time order.
	last := ""
	for _, line := range strings.Split(s, "\n") {
		if m := stampRE.FindStringSubmatch(line); m != nil {
			if m[1] < last {
				t.Errorf("line out of time order (after %s): %s", last, line)
			}
			last = m[1]
		}
	}
}

// A side is correct only without any of the four failures.
func TestVerdict(t *testing.T) {
	ok := result{synced: true, storeOK: true, recovered: true, wire: soak.Wire{Requests: 4, Busiest10s: 4}}
	if f := ok.failures(); len(f) != 0 {
		t.Fatalf("a correct side: %q", f)
	}
	for name, r := range map[string]result{
		"went back in time": func() result { r := ok; r.backward = []string{"cm-0: 7 -> 5"}; return r }(),
		"request storm":     func() result { r := ok; r.wire.Busiest10s = soak.LoopBound + 1; return r }(),
		"never synced":      func() result { r := ok; r.synced = false; return r }(),
		"store != server":   func() result { r := ok; r.storeOK = false; r.storeNote = "1 stale"; return r }(),
		"reads right after its own write were stale": func() result {
			r := ok
			r.loop = &loopResult{cycles: 30, stale: 1}
			return r
		}(),
	} {
		if f := strings.Join(r.failures(), "; "); !strings.Contains(f, name) || !strings.HasPrefix(r.verdict(), "WRONG: ") {
			t.Errorf("%s: failures %q, verdict %q", name, f, r.verdict())
		}
	}
}

// Lines are stamped when written, so the stamps never go backwards even when
// a request's answer is known long after it was sent; such a line says when
// the request was sent.
func TestTimelineInTimeOrder(t *testing.T) {
	var out bytes.Buffer
	tl := newTimeline(&out, false)
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
