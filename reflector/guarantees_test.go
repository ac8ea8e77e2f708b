package reflector

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// A server (or proxy) that answers every watch with 410 used to get
// list+watch pairs as fast as it could answer (52,259 lists in 1s against an
// in-process fake): a 410 went straight to a relist and a list straight to a
// watch. A relist that follows the previous fill with no watch event in
// between now waits a growing backoff. The fake clock makes it exact.
func TestEveryWatchGoneBacksOffBetweenRelists(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{GoneOnEveryWatch: true}, "10", testfake.ConfigMap("a", "5"))
	relistsBackOff(t, srv, func() int { return srv.Count("list") })
}

// relistsBackOff runs a reflector over c with a fake clock and a 100ms
// initial backoff and steps the clock: each relist (lists() counts them)
// must wait its backoff, Initial first and then twice that.
func relistsBackOff(t *testing.T, c Client, lists func() int) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	o := fastOptions(&testfake.Recorder{})
	o.knobs.Clock = clk
	o.knobs.Backoff = policy.Backoff{Initial: 100 * time.Millisecond, Max: time.Minute, Jitter: -1}
	r := newR(c, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	waitBackingOff := func(want int) {
		t.Helper()
		testfake.WaitFor(t, "backing off", func() bool { return r.State().Phase == PhaseBackingOff && clk.HasWaiters() })
		if n := lists(); n != want {
			t.Fatalf("%d lists, want %d: a relist went out without a backoff", n, want)
		}
	}
	waitBackingOff(1)
	clk.Step(100 * time.Millisecond) // first delay: Initial
	waitBackingOff(2)
	clk.Step(150 * time.Millisecond) // less than the grown delay (200ms): nothing is sent
	waitBackingOff(2)
	clk.Step(50 * time.Millisecond)
	waitBackingOff(3)
}

// A watch event older than the object the store holds (a watch cache
// re-delivering history, kubernetes/kubernetes#73845) is never applied; the
// reflector re-syncs with a list not older than the store.
func TestEventOlderThanStoredObjectIsNotApplied(t *testing.T) {
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		if n == 0 {
			return cmList("12", testfake.ConfigMap("a", "10")), nil
		}
		return cmList("13", testfake.ConfigMap("a", "10")), nil
	}}
	rec := &testfake.Recorder{}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, w := startWatching(t, fc, store, fastOptions(rec))
	w.Modify(testfake.ConfigMap("a", "5"))
	watcherOf(t, fc, 1)
	obj, _, _ := store.GetByKey("ns/a")
	if got := obj.(*corev1.ConfigMap).ResourceVersion; got != "10" {
		t.Fatalf("store holds a at %s; the older event was applied", got)
	}
	lists := fc.Lists()
	if len(lists) != 2 || lists[1].ResourceVersion != "12" {
		t.Fatalf("lists %+v; want a relist NotOlderThan(12)", lists)
	}
	if got := rec.Labels(testfake.Relist); !slices.Equal(got, []string{"event-older-than-store"}) {
		t.Fatalf("relists %v", got)
	}
	if rv := r.LastSyncResourceVersion(); rv != "13" {
		t.Fatalf("resourceVersion %s", rv)
	}
}

// A server's Retry-After is capped: "Retry-After: 3600" from a proxy does
// not park the reflector for an hour.
func TestRetryAfterIsCapped(t *testing.T) {
	r := New(&fakeClient{}, nil, cache.NewStore(cache.MetaNamespaceKeyFunc), Options{})
	if d, limit := r.delay(time.Hour), (policy.Policy{}).WithDefaults().MaxRetryAfter; d > limit {
		t.Fatalf("delay for Retry-After 1h = %v", d)
	}
}

// Watches that end at once with no event, from a resourceVersion whose
// history is gone but which is never answered 410
// (kubernetes/kubernetes#104171), make the reflector relist NotOlderThan
// that resourceVersion after MaxShortWatches restarts, not re-watch forever.
func TestRepeatedShortWatchesRelist(t *testing.T) {
	fc := &fakeClient{
		ListFn: func(n int, _ metav1.ListOptions) (runtime.Object, error) {
			return cmList(strconv.Itoa(10+n), testfake.ConfigMap("a", "5")), nil
		},
		WatchFn: func(int, metav1.ListOptions) (watch.Interface, error) { return watch.NewEmptyWatch(), nil },
	}
	rec := &testfake.Recorder{}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(rec))
	run(t, r)
	testfake.WaitFor(t, "a relist", func() bool { return len(fc.Lists()) >= 2 })
	if l := fc.Lists()[1]; l.ResourceVersion != "10" {
		t.Fatalf("relist %+v, want NotOlderThan(10)", l)
	}
	if w := len(fc.Watches()); w < 3 {
		t.Fatalf("%d watches before the relist, want MaxShortWatches+1 = 3", w)
	}
	if got := rec.Labels(testfake.Relist); len(got) == 0 || got[0] != "short-watch" {
		t.Fatalf("relists %v", got)
	}
}

