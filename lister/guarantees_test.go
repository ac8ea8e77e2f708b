package lister

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

type answers = []func(metav1.ListOptions) (runtime.Object, error)

// A server that cycles its continue tokens (A, B, A) is caught at the
// repeat, with the pages handed over named in the error.
func TestRepeatedContinueTokenEndsTheList(t *testing.T) {
	for name, ans := range map[string]answers{
		"same token":   {page("9", "A", "a"), page("9", "A", "b")},
		"cycle A,B,A":  {page("9", "A", "a"), page("9", "B", "b"), page("9", "A", "c")},
		"first echoed": {page("9", "A", "a"), page("9", "B", "b"), page("9", "B", "c")},
	} {
		c := &scripted{t: t, answers: ans}
		handed := 0
		rec, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).ListPages(context.Background(), MostRecent().WithLimit(1), func(runtime.Object) error { handed++; return nil })
		var le *Error
		if !errors.Is(err, ErrBrokenPagination) || !errors.As(err, &le) || le.Reason != "continue-token-repeated" {
			t.Fatalf("%s: err %v", name, err)
		}
		if len(c.calls()) != len(ans) || rec.Pages != handed || handed != len(ans)-1 {
			t.Fatalf("%s: %d calls, %d pages handed, record %d", name, len(c.calls()), handed, rec.Pages)
		}
	}
}

// Rule 1's newer-resourceVersion probe is retried like any request when it
// meets a transient 429, instead of failing the whole list.
func TestNewerRVProbeRetriedOnTransientError(t *testing.T) {
	c := &scripted{t: t, answers: answers{
		fail(testfake.Gone()),                              // NotOlderThan(10)&limit=5: 410 (legacy server)
		fail(apierrors.NewTooManyRequests("slow down", 0)), // the probe: 429
		page("40", "", "p"),                                // the probe again
		page("40", "", "a"),                                // NotOlderThan(40)&limit=5
	}}
	_, rec, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), NotOlderThan("10").WithLimit(5))
	if err != nil {
		t.Fatal(err)
	}
	want := []fallback.ReasonCode{"newer-rv-probe-retry", "rule1-gone-retry-newer-rv"}
	if !slices.Equal(reasons(rec), want) || rec.ServedResourceVersion != "40" {
		t.Fatalf("reasons %v served %s", reasons(rec), rec.ServedResourceVersion)
	}
}

// After a continue-token expiry the restart is never older than the
// snapshot already handed over, even when the caller's LastObservedRV is
// older than that snapshot.
func TestRestartFlooredAtHandedSnapshot(t *testing.T) {
	c := &scripted{t: t, answers: answers{
		page("50", "c1", "a"), // NotOlderThan(10)&limit=1, served at 50
		fail(testfake.Gone()), // continue expired
		page("60", "", "p"),   // probe
		page("60", "", "a"),   // restart
	}}
	var restarts int
	rec, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy(), LastObservedRV: func() string { return "20" }})).ListPages(context.Background(),
		NotOlderThan("10").WithLimit(1), func(runtime.Object) error { return nil },
		OnRestart(func(fallback.Event) error { restarts++; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	calls := c.calls()
	if restarts != 1 || calls[3].ResourceVersion != "60" || rec.ServedResourceVersion != "60" {
		t.Fatalf("restarts %d, restart sent at %q, served %s (LastObservedRV 20 is older than the handed snapshot 50)",
			restarts, calls[3].ResourceVersion, rec.ServedResourceVersion)
	}
}

// The drop-in ListerWatcher never returns a list older than it delivered.
func TestListerWatcherNeverReturnsOlderThanDelivered(t *testing.T) {
	c := &scripted{t: t, answers: answers{
		page("50", "", "a"), // first list
		page("30", "", "a"), // a lagging member answers the relist RV="0"
		page("55", "", "a"), // asked again NotOlderThan(50)
	}}
	lw := NewListerWatcher(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()}))
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	calls := c.calls()
	if rv, _, _ := testfake.ListRV(t, obj); rv != "55" || len(calls) != 3 || calls[2].ResourceVersion != "50" || calls[2].ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		t.Fatalf("served %s after %+v", rv, calls)
	}
}

