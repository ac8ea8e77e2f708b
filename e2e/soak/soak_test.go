package soak

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func req(at time.Duration, ns, verb, query string) faults.Request {
	return faults.Request{Time: t0.Add(at), Resource: "configmaps", Namespace: ns, Verb: verb, RawQuery: query}
}

func TestCount(t *testing.T) {
	reqs := []faults.Request{
		req(-time.Second, "a", "list", ""), // before the window
		req(0, "a", "list", "limit=1"),     // a count probe
		req(100*time.Millisecond, "a", "list", "resourceVersion=0&limit=500"),
		req(200*time.Millisecond, "a", "watch", "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
		req(time.Second, "a", "watch", "resourceVersion=12&allowWatchBookmarks=true"),
		req(2*time.Second, "b", "list", ""),                                                      // another namespace
		{Time: t0.Add(2 * time.Second), Resource: "secrets", Namespace: "a", Verb: "list"},       // another resource
		{Time: t0.Add(2 * time.Second), Resource: "configmaps", Namespace: "a", Verb: "update"},  // not a list or watch
		req(15*time.Second, "a", "list", "resourceVersion=12&resourceVersionMatch=NotOlderThan"), // after 14 s without one
		{Time: t0.Add(15500 * time.Millisecond), Resource: "configmaps", Namespace: "a", Verb: "watch", RawQuery: "resourceVersion=20", Fault: "rule 1: 410 Expired as watch ERROR event"},
		req(30*time.Second, "a", "list", ""), // at the end: outside
		{Time: t0.Add(3 * time.Second), Resource: "configmaps", Subresource: "x", Namespace: "a", Verb: "list"},                      // a subresource
		{Time: t0.Add(300 * time.Millisecond), Resource: "configmaps", Verb: "list", RawQuery: "limit=1", UserAgent: userAgent("a")}, // every namespace, by this path
		{Time: t0.Add(300 * time.Millisecond), Resource: "configmaps", Verb: "list", RawQuery: "limit=1", UserAgent: userAgent("b")}, // every namespace, by another path
	}
	w := Count(reqs, "a", t0, t0.Add(30*time.Second))
	want := Wire{Requests: 7, Lists: 4, Probes: 2, StreamingLists: 1, Watches: 2, Faulted: 1, PerMinute: 14,
		Busiest10s: 5, Busiest10sAfterFirst: 2, LongestGap: 14500 * time.Millisecond}
	if w != want {
		t.Errorf("Count:\n got %+v\nwant %+v", w, want)
	}
	if w := Count(reqs, "none", t0, t0.Add(30*time.Second)); w.Requests != 0 || w.LongestGap != 30*time.Second {
		t.Errorf("no requests: %+v, want 0 and the whole window as the longest gap", w)
	}
}

func TestHeld(t *testing.T) {
	reqs := []faults.Request{
		req(0, "a", "list", ""), // held by a Stall rule: not done, not forwarded, no status
		{Resource: "configmaps", Namespace: "a", Verb: "watch", Tried: []int{0}, Backend: 0, Status: 200}, // a forwarded watch
		{Resource: "configmaps", Namespace: "a", Verb: "list", Done: true, Status: 429, Fault: "rule 1"},  // answered
		req(0, "b", "list", ""),
	}
	if n := Held(reqs, "a"); n != 1 {
		t.Errorf("Held = %d, want 1", n)
	}
}

func TestBound(t *testing.T) {
	if b := Bound(Wire{Requests: 30}, time.Minute); b != 30+Slack {
		t.Errorf("Bound(stock 30) = %d, want stock's + %d", b, Slack)
	}
	if b := Bound(Wire{Requests: 1}, time.Minute); b != 12+Slack {
		t.Errorf("Bound(stock stuck at 1) = %d, want one per 5 s + %d", b, Slack)
	}
}

func TestCheck(t *testing.T) {
	d := time.Minute
	ok := func(path string, n int) Result {
		return Result{Fault: "f", Path: path, Recovered: true, During: Wire{Requests: n}}
	}
	results := []Result{
		{Fault: "f", Path: PathStock, During: Wire{Requests: 20, Busiest10sAfterFirst: 50}, Backward: []string{"cm-0: 2 -> 1"}}, // stock: not judged
		ok(PathDropIn, 20+Slack),
		ok(PathFactory, 20+Slack+1),
		{Fault: "f", Path: PathReflector, During: Wire{Requests: 3, Busiest10sAfterFirst: LoopBound + 1}, Backward: []string{"cm-1: 9 -> 8"}},
	}
	v := Check(results, d)
	joined := strings.Join(v, "\n")
	for _, want := range []string{
		"f, NewSharedInformerFactory: 27 requests during the fault, more than the bound 26 (stock 20)",
		"f, reflector.New: went back in time: [cm-1: 9 -> 8]",
		"f, reflector.New: did not converge",
		"f, reflector.New: 10 requests within 10 s after the first 10 s",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("violations lack %q:\n%s", want, joined)
		}
	}
	if len(v) != 4 || strings.Contains(joined, PathStock) || strings.Contains(joined, PathDropIn) {
		t.Errorf("want exactly the 4 violations above (none for stock or the drop-in informer at the bound):\n%s", joined)
	}
}

