package steadywatchtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// TestWatchSemantics walks the watch table of Kubernetes API Concepts,
// "Semantics for watch", and streaming lists, on the store of history().
// After the listed first events, an update of c must arrive as the next event.
func TestWatchSemantics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      metav1.ListOptions
		served string
		first  []string
	}{
		{"most recent: state then changes", metav1.ListOptions{}, "WatchState", []string{"ADDED a@4", "ADDED c@3"}},
		{"any: state then changes", metav1.ListOptions{ResourceVersion: "0"}, "WatchState", []string{"ADDED a@4", "ADDED c@3"}},
		{"exact: changes after the resourceVersion", metav1.ListOptions{ResourceVersion: "2"}, "WatchFrom", []string{"ADDED c@3", "MODIFIED a@4", "DELETED b@5"}},
		{"exact at the newest: nothing before the update", metav1.ListOptions{ResourceVersion: "5"}, "WatchFrom", nil},
		{"streaming list ends with the annotated bookmark", streaming(""), "StreamingList", []string{"ADDED a@4", "ADDED c@3", "BOOKMARK @5 end"}},
		{"streaming list not older than 3", streaming("3"), "StreamingList", []string{"ADDED a@4", "ADDED c@3", "BOOKMARK @5 end"}},
		{"streaming list without allowWatchBookmarks has no bookmark", metav1.ListOptions{ResourceVersionMatch: nop, SendInitialEvents: ptr(true)}, "StreamingList", []string{"ADDED a@4", "ADDED c@3"}},
		{"sendInitialEvents=false from the newest: no state", metav1.ListOptions{ResourceVersionMatch: nop, SendInitialEvents: ptr(false)}, "WatchFrom", nil},
		{"label selector", metav1.ListOptions{ResourceVersion: "0", LabelSelector: "app=x", FieldSelector: "metadata.name=c"}, "WatchState", []string{"ADDED c@3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := history(t, steadywatchtest.Options{})
			w := watchOf(t, s, tc.o)
			got := take(t, w, len(tc.first))
			if strings.Join(got, ",") != strings.Join(tc.first, ",") {
				t.Fatalf("first events %q, want %q", got, tc.first)
			}
			rv := touch(t, s, "c")
			if got, want := next(t, w), "MODIFIED c@"+rv; got != want {
				t.Errorf("after the update: %q, want %q", got, want)
			}
			if r := s.Requests(); len(r) != 1 || r[0].Served != tc.served || r[0].Code != 200 {
				t.Errorf("request log %+v, want one %s answered 200", r, tc.served)
			}
		})
	}
}

func TestWatchValidationAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    metav1.ListOptions
		code int32
		msg  string
	}{
		{"match without sendInitialEvents", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: nop}, 422, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
		{"sendInitialEvents with Exact", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: ex, SendInitialEvents: ptr(true)}, 422, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
		{"streaming list too large", streaming("9"), 504, "Too large resource version: 9, current: 5"},
		{"garbage resourceVersion", metav1.ListOptions{ResourceVersion: "x"}, 400, "invalid resource version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := history(t, steadywatchtest.Options{})
			w, err := s.Watch(context.Background(), tc.o)
			if w != nil {
				w.Stop()
			}
			if got := code(err); got != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("answer %d %v, want %d containing %q", got, err, tc.code, tc.msg)
			}
			if n := s.Watches(); n != 0 {
				t.Errorf("%d watches open after a refused one", n)
			}
		})
	}
}

// TestWatchFromCompactedIsGoneInsideTheStream: the watch cache answers a
// compacted resourceVersion with HTTP 200 and one ERROR event (410 Expired).
func TestWatchFromCompactedIsGoneInsideTheStream(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	if err := s.Compact("4"); err != nil {
		t.Fatal(err)
	}
	w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "3"})
	if got := take(t, w, 2); strings.Join(got, ",") != "ERROR 410 Expired,CLOSED" {
		t.Fatalf("events %q, want one 410 ERROR then the end", got)
	}
	if r := s.Requests(); r[0].Code != 200 {
		t.Errorf("logged code %d, want 200 (the error is inside the stream)", r[0].Code)
	}
	// From the compaction itself: still served.
	w = watchOf(t, s, metav1.ListOptions{ResourceVersion: "4"})
	if got := next(t, w); got != "DELETED b@5" {
		t.Errorf("watch from the compaction: %q, want DELETED b@5", got)
	}
}

// TestWatchSelectorTransitions: an object leaving a watch's selector is
// DELETED, one entering it ADDED, as the watch cache sends them.
func TestWatchSelectorTransitions(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5", LabelSelector: "app=x"})
	c, _ := s.Get("ns", "c")
	c.Labels["app"] = "z"
	if _, err := s.Update(c); err != nil {
		t.Fatal(err)
	}
	s.MustCreate(testfake.ConfigMap("d", "", testfake.Labels("app", "y"))) // never matches: no event
	c.Labels["app"] = "x"
	c.ResourceVersion = ""
	if _, err := s.Update(c); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "c"); err != nil {
		t.Fatal(err)
	}
	if got := take(t, w, 3); strings.Join(got, ",") != "DELETED c@6,ADDED c@8,DELETED c@9" {
		t.Errorf("events %q, want DELETED c@6,ADDED c@8,DELETED c@9", got)
	}
}