// Once the server answered a list in pages (watch cache off), an
// unpaginated NotOlderThan relist is sent paginated, as stock client-go does.
func TestListerWatcherRelistStaysPaginated(t *testing.T) {
	c := &scripted{t: t, answers: answers{page("9", "c", "a"), page("9", "", "b"), page("12", "", "a", "b")}}
	lw := NewListerWatcher(c, knobs.WithLister(Options{PageSize: 7}, knobs.Lister{Policy: fastPolicy()}))
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"}); err != nil {
		t.Fatal(err)
	}
	if last := c.calls()[2]; last.Limit != 7 || last.ResourceVersion != "10" {
		t.Fatalf("relist sent %+v, want rv=10 with limit 7", last)
	}
}

// A watch that delivers nothing for StallTimeout is ended, so client-go
// watches again from its resourceVersion.
func TestListerWatcherEndsStalledWatch(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	w, err := NewListerWatcher(c, Options{StallTimeout: 100 * time.Millisecond}).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	// Timed from before the last event is sent: the stall bound runs from
	// its arrival, so the watch ends no sooner than 100ms after start,
	// however late this goroutine sees the event.
	start := time.Now()
	fw.Modify(testfake.ConfigMap("a", "6"))
	if ev, ok := recv(t, w, time.Second); !ok || ev.Type != watch.Modified {
		t.Fatalf("got %v %v", ev.Type, ok)
	}
	if _, ok := recv(t, w, 2*time.Second); ok {
		t.Fatal("stalled watch delivered an event")
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("ended after %v, before StallTimeout", d)
	}
	if !fw.IsStopped() {
		t.Fatal("inner watch not stopped")
	}
}