// A server that re-delivers the same stale event on every watch after every
// relist is not hammered: the rejected event is not progress, so the relists
// back off (fake clock: the next relist waits Initial, then twice that).
func TestRepeatedStaleEventBacksOff(t *testing.T) {
	fc := &fakeClient{
		ListFn: func(n int, _ metav1.ListOptions) (runtime.Object, error) {
			return cmList("12", testfake.ConfigMap("a", "10")), nil
		},
		WatchFn: func(int, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewRaceFreeFake()
			w.Modify(testfake.ConfigMap("a", "5"))
			return w, nil
		},
	}
	relistsBackOff(t, fc, func() int { return len(fc.Lists()) })
}

// A server that re-delivers an older event after newer ones, on every watch
// after every relist (kubernetes/kubernetes#73845; the persistent-fault
// soak's "older-event-redelivered"): each round makes progress, then
// regresses. The progress does not start the re-syncs' backoff afresh: the
// relists still back off, Initial, then twice that.
func TestStaleEventAfterProgressStillBacksOff(t *testing.T) {
	fc := &fakeClient{}
	fc.ListFn = func(n int, _ metav1.ListOptions) (runtime.Object, error) {
		rv := 100 + 10*n
		return cmList(strconv.Itoa(rv), testfake.ConfigMap("a", strconv.Itoa(rv-1))), nil
	}
	fc.WatchFn = func(_ int, o metav1.ListOptions) (watch.Interface, error) {
		from, err := strconv.Atoi(o.ResourceVersion)
		if err != nil {
			return nil, err
		}
		w := watch.NewRaceFreeFake()
		w.Add(testfake.ConfigMap("b", strconv.Itoa(from+1))) // progress
		w.Modify(testfake.ConfigMap("a", "5"))               // then older than what is held
		return w, nil
	}
	relistsBackOff(t, fc, func() int { return len(fc.Lists()) })
}

// A server that answers every list with 429 (no Retry-After) while
// reflector.New fills its store from the watch cache by default (the
// limit=1 read, Lister.CurrentResourceVersion, then a list): nothing is sent
// while the reflector backs off, and each step of the clock past the
// (doubling) delay lets exactly one request through, never a loop.
func TestEveryListTooManyRequestsBacksOff(t *testing.T) {
	var lists atomic.Int32
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) {
		lists.Add(1)
		return nil, apierrors.NewTooManyRequests("slow down", 0)
	}}
	clk := clocktesting.NewFakeClock(time.Now())
	o := fastOptions(&testfake.Recorder{})
	o.PaginateLists = false // the default: the current-resourceVersion read first
	o.knobs.Clock = clk
	o.knobs.Backoff = policy.Backoff{Initial: 100 * time.Millisecond, Max: time.Minute, Jitter: -1}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	backingOff := func() int32 {
		t.Helper()
		testfake.WaitFor(t, "backing off", func() bool { return r.State().Phase == PhaseBackingOff && clk.HasWaiters() })
		return lists.Load()
	}
	first := backingOff()
	if first != 1 {
		t.Fatalf("%d requests before the first backoff, want 1 (the limit=1 read)", first)
	}
	prev := first
	delay := 100 * time.Millisecond
	for i := range 4 {
		clk.Step(delay / 2) // less than the delay: nothing is sent
		if n := backingOff(); n != prev {
			t.Fatalf("step %d: %d requests during a %v backoff (had %d)", i, n, delay, prev)
		}
		clk.Step(delay - delay/2)
		n := backingOff()
		if n-prev != 1 {
			t.Fatalf("step %d: %d requests after the %v backoff, want 1 (the list retried once)", i, n-prev, delay)
		}
		prev, delay = n, 2*delay
	}
}