func TestNamespaceView(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	s.MustCreate(testfake.ConfigMap("z", "", testfake.InNamespace("other")))
	obj, err := s.InNamespace("other").List(context.Background(), metav1.ListOptions{})
	if err != nil || items(t, obj) != "z@6" {
		t.Fatalf("list in other: %v %q, want z@6", err, items(t, obj))
	}
	w, err := s.InNamespace("ns").Watch(context.Background(), metav1.ListOptions{ResourceVersion: "6"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.MustCreate(testfake.ConfigMap("y", "", testfake.InNamespace("other")))
	s.MustCreate(testfake.ConfigMap("x", ""))
	if got := next(t, w); got != "ADDED x@8" {
		t.Errorf("watch in ns: %q, want ADDED x@8 (y is in another namespace)", got)
	}
}

// TestWatchEnds: a watch ends on Stop, on its context, on timeoutSeconds and
// on Close, and unregisters (goleak in TestMain proves its goroutine ends).
func TestWatchEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    metav1.ListOptions
		end  func(s *cmServer, w watch.Interface, cancel context.CancelFunc)
	}{
		{"Stop", metav1.ListOptions{}, func(_ *cmServer, w watch.Interface, _ context.CancelFunc) { w.Stop() }},
		{"context", metav1.ListOptions{}, func(_ *cmServer, _ watch.Interface, cancel context.CancelFunc) { cancel() }},
		{"timeoutSeconds", metav1.ListOptions{TimeoutSeconds: ptr(int64(1))}, func(*cmServer, watch.Interface, context.CancelFunc) {}},
		{"Close", metav1.ListOptions{}, func(s *cmServer, _ watch.Interface, _ context.CancelFunc) { s.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := history(t, steadywatchtest.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := s.Watch(ctx, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			take(t, w, 2) // the state
			tc.end(s, w, cancel)
			deadline := time.After(5 * time.Second)
			for done := false; !done; {
				select {
				case _, ok := <-w.ResultChan():
					done = !ok
				case <-deadline:
					t.Fatal("watch still open 5s after its end")
				}
			}
			for deadline := time.Now().Add(5 * time.Second); s.Watches() != 0; {
				if time.Now().After(deadline) {
					t.Fatalf("%d watches registered after the end", s.Watches())
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

func TestBookmarks(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	with := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
	without := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5"})
	s.Bookmark()
	if got := next(t, with); got != "BOOKMARK @5" {
		t.Errorf("on demand: %q, want BOOKMARK @5", got)
	}
	rv := touch(t, s, "a")
	if got := next(t, without); got != "MODIFIED a@"+rv {
		t.Errorf("watch without allowWatchBookmarks: %q first, want the update", got)
	}

	p := history(t, steadywatchtest.Options{BookmarkInterval: 5 * time.Millisecond})
	w := watchOf(t, p, metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
	if got := take(t, w, 2); strings.Join(got, ",") != "BOOKMARK @5,BOOKMARK @5" {
		t.Errorf("periodic: %q, want two bookmarks", got)
	}
}

// TestConcurrentWritersAndWatchers: under -race, every watch sees every
// write once, in resourceVersion order, and lists stay consistent.
func TestConcurrentWritersAndWatchers(t *testing.T) {
	s := newCM(steadywatchtest.Options{})
	const writers, writes = 4, 50
	var ws []watch.Interface
	for range 3 {
		ws = append(ws, watchOf(t, s, metav1.ListOptions{ResourceVersion: "0"}))
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range writes {
				if _, err := s.Apply(testfake.ConfigMap(string(rune('a'+i)), "")); err != nil {
					t.Error(err)
				}
				if j%10 == 0 {
					if _, err := s.List(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 2}); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, w := range ws {
		var last int
		for n := 0; n < writers*writes; n++ {
			e := next(t, w)
			rv := 0
			if _, err := fmt.Sscan(e[strings.Index(e, "@")+1:], &rv); err != nil || rv <= last {
				t.Fatalf("watch %d event %d %q: resourceVersion not increasing after %d", i, n, e, last)
			}
			last = rv
		}
	}
	if got := s.Count("list"); got != writers*writes/10 {
		t.Errorf("%d lists logged, want %d", got, writers*writes/10)
	}
}

// TestAdvance: a jump of the shared revision counter (writes to other
// resources) shows in lists and bookmarks, sends no event, and the skipped
// resourceVersions read as the state before the jump.
func TestAdvance(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	w := watchOf(t, s, metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
	if got := s.Advance(4); got != "9" || s.ResourceVersion() != "9" {
		t.Fatalf("Advance(4) = %s, store at %s; want 9", got, s.ResourceVersion())
	}
	s.Bookmark()
	if got := next(t, w); got != "BOOKMARK @9" {
		t.Errorf("first after the jump: %q, want BOOKMARK @9 (no event)", got)
	}
	rv := touch(t, s, "c")
	if rv != "10" {
		t.Errorf("next write at %s, want 10", rv)
	}
	if got := next(t, w); got != "MODIFIED c@10" {
		t.Errorf("after the update: %q", got)
	}
	obj, err := s.List(context.Background(), metav1.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if got := items(t, obj); got != "a@4 c@3" {
		t.Errorf("Exact list at skipped 7: %q, want the state at 5 (a@4 c@3)", got)
	}
	from := watchOf(t, s, metav1.ListOptions{ResourceVersion: "6"})
	if got := next(t, from); got != "MODIFIED c@10" {
		t.Errorf("watch from skipped 6: %q first, want MODIFIED c@10", got)
	}
}
