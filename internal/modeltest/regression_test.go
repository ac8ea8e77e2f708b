package modeltest

import (
	"net/http"
	"slices"
	"testing"

	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// regressions are histories that once broke an invariant, most of them
// shrunk by TestModel (paste its "minimal history" output here). Each is
// played with every client; steadywatch's must break nothing, and stock
// client-go's violations are logged.
var regressions = []history{
	{
		// A watch that re-delivers history (Faults.ReplayWatchEvents) sends
		// the ADDED and MODIFIED of b before its DELETED: b must not
		// reappear from events older than the deletion already applied.
		name: "deleted object reappears from a re-delivered older event", namespace: "", selector: "",
		steps: []step{
			start(), set("a", "b", "blue"), set("a", "b", "green"), del("a", "b"),
			wait(), faults("replay=3"), cut(), wait(),
		},
	},
	{
		// The same, shrunk by TestModel: b deleted, then a watch from the
		// deletion's resourceVersion re-delivers its ADDED.
		name: "stream 1 history 74, shrunk: dropin reappeared", namespace: "", selector: "",
		steps: []step{
			set("a", "y", "blue"), del("a", "y"), faults("replay=3"), cut(),
			wait(),
		},
	},
	{
		// Re-delivered older events on every watch: reflector.New relists
		// and watches again without a delay (the stale events counted as
		// progress), thousands of requests a second.
		name: "stream 1 history 222, shrunk: reflector hot-loop", namespace: "", selector: "",
		steps: []step{
			set("a", "y", "blue"), compact(), faults("replay=3,stale"), cut(),
			set("a", "y", "green"), wait(),
		},
	},
	{
		// reflector.New with Options.Lister.LabelSelector: an object
		// outside the selector arrives on the watch.
		name: "stream 1 history 0, shrunk: reflector outside-selector", namespace: "", selector: "tier=blue",
		steps: []step{
			del("a", "x"), set("a", "x", "green"), advance(1),
		},
	},
	{
		// A server that answers every watch with a 410 ERROR event:
		// client-go's streaming list (watchList) retries a 410 at once,
		// without backoff, so an informer over it loops.
		name: "410 on every watch, held for 2s", namespace: "", selector: "",
		steps: []step{
			faults("gone-watch"), cut(), wait(), wait(),
			wait(), wait(), wait(), wait(),
			wait(), wait(),
		},
	},
	{
		name: "stream 1 history 61, shrunk: reflector requests", namespace: "", selector: "",
		steps: []step{
			set("b", "x", "blue"), cut(), faults("gone-watch,replay=2"), wait(),
		},
	},
	{
		// A re-delivered older event, then a 410 on the relist: the relist
		// waits a backoff delay, and its 410 is followed by one MostRecent
		// list (no limit=1 read and retry at a newer resourceVersion).
		name: "stream 1 history 2, shrunk: reflector requests", namespace: "", selector: "",
		steps: []step{
			set("a", "y", "blue"), faults("replay=1,gone-list"), cut(), wait(),
		},
	},
	{
		// A list answered at resourceVersion "0" (no real apiserver does;
		// any server's answer is untrusted input): reflector.New watches
		// from "0", and after the watch is cut watches from "0" again,
		// whose synthetic ADDED events never delete a/y: it is held for
		// ever.
		name: "list at resourceVersion 0, then a cut watch", namespace: "", selector: "", fromZero: true,
		steps: []step{
			start(), set("a", "y", "blue"), faults("gone-watch"), cut(),
			set("b", "y", "green"), set("b", "x", "green"), del("a", "y"),
		},
	},
	{
		// A relist after a compacted watch, while the server deletes an
		// object the store holds from an older version: the relist's
		// deletion must never take away a version the server has not
		// ended.
		name: "stream 1 history 908, shrunk: reflector back-in-time", namespace: "a", selector: "tier=blue",
		steps: []step{
			set("b", "z", "green"), set("b", "y", "green"), set("a", "y", "blue"), start(), wait(), compact(), set("a", "z", "blue"), set("a", "y", "blue"),
			bookmark(), bookmark(), wait(), cut(), advance(1), set("a", "z", "blue"), set("a", "x", "blue"), del("a", "y"), compact(), del("a", "z"), wait(), wait(),
			set("a", "z", "blue"), del("b", "y"), set("b", "y", "green"), bookmark(), del("b", "z"), wait(), del("b", "z"), set("a", "z", "green"),
		},
	},
}

func TestRegressions(t *testing.T) {
	for _, h := range regressions {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			res := play(h, allClients, nil)
			for _, v := range res.violations {
				if v.client == clientStock {
					t.Logf("stock client-go: %s", v)
					continue
				}
				t.Errorf("%s", v)
			}
			if !slices.Contains(allClients, clientStock) {
				t.Fatal("stock client-go not played")
			}
		})
	}
}

// TestRelistDuringWrite forces the interleaving of the shrunk history
// "stream 1 history 908": a client's server has applied a deletion, the
// other servers have not yet, and the client relists at that moment (its
// watch ended and its resourceVersion is compacted). The relist is served
// after the deletion and no longer holds the object: deleting it is right,
// and the checker must know the server ended that version.
func TestRelistDuringWrite(t *testing.T) {
	for _, c := range []string{clientReflector, clientWire} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			r := newRun(history{namespace: "a", selector: "tier=blue"}, []string{c})
			defer r.stop()
			r.start()
			for _, s := range []step{set("a", "z", "blue"), set("a", "y", "blue"), wait()} {
				if err := r.apply(s); err != nil {
					t.Fatal(err)
				}
			}
			chk := r.checks[c]
			srv := r.servers[c]
			// A watch ended after events resumes at once; the next one,
			// ended without any, waits a backoff on the fake clock, which
			// moves only while the run waits: the deletion reaches no watch.
			srv.Close()
			if !r.waitUntil(func() bool { return srv.Watches() > 0 }, convergeBound) {
				t.Fatalf("%s did not watch again", c)
			}
			srv.Close()
			chk.mu.Lock()
			before := chk.relisted.deleted
			chk.mu.Unlock()
			r.written = func(client string) {
				if client != c {
					return
				}
				// The watch resumes from before the deletion, compacted
				// now: the client relists, served after the deletion.
				if err := srv.Compact(""); err != nil {
					t.Error(err)
				}
				gone := func() bool { _, held := chk.snapshot()["a/z"]; return !held }
				if !r.waitUntil(gone, convergeBound) {
					t.Errorf("%s still holds a/z %v after its server deleted it", c, convergeBound)
				}
			}
			r.step.Store(1)
			if err := r.apply(del("a", "z")); err != nil {
				t.Fatal(err)
			}
			r.written = nil
			chk.mu.Lock()
			deleted := chk.relisted.deleted - before
			chk.mu.Unlock()
			if deleted != 1 {
				t.Fatalf("%s: a relist deleted %d objects, want 1 (a/z, by a list served after its deletion)", c, deleted)
			}
			deletedAt := srv.ResourceVersion()
			lists := slices.DeleteFunc(srv.Requests(), func(q steadywatchtest.Request) bool { return q.Verb != "list" || q.Code != http.StatusOK })
			if last := lists[len(lists)-1].ResourceVersion; last != deletedAt {
				t.Fatalf("%s: the relist was served at %s, not at the deletion's resourceVersion %s", c, last, deletedAt)
			}
			for _, v := range chk.found() {
				t.Errorf("%s", v)
			}
		})
	}
}
