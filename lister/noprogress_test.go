package lister

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// A server that answers every watch with 410 Expired: client-go's streaming
// list (tools/cache/reflector.go, watchList) retries a 410 at once, without
// a delay. Through the drop-in ListerWatcher the attempts are spaced by a
// growing, jittered backoff (800ms doubling, +/-50%), and only the first
// sends the limit=1 count list beside it.
func TestStreamingListAnswered410EveryTimeBacksOff(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Skip("WatchListClient is off in this client-go; the streaming path is not exercised")
	}
	c := newServer(t, steadywatchtest.Faults{GoneOnEveryWatch: true}, testfake.ConfigMap("a", ""))
	rec := &countingRecorder{}
	tc := &timedWatches{Client: c}
	lw := NewListerWatcher(tc, Options{Server: staticServer(capability.Yes, capability.Yes), Metrics: rec})
	_, _ = runClientGoReflector(t, lw)

	// The measurement window: the attempts of 2.5s are counted (without the
	// backoff, client-go sends thousands).
	const window = 2500 * time.Millisecond
	time.Sleep(window)
	var streams, counts int
	for _, r := range c.Requests() {
		switch {
		case r.Verb == "watch":
			streams++
		case r.Verb == "list" && r.Options.Limit == 1:
			counts++
		}
	}
	// Attempts at 0, >=0.4s, >=1.2s, >=2.8s: at most 3 in the window (4
	// allows for a request in flight when the window ends).
	if streams < 2 || streams > 4 {
		t.Fatalf("%d streaming-list attempts in %v, want 2-4 (a growing backoff between them)", streams, window)
	}
	if counts != 1 {
		t.Errorf("%d count lists, want 1 (none on a retry after a failed attempt)", counts)
	}
	tc.mu.Lock()
	at := slices.Clone(tc.at)
	tc.mu.Unlock()
	for i := 2; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < 400*time.Millisecond {
			t.Errorf("attempt %d came %v after the one before, want >= 400ms", i+1, d)
		}
	}
	rec.mu.Lock()
	delayed := slices.Contains(rec.fallbacks, "no-progress-backoff")
	rec.mu.Unlock()
	if !delayed {
		t.Errorf("no %s fallback counted; got %v", "no-progress-backoff", rec.fallbacks)
	}
}

// timedWatches notes when each watch is sent.
type timedWatches struct {
	Client
	mu sync.Mutex
	at []time.Time
}

func (c *timedWatches) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	return c.Client.Watch(ctx, o)
}

func goneEvent() watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}}
}

// drainWatch reads w until it closes.
func drainWatch(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var evs []watch.Event
	for {
		ev, ok := recv(t, w, 5*time.Second)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

// Progress resets the backoff: a watch that delivered an event and then
// ended with 410 (a genuine expiry on a long-running watch) does not delay
// the next attempt; a streaming list answered 410 before anything does,
// and its retry goes without the count list; a completed streaming list
// resets the delay again.
func TestNoProgressBackoffOnlyAfterAttemptsWithoutProgress(t *testing.T) {
	var script []func(metav1.ListOptions) []watch.Event
	s := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){page("20", "", "a")}}
	s.watchFn = func(o metav1.ListOptions) (watch.Interface, error) {
		next := script[0]
		script = script[1:]
		return testfake.NewWatch(next(o), true), nil
	}
	rec := &countingRecorder{}
	lw := NewListerWatcher(s, Options{Server: staticServer(capability.Yes, capability.Yes), Metrics: rec, InitialEventsTimeout: time.Second})
	ctx := context.Background()
	streaming := metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	plain := metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true}
	open := func(o metav1.ListOptions) (time.Duration, []watch.Event) {
		t.Helper()
		start := time.Now()
		w, err := lw.WatchWithContext(ctx, o)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		return took, drainWatch(t, w)
	}
	delayed := lw.lw.WatchDelayed

	// A long-running plain watch: an event, then 410.
	script = append(script, func(metav1.ListOptions) []watch.Event {
		return []watch.Event{{Type: watch.Modified, Object: testfake.ConfigMap("a", "11")}, goneEvent()}
	})
	if _, evs := open(plain); len(evs) != 2 || evs[1].Type != watch.Error {
		t.Fatalf("events %v", evs)
	}
	if delayed() {
		t.Fatal("a watch that delivered an event delays the next attempt")
	}
	// The streaming relist after it: not delayed, with its count list; it
	// is answered 410 before anything.
	script = append(script, func(metav1.ListOptions) []watch.Event { return []watch.Event{goneEvent()} })
	if took, _ := open(streaming); took > 300*time.Millisecond {
		t.Fatalf("the first relist after a genuine 410 waited %v", took)
	}
	countLists := func() (n int) {
		for _, o := range s.calls() {
			if o.Limit == 1 {
				n++
			}
		}
		return n
	}
	// The count list runs beside the stream: wait for it.
	for deadline := time.Now().Add(5 * time.Second); countLists() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no count list beside the first streaming list")
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
	if !delayed() {
		t.Fatal("a streaming list answered 410 before anything does not delay the next attempt")
	}
	// Its retry waits (800ms -50% at least) and sends no count list; the
	// server streams this time.
	script = append(script, func(metav1.ListOptions) []watch.Event {
		return []watch.Event{{Type: watch.Added, Object: testfake.ConfigMap("a", "11")}, {Type: watch.Bookmark, Object: endBookmark("12")}}
	})
	if took, evs := open(streaming); took < 400*time.Millisecond || len(evs) != 2 {
		t.Fatalf("the retry waited %v (want >= 400ms) and delivered %d events", took, len(evs))
	}

	rec.mu.Lock()
	got := slices.Clone(rec.fallbacks)
	rec.mu.Unlock()
	if !slices.Contains(got, "no-progress-backoff") {
		t.Fatalf("the delayed attempt was not counted: %v", got)
	}
	// The completed streaming list was progress (it then closed without
	// anything more, which changes nothing).
	if delayed() {
		t.Fatal("a completed streaming list did not reset the backoff")
	}
	// A plain watch that closes at once with nothing: the next one waits.
	script = append(script, func(metav1.ListOptions) []watch.Event { return nil })
	open(plain)
	if !delayed() {
		t.Fatal("an empty watch does not delay the next attempt")
	}
	// A successful list resets it.
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if delayed() {
		t.Fatal("a successful list did not reset the backoff")
	}
	if n := countLists(); n != 1 {
		t.Fatalf("%d count lists, want 1 (none on the retry)", n)
	}
}
