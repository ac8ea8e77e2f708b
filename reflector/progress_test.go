package reflector

import (
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// No progress, no hurry: a server that ends every watch cleanly
// at once, having sent only a bookmark whose resourceVersion does not
// parse (which is rightly not adopted), made reflector.New watch again at
// once: 19-20 watches in 12s. A watch that adopts nothing is a failure for
// the backoff however it ends; after MaxShortWatches of them the reflector
// relists, after a backoff too. The fake clock makes it exact.
func TestWatchWithoutProgressBacksOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	fc := &fakeClient{
		ListFn: emptyAt("10"),
		WatchFn: func(int, metav1.ListOptions) (watch.Interface, error) {
			return testfake.NewWatch([]watch.Event{{Type: watch.Bookmark, Object: bookmark("abc", false)}}, true), nil
		},
	}
	o := fastOptions(&testfake.Recorder{})
	o.knobs.Clock = clk
	o.knobs.Backoff = policy.Backoff{Initial: 100 * time.Millisecond, Max: time.Minute, Jitter: -1}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	waitBackingOff := func(watches, lists int) {
		t.Helper()
		testfake.WaitFor(t, "backing off", func() bool { return r.State().Phase == PhaseBackingOff && clk.HasWaiters() })
		if w, l := len(fc.Watches()), len(fc.Lists()); w != watches || l != lists {
			t.Fatalf("%d watches and %d lists, want %d and %d: a request went out without a backoff", w, l, watches, lists)
		}
	}
	waitBackingOff(1, 1)
	clk.Step(100 * time.Millisecond) // Initial
	waitBackingOff(2, 1)
	clk.Step(150 * time.Millisecond) // less than the grown 200ms: nothing is sent
	waitBackingOff(2, 1)
	clk.Step(50 * time.Millisecond)
	waitBackingOff(3, 1) // the third watch without progress: a relist follows, after 400ms
	clk.Step(399 * time.Millisecond)
	waitBackingOff(3, 1)
	clk.Step(time.Millisecond)
	testfake.WaitFor(t, "the relist", func() bool { return len(fc.Lists()) == 2 })
}

// A completed streaming list that adopted a newer resourceVersion is
// progress: the backoff grown by earlier failures starts afresh.
func TestCompletedStreamingListResetsBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	fc := &fakeClient{ListFn: emptyAt("10")}
	o := fastOptions(&testfake.Recorder{})
	o.knobs.Clock = clk
	o.Lister.Server = capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes}})
	knobs.ListerOf(&o.Lister).DisableInitialEventsCount = true
	o.knobs.Backoff = policy.Backoff{Initial: 100 * time.Millisecond, Max: time.Hour, Jitter: -1}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	for range 10 { // earlier failures: the next delay would be 102.4s
		r.delay(0)
	}
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Add(testfake.ConfigMap("a", "11"))
	w.Action(watch.Bookmark, bookmark("12", true))
	testfake.WaitFor(t, "streamed", func() bool { return r.LastSyncResourceVersion() == "12" })
	w.Stop() // the watch after the stream ends at once, without progress
	testfake.WaitFor(t, "backing off", func() bool { return r.State().Phase == PhaseBackingOff && clk.HasWaiters() })
	clk.Step(100 * time.Millisecond) // Initial again
	watcherOf(t, fc, 1)
}
