package modeltest

import (
	"slices"
	"testing"
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