func TestSplice(t *testing.T) {
	doc := []byte("# Title\n\nintro\n\n" + BeginMarker + "\nold\n" + EndMarker + "\n\nafter\n")
	out, err := Splice(doc, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Title\n\nintro\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\n\nafter\n"; string(out) != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", out, want)
	}
	out, err = Splice([]byte("# Title\n\n"), "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Title\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\n"; string(out) != want {
		t.Errorf("Splice without markers:\n%s\nwant:\n%s", out, want)
	}
	if _, err := Splice([]byte(EndMarker+"\n"+BeginMarker), "x"); !errors.Is(err, ErrNoMarkers) {
		t.Errorf("markers out of order: %v, want ErrNoMarkers", err)
	}
}

func TestRender(t *testing.T) {
	rep := &Report{Server: "v1.37.2", Duration: time.Minute, Recovery: time.Minute, Objects: 5, Faults: []FaultReport{{
		Fault: Catalogue[0],
		Results: []Result{
			{Path: PathStock, During: Wire{Requests: 30, Lists: 10, StreamingLists: 10, Watches: 10}, Recovered: true, RecoveredAfter: 2 * time.Second, Synced: true},
			{Path: PathReflector, During: Wire{Requests: 3}, Backward: []string{"cm-1: 9 -> 8"}},
		},
		Violations: []string{"empty-watch, reflector.New: went back in time"},
	}}}
	md := Render(rep, "make soak-faults")
	for _, want := range []string{
		"    make soak-faults\n",
		"### empty-watch\n",
		"| stock informer | 30 (10 / 10 / 10) | 0 | 0.0 | 0 | 0.0 s | 0 | yes | 2.0 s, 0 requests | never |",
		"| reflector.New | 3 (0 / 0 / 0) |",
		"no (not within 60.0 s; 0 requests) | once (cm-1: 9 -> 8) |",
		"- empty-watch, reflector.New: went back in time\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Render lacks %q:\n%s", want, md)
		}
	}
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Catalogue {
		if seen[f.ID] || f.ID == "" || f.What == "" || f.Source == "" || f.Arm == nil || (f.Tick != nil) != (f.Every > 0) {
			t.Errorf("fault %q: duplicate or incomplete", f.ID)
		}
		seen[f.ID] = true
	}
	got, unknown := ByID([]string{"never-answers", "nope", "empty-watch"})
	if len(got) != 2 || got[0].ID != "empty-watch" || got[1].ID != "never-answers" || len(unknown) != 1 || unknown[0] != "nope" {
		t.Errorf("ByID: %v, unknown %v", got, unknown)
	}
}

func TestPathsByID(t *testing.T) {
	if ids := PathIDs(); len(ids) != len(Paths) {
		t.Fatalf("PathIDs %v: want one per path of %v", ids, Paths)
	}
	got, unknown := PathsByID([]string{"reflector", "nope", "stock", "stock"})
	if !slices.Equal(got, []string{PathStock, PathReflector}) || !slices.Equal(unknown, []string{"nope"}) {
		t.Errorf("PathsByID: %v, unknown %v; want [%s %s] in Paths' order, unknown [nope]", got, unknown, PathStock, PathReflector)
	}
	all, unknown := PathsByID(PathIDs())
	if !slices.Equal(all, Paths) || len(unknown) != 0 {
		t.Errorf("PathsByID(PathIDs()) = %v, unknown %v; want %v", all, unknown, Paths)
	}
}

func TestRenderPathSubset(t *testing.T) {
	rep := &Report{Server: "v1.37.2", Duration: time.Minute, Recovery: time.Minute, Objects: 5}
	if md := Render(rep, "x"); strings.Contains(md, "This run ran only") {
		t.Errorf("every path ran, yet Render names a subset:\n%s", md)
	}
	rep.Paths = []string{PathDropIn, PathReflector}
	if md := Render(rep, "x"); !strings.Contains(md, "This run ran only: drop-in informer, reflector.New. Without stock, the request bound was not checked.") {
		t.Errorf("Render does not name the subset without stock:\n%s", md)
	}
}
