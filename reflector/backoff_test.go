package reflector

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/vocab"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

func TestBackoffDelayNeverExceedsMax(t *testing.T) {
	o := knobs.WithReflector(Options{}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Second, Max: 4 * time.Second}})
	r := New(&fakeClient{}, nil, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	sawMax := false
	for i := 0; i < 50; i++ {
		d := r.delay(0)
		if d > 4*time.Second {
			t.Fatalf("delay #%d = %v; Backoff.Max is 4s (jitter included)", i, d)
		}
		sawMax = sawMax || d == 4*time.Second
	}
	if !sawMax {
		t.Fatal("50 consecutive failures never reached Backoff.Max")
	}
	if d := r.delay(7 * time.Second); d != 7*time.Second {
		t.Fatalf("delay with Retry-After 7s = %v; the server's Retry-After wins", d)
	}
}

// A client-go watch stream cut by the network ends with this ERROR event
// (rest.Request.Watch's ClientWatchDecoding reporter): what faults.DropWatches
// produces against a real apiserver.
func droppedStream() runtime.Object {
	return apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding").
		AsObject(errors.New("unable to decode an event from the watch stream: stream error: stream ID 3; INTERNAL_ERROR"))
}

// Observed against a real HA pair (e2e/reflector): after a few dropped
// watches within Backoff.ResetAfter, each of which had delivered events, the
// reflector waited the grown delay (up to Max, 30s by default) before
// watching again. A watch that delivered an event proves the server healthy:
// the next cut is retried after Initial.
func TestWatchThatDeliveredEventsIsRetriedWithoutGrownBackoff(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("10")}
	o := fastOptions(&testfake.Recorder{})
	o.knobs.Backoff = policy.Backoff{Initial: 20 * time.Millisecond, Max: time.Minute}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	for i := 0; i < 12; i++ { // earlier failures: the next delay would be ~1 minute
		r.delay(0)
	}
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Add(testfake.ConfigMap("x", "11"))
	w.Error(droppedStream())
	start := time.Now()
	watcherOf(t, fc, 1)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a watch that had delivered events was retried after %v; want about Backoff.Initial (20ms)", d)
	}
	if got := fc.Watches()[1].ResourceVersion; got != "11" {
		t.Fatalf("retried from %q; want 11", got)
	}
	if n := len(fc.Lists()); n != 1 {
		t.Fatalf("lists = %d; a dropped stream must not relist", n)
	}
}

func TestWatchWithoutEventsKeepsGrowingBackoff(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("10")}
	o := fastOptions(&testfake.Recorder{})
	o.knobs.Backoff = policy.Backoff{Initial: 20 * time.Millisecond, Max: time.Minute}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	for i := 0; i < 12; i++ {
		r.delay(0)
	}
	run(t, r)
	watcherOf(t, fc, 0).Error(droppedStream()) // cut before delivering anything
	// The grown backoff (>= 30s with jitter) applies: no second watch soon.
	time.Sleep(300 * time.Millisecond) // a bounded observation window, not synchronisation
	if n := len(fc.Watches()); n != 1 {
		t.Fatalf("watches = %d within 300ms; a failure without progress must back off with the grown delay", n)
	}
}

// Under a persistent 429 (a proxy answering "Retry-After: -1", the soak's
// 429-retry-after-minus-1), each list call spends its own retries
// (Lister.Policy.Backoff: 6 requests over about 6s); the reflector's next
// call came after its own short delay (1-3s), so the calls' bursts followed
// each other: 10 requests in one 10s window. A call that exhausted its
// retries is followed by at least the call backoff's Max.
func TestListCallThatExhaustedItsRetriesWaitsAtLeastItsBackoffMax(t *testing.T) {
	r := New(&fakeClient{}, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), Options{})
	floor := policy.Policy{}.WithDefaults().Backoff.Max
	exhausted := &lister.Error{Reason: "retries-exhausted", Class: vocab.Throttled, Attempt: 6,
		Err: apierrors.NewTooManyRequests("slow down", 0)}
	for i := 0; i < 3; i++ {
		from := listing{query: lister.MostRecent()}
		st, w := r.listFailed(context.Background(), from, lister.MostRecent(), exhausted)
		if err := checkTransition(from, st, w); err != nil {
			t.Fatalf("failure %d: %v", i+1, err)
		}
		b, ok := st.(backingOff)
		if !ok {
			t.Fatalf("after an exhausted list call: state %T; want backingOff", st)
		}
		if b.delay < floor {
			t.Fatalf("failure %d: delay %v after a list call that exhausted its retries; want at least Lister.Policy.Backoff.Max (%v)", i+1, b.delay, floor)
		}
	}
	// A single failed request is not a spent budget: the reflector's own
	// backoff applies (800ms, jittered, on the first failure).
	r = New(&fakeClient{}, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), Options{})
	st, _ := r.listFailed(context.Background(), listing{query: lister.MostRecent()}, lister.MostRecent(),
		apierrors.NewTooManyRequests("slow down", 0))
	if b, ok := st.(backingOff); !ok || b.delay >= floor {
		t.Fatalf("after one throttled request: %#v; want the reflector's own first delay, below %v", st, floor)
	}
}