// A caller's own invalid request (a bad label selector, 400) is not evidence
// that the server cannot stream lists; a 422 naming sendInitialEvents is.
func TestStreamingEvidenceOnlyFromTheServersRefusal(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want capability.Support
	}{
		"bad selector": {apierrors.NewBadRequest(`unable to parse requirement: invalid label key "a b"`), capability.Unknown},
		"other 422":    {apierrors.NewInvalid(schemaGK(), "", nil), capability.Unknown},
		"422 sendInitialEvents": {&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`}}, capability.No},
	} {
		srv := capability.Static(capability.Capabilities{})
		c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return nil, tc.err }}
		_, err := NewListerWatcher(c, Options{Server: srv}).WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if got := srv.Capabilities(context.Background()).Get(capability.StreamingList); got != tc.want {
			t.Errorf("%s: streaming list belief %v, want %v", name, got, tc.want)
		}
	}
}

// Once the expected number of initial events arrived, a missing end
// bookmark is detected after AfterCount, not after the long Timeout.
func TestGuardDetectsMissingBookmarkSoonAfterExpectedCount(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	expected := make(chan int, 1)
	expected <- 2
	close(expected)
	srv := capability.Static(capability.Capabilities{})
	w := watchpipe.GuardInitialEvents(context.Background(), fw, watchpipe.GuardOptions{Timeout: time.Hour, AfterCount: 100 * time.Millisecond, Expected: expected, Server: srv}, discard())
	defer w.Stop()
	fw.Add(testfake.ConfigMap("a", "5"))
	fw.Add(testfake.ConfigMap("b", "6"))
	recv(t, w, time.Second)
	recv(t, w, time.Second)
	ev, ok := recv(t, w, 5*time.Second)
	if !ok || ev.Type != watch.Error {
		t.Fatalf("got %v %v", ev.Type, ok)
	}
	if st, _ := ev.Object.(*metav1.Status); st == nil || st.Reason != watchpipe.StatusReasonStreamingListUnsupported {
		t.Fatalf("error event %+v", ev.Object)
	}
	if srv.Capabilities(context.Background()).Get(capability.StreamingList) != capability.No {
		t.Fatal("not recorded")
	}
}

// A stream cut in the middle of its initial events ends with the error
// event (client-go lists) but is not evidence about the server.
func TestGuardCutStreamIsNoEvidence(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	srv := capability.Static(capability.Capabilities{})
	w := watchpipe.GuardInitialEvents(context.Background(), fw, watchpipe.GuardOptions{Server: srv}, discard())
	defer w.Stop()
	fw.Add(testfake.ConfigMap("a", "5"))
	recv(t, w, time.Second)
	fw.Stop()
	if ev, ok := recv(t, w, time.Second); !ok || ev.Type != watch.Error {
		t.Fatalf("got %v %v", ev.Type, ok)
	}
	if got := srv.Capabilities(context.Background()).Get(capability.StreamingList); got != capability.Unknown {
		t.Fatalf("belief %v after a cut stream, want Unknown", got)
	}
}

// blockingWatch is a Client whose Watch never answers until its context ends:
// a proxy holding the response (kubernetes/kubernetes#75837).
type blockingWatch struct{ Client }

func (blockingWatch) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A streaming list whose response never starts is abandoned after the bound
// with ErrStreamingListUnsupported (client-go then lists), not waited on forever.
func TestStreamingListWithoutResponseIsAbandoned(t *testing.T) {
	lw := NewListerWatcher(blockingWatch{&scripted{t: t}}, Options{InitialEventsTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if !errors.Is(err, ErrStreamingListUnsupported) || !errors.Is(err, ErrNoWatchResponse) || ctx.Err() != nil {
		t.Fatalf("err %v (ctx %v)", err, ctx.Err())
	}
}

// client-go relists at the resourceVersion whose streaming list just failed
// (too large: the server cannot serve it); the ListerWatcher lists MostRecent
// instead of repeating the REST client's hidden retries at that version.
func TestRelistAtUnservedVersionIsMostRecent(t *testing.T) {
	c := &scripted{t: t, answers: answers{page("450", "", "a")},
		watchFn: func(metav1.ListOptions) (watch.Interface, error) { return nil, testfake.TooLarge(1) }}
	lw := NewListerWatcher(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()}))
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "439", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: ptr.To(true)}); err == nil {
		t.Fatal("no error")
	}
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "439"}); err != nil {
		t.Fatal(err)
	}
	if got := c.calls()[0]; got.ResourceVersion != "" {
		t.Fatalf("relist sent %+v, want MostRecent", got)
	}
}

// rvRecorder keeps the time of the first ResourceVersionAdvanced call.
type rvRecorder struct {
	metricsnop.Nop
	mu    sync.Mutex
	first time.Time
}

func (r *rvRecorder) ResourceVersionAdvanced(_ string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() {
		r.first = at
	}
}

func (r *rvRecorder) firstAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first
}

// The first event of a watch is reported as a resourceVersion advance at
// once (a scrape right after the watch starts sees it), not only at the
// next tick (1s with the default StallTimeout): the first report comes
// before the watch is a tick old.
func TestListerWatcherReportsFirstEventAtOnce(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	rec := &rvRecorder{}
	tick := watchpipe.StallCheckInterval(defaultStallTimeout)
	begin := time.Now() // before the watch (and its ticks) starts
	w, err := NewListerWatcher(c, Options{Metrics: rec}).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fw.Modify(testfake.ConfigMap("a", "6"))
	if _, ok := recv(t, w, time.Second); !ok {
		t.Fatal("no event")
	}
	// The report follows the event's hand-over, on the watch's goroutine.
	testfake.WaitFor(t, "a resourceVersion advance", func() bool { return !rec.firstAt().IsZero() })
	if d := rec.firstAt().Sub(begin); d >= tick {
		t.Fatalf("the first event was reported %v after the watch started, not before the %v tick", d, tick)
	}
}
