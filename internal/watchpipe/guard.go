package watchpipe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

// ListClient lists; lister.Client is one.
type ListClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
}

// WatchClient watches; lister.Client is one.
type WatchClient interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ErrStreamingListUnsupported: a watch with sendInitialEvents=true was asked
// of a server that does not stream lists. Not retriable by client-go, whose
// reflector then falls back to a list. (lister.ErrStreamingListUnsupported
// is the same error.)
var ErrStreamingListUnsupported = errors.New("streaming list (sendInitialEvents) not supported by the server")

// Defaults of GuardOptions.
const (
	// DefaultInitialEventsTimeout is the quiet time a streaming list may have
	// before its k8s.io/initial-events-end bookmark while the number of
	// initial events is not known (3x that while a known count is not
	// reached yet, see DefaultInitialEventsBeforeCountFactor).
	DefaultInitialEventsTimeout = 10 * time.Second
	// DefaultInitialEventsAfterCount is the quiet time allowed once every
	// expected initial event has arrived: the end bookmark follows the last
	// initial event at once on a server that streams lists, so a dropped or
	// stripped bookmark is detected this soon after the last event.
	DefaultInitialEventsAfterCount = 1500 * time.Millisecond
	// DefaultInitialEventsBeforeCountFactor: while the expected count is
	// known and some but not all initial events arrived, the server is still
	// sending its initial events
	// (a lost end bookmark cannot be the reason for quiet), so the quiet
	// allowed is this many times Timeout: 30s by default, so a real server
	// that pauses 10s mid-stream under load is waited for.
	DefaultInitialEventsBeforeCountFactor = 3
)

// StatusReasonStreamingListUnsupported is the reason of the error event a
// guarded streaming list ends with.
const StatusReasonStreamingListUnsupported metav1.StatusReason = "StreamingListUnsupported"

// GuardOptions configures GuardInitialEvents. The zero value is the default.
type GuardOptions struct {
	// Timeout bounds the quiet time before the end bookmark while the
	// expected count is unknown, or before the first initial event. Default
	// DefaultInitialEventsTimeout.
	Timeout time.Duration
	// AfterCount bounds the quiet time once Expected initial events arrived.
	// Default DefaultInitialEventsAfterCount; never more than Timeout.
	AfterCount time.Duration
	// BeforeCount bounds the quiet time while the expected count is known
	// and some but not all initial events arrived. Default DefaultInitialEventsBeforeCountFactor x
	// Timeout; never less than Timeout.
	BeforeCount time.Duration
	// Expected, if set, delivers the number of objects the initial events
	// should hold (ExpectedInitialEvents), or is closed without a value when
	// it cannot be known.
	Expected <-chan int
	// FromMostRecent: the stream was opened with resourceVersion unset
	// (MostRecent). A server that ignores sendInitialEvents then still
	// sends an ADDED event for every object first (the watch semantics of
	// an unset resourceVersion, "Get State and Start at Most Recent", API
	// Concepts), so while a known, non-zero count has not started to
	// arrive, quiet is a slow server (one reading a large collection from
	// etcd without its watch cache, under load), not evidence that it does
	// not stream: BeforeCount applies instead of Timeout. Default false:
	// a stream from a resourceVersion, which a server that ignores
	// sendInitialEvents answers with nothing but later changes.
	FromMostRecent bool
	// Server receives what the stream proves about streaming lists. Nil: nothing is recorded.
	Server compat.Server
	// OnNotStreaming, if set, is called when the guard ends the stream
	// (for the caller's metrics).
	OnNotStreaming func(detail string)
}

func (o GuardOptions) withDefaults() GuardOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultInitialEventsTimeout
	}
	if o.AfterCount <= 0 {
		o.AfterCount = DefaultInitialEventsAfterCount
	}
	o.AfterCount = min(o.AfterCount, o.Timeout)
	if o.BeforeCount <= 0 {
		o.BeforeCount = DefaultInitialEventsBeforeCountFactor * o.Timeout
	}
	o.BeforeCount = max(o.BeforeCount, o.Timeout)
	return o
}

// ExpectedInitialEvents returns how many objects a streaming list over c with
// base's selectors should send before its end bookmark, from one limit=1
// MostRecent list: its items plus ListMeta.remainingItemCount. ok is false
// when the server does not say (remainingItemCount is not sent with
// selectors, nor by some servers) or the list fails; the guard then relies on
// GuardOptions.Timeout alone.
func ExpectedInitialEvents(ctx context.Context, c ListClient, base metav1.ListOptions) (n int, ok bool) {
	opts := engine.ApplyTo(fallback.Query{Semantic: fallback.MostRecent}.WithLimit(1), base, vocab.Match)
	opts.Watch, opts.SendInitialEvents, opts.AllowWatchBookmarks, opts.TimeoutSeconds = false, nil, false, nil
	obj, err := c.List(ctx, opts)
	if err != nil {
		return 0, false
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return 0, false
	}
	items := meta.LenList(obj)
	switch {
	case lm.GetContinue() == "":
		return items, true
	case lm.GetRemainingItemCount() != nil && *lm.GetRemainingItemCount() >= 0:
		return items + int(*lm.GetRemainingItemCount()), true
	}
	return 0, false
}

// ExpectInitialEvents runs ExpectedInitialEvents beside a streaming list and
// returns the channel GuardOptions.Expected reads: it delivers the count, or
// is closed without one. It sends nothing with a label or field selector
// (the apiserver does not count the remaining items of a filtered list), nor
// once srv observed the server end a streaming list with its
// initial-events-end bookmark: the count only lets the guard tell sooner a
// server that ignores sendInitialEvents, and this one was seen to honour it.
// (Should a server stop streaming lists, the guard still ends the stream
// after its quiet bound, and srv then records that it does not.)
func ExpectInitialEvents(ctx context.Context, c ListClient, base metav1.ListOptions, srv compat.Server) <-chan int {
	ch := make(chan int, 1)
	if base.LabelSelector != "" || base.FieldSelector != "" || streamsObserved(ctx, srv) {
		close(ch)
		return ch
	}
	go func() {
		defer close(ch)
		if n, ok := ExpectedInitialEvents(ctx, c, base); ok {
			ch <- n
		}
	}()
	return ch
}

// GuardInitialEvents wraps a streaming list (a watch sent with
// sendInitialEvents=true) so that it never hangs: it forwards the initial
// events until the k8s.io/initial-events-end bookmark, and ends the watch
// with an error event of reason StatusReasonStreamingListUnsupported (code
// 501, which client-go's reflector answers by listing instead) when
// AwaitInitialEvents finds the server does not stream lists. After the end
// bookmark the watch is forwarded unchanged.
func GuardInitialEvents(ctx context.Context, w watch.Interface, o GuardOptions, log logr.Logger) watch.Interface {
	g := &guardedWatch{NewRelay(w)}
	go g.run(ctx, o, log)
	return g
}

// InitialEventsOutcome is how the initial events of a streaming list ended.
type InitialEventsOutcome int

const (
	// InitialEventsEnded: the k8s.io/initial-events-end bookmark arrived (it
	// was the last event handed to each).
	InitialEventsEnded InitialEventsOutcome = iota
	// InitialEventsError: the server sent an ERROR event (handed to each): no
	// evidence either way.
	InitialEventsError
	// InitialEventsNotStreaming: the server showed it does not stream lists
	// (recorded in GuardOptions.Server); Detail says how.
	InitialEventsNotStreaming
	// InitialEventsCut: the stream closed after some initial events without
	// the bookmark; not recorded (a cut connection is no evidence).
	InitialEventsCut
	// InitialEventsClosed: the stream closed before any event.
	InitialEventsClosed
	// InitialEventsStopped: stop was closed (the caller gave up).
	InitialEventsStopped
)

// AwaitInitialEvents is the one streaming-list guard of the SDK (the drop-in
// ListerWatcher and the reflector run it as the first stage of their watch
// pipeline; kubectl-steadywatch calls it directly). It reads w's initial events, hands
// each to each (which returns false to stop), and returns when they end or
// when the server shows it does not stream lists:
//
//   - no end bookmark within Timeout of quiet (BeforeCount while a known
//     count is not reached and some of it arrived, or, from MostRecent,
//     none of it yet: o.FromMostRecent), or within AfterCount of quiet once the
//     expected number of initial events arrived (a proxy that drops
//     bookmarks, gravitational/teleport#64188; a server that ignores
//     sendInitialEvents, v1.18);
//   - a bookmark without the annotation before the end (antrea-io/antrea#8123);
//   - a MODIFIED or DELETED event before the end.
//
// Each of these is recorded in o.Server as "streaming lists: No" (it
// expires, see compat). A stream that closes after some initial events
// without the bookmark (an apiserver restart, kubernetes/kubernetes#140890)
// is InitialEventsCut and is not recorded. Quiet is measured from the
// hand-over of the last event, so a slow consumer is not mistaken for a
// silent server; the timer is re-armed lazily. w is not stopped.
func AwaitInitialEvents(stop <-chan struct{}, w watch.Interface, o GuardOptions, log logr.Logger, each func(watch.Event) bool) (InitialEventsOutcome, string) {
	o = o.withDefaults()
	out, detail := awaitInitialEvents(stop, w.ResultChan(), o, each)
	switch out {
	case InitialEventsNotStreaming:
		log.V(2).Info("streaming list ended without its initial-events-end bookmark; listing instead", "detail", detail)
		observe(o.Server, capability.No, detail)
		if o.OnNotStreaming != nil {
			o.OnNotStreaming(detail)
		}
	case InitialEventsCut:
		log.V(2).Info("streaming list cut before its initial-events-end bookmark (no evidence about the server); listing instead", "detail", detail)
		if o.OnNotStreaming != nil {
			o.OnNotStreaming(detail)
		}
	case InitialEventsEnded:
		observe(o.Server, capability.Yes, "initial-events-end bookmark received")
	}
	return out, detail
}

// streamsObserved reports whether srv saw the server end a streaming list
// with its initial-events-end bookmark (a belief resting on the server's
// version or feature-gate defaults is not enough).
func streamsObserved(ctx context.Context, srv compat.Server) bool {
	if srv == nil {
		return false
	}
	caps := srv.Capabilities(ctx)
	return caps.Get(capability.StreamingList) == capability.Yes && caps.Basis[capability.StreamingList] == capability.BasisObserved
}

func observe(srv compat.Server, s capability.Support, detail string) {
	if srv != nil {
		srv.Observe(capability.Observation{Capability: capability.StreamingList, Support: s, Detail: "observed: " + detail})
	}
}

func awaitInitialEvents(stop <-chan struct{}, in <-chan watch.Event, o GuardOptions, each func(watch.Event) bool) (InitialEventsOutcome, string) {
	bound := o.Timeout
	timer := time.NewTimer(bound)
	defer timer.Stop()
	last := time.Now()
	events, expected := 0, -1
	expectedCh := o.Expected
	// unstamped: events were handled since last was read from the clock.
	// Events already waiting are taken without the select below (and
	// without reading the clock); every 64th goes through it, so a flood
	// cannot keep stop, the count or the timer from being seen. Before the
	// select, last is stamped: the moment the newest event was handled, so
	// the quiet measured from it is never longer than the real one.
	unstamped := false
	for i := 0; ; i++ {
		var (
			ev      watch.Event
			ok, got bool
		)
		if i&63 != 0 {
			select {
			case ev, ok = <-in:
				got = true
			default:
			}
		}
		if !got {
			if unstamped {
				last, unstamped = time.Now(), false
			}
			bound = o.quietBound(bound, expected, events)
			select {
			case <-stop:
				return InitialEventsStopped, ""
			case n, ok := <-expectedCh:
				expectedCh = nil
				if ok {
					expected = n
					if events >= expected {
						timer.Reset(max(0, o.AfterCount-time.Since(last)))
					}
				}
				continue
			case <-timer.C:
				if quiet := time.Since(last); quiet < bound {
					timer.Reset(bound - quiet)
					continue
				}
				what := fmt.Sprintf("no %s bookmark within %s of quiet after %d initial event(s)", metav1.InitialEventsAnnotationKey, bound, events)
				if expected >= 0 {
					what += fmt.Sprintf(" (%d expected)", expected)
				}
				return InitialEventsNotStreaming, what
			case ev, ok = <-in:
			}
		}
		if !ok {
			return endedEarly(events)
		}
		switch ev.Type {
		case watch.Added:
			events++
		case watch.Bookmark:
			if !IsInitialEventsEnd(ev.Object) {
				return InitialEventsNotStreaming, "a bookmark without " + metav1.InitialEventsAnnotationKey + " arrived before the initial events ended"
			}
			if !each(ev) {
				return InitialEventsStopped, ""
			}
			return InitialEventsEnded, ""
		case watch.Error:
			if !each(ev) {
				return InitialEventsStopped, ""
			}
			return InitialEventsError, ""
		case watch.Modified, watch.Deleted:
			return InitialEventsNotStreaming, fmt.Sprintf("a %s event arrived before the %s bookmark", ev.Type, metav1.InitialEventsAnnotationKey)
		}
		if !each(ev) {
			return InitialEventsStopped, ""
		}
		unstamped = true
		if expected >= 0 && events == expected {
			timer.Reset(o.AfterCount)
		}
	}
}

// quietBound is how long a quiet stream is waited for, with expected
// initial events counted (-1: not known) and events received; bound is the
// one in force.
func (o GuardOptions) quietBound(bound time.Duration, expected, events int) time.Duration {
	switch {
	case expected >= 0 && events >= expected:
		return o.AfterCount
	case expected >= 0 && events > 0:
		// Still sending what was counted: a pause, not a lost bookmark.
		// (The timer is re-armed lazily to the longer bound.) With no
		// initial event at all the server may be ignoring
		// sendInitialEvents (an aggregated API on an old library), so
		// Timeout applies, unless the stream is from MostRecent, where
		// that server would be sending ADDED events too.
		return o.BeforeCount
	case expected > 0 && o.FromMostRecent:
		return o.BeforeCount
	}
	return bound
}

// endedEarly is the outcome of a stream that ended after events initial
// events, before its initial-events-end bookmark.
func endedEarly(events int) (InitialEventsOutcome, string) {
	if events > 0 {
		return InitialEventsCut, fmt.Sprintf("the watch ended after %d event(s) without the %s bookmark", events, metav1.InitialEventsAnnotationKey)
	}
	return InitialEventsClosed, "the watch ended before any event"
}

// Relay is the watch.Interface an adopter hands out in place of an inner
// watch: its own channel (so it can end a stream with an error event, or
// end it early) and a Stop that is safe to call twice. The goroutine that
// feeds it calls Send and, when done, Close.
type Relay struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

// relayBuffer is the relay channel's capacity. An unbuffered relay makes
// every event a goroutine hand-off on top of the inner watch's own; a buffer
// lets the relay and client-go's reflector run side by side, so that under a
// flood of events the reflector finds them waiting instead of being woken per
// event (BenchmarkReflectorWatchEvent in package reflector compares buffer sizes).
// The cost is the channel's array, 32 KiB per open watch (1024 x 32-byte
// watch.Event). Events still buffered when the consumer calls Stop are
// dropped, as an unbuffered watch's next event would be.
const relayBuffer = 1024

// NewRelay returns a Relay in front of inner.
func NewRelay(inner watch.Interface) *Relay {
	return &Relay{inner: inner, out: make(chan watch.Event, relayBuffer), stop: make(chan struct{})}
}

// Stop implements watch.Interface.
func (g *Relay) Stop() { g.once.Do(func() { close(g.stop) }) }

// ResultChan implements watch.Interface.
func (g *Relay) ResultChan() <-chan watch.Event { return g.out }

// Inner is the watch the relay forwards.
func (g *Relay) Inner() watch.Interface { return g.inner }

// Stopped is closed once Stop was called.
func (g *Relay) Stopped() <-chan struct{} { return g.stop }

// Close closes the result channel; the feeding goroutine calls it once, last.
func (g *Relay) Close() { close(g.out) }

// Send hands ev over unless the watch was stopped. While the buffer has
// room it does not look at stop (a plain channel send is much cheaper than a
// select); a stopped relay's consumer reads nothing more, so at most
// relayBuffer events go into a buffer nobody drains before the next send
// sees stop.
func (g *Relay) Send(ev watch.Event) bool {
	select {
	case g.out <- ev:
		return true
	default:
	}
	select {
	case g.out <- ev:
		return true
	case <-g.stop:
		return false
	}
}

type guardedWatch struct{ *Relay }

// run guards the initial events, then forwards the rest of the watch. The
// watch ends when the inner one does, on Stop, or when ctx ends.
func (g *guardedWatch) run(ctx context.Context, o GuardOptions, log logr.Logger) {
	defer close(g.out)
	defer g.inner.Stop()
	defer context.AfterFunc(ctx, g.Stop)()
	switch out, detail := AwaitInitialEvents(g.stop, g.inner, o, log, g.Send); out {
	case InitialEventsEnded, InitialEventsError:
	case InitialEventsNotStreaming, InitialEventsCut:
		// An error event client-go's reflector does not retry as a watch
		// (not 410, 504, 429 or connection refused), so it lists instead.
		g.Send(NotStreamingEvent(detail))
		return
	default:
		return
	}
	// The guard's job is done: forward with nothing but the hand-over. The
	// hop stays: ResultChan must return the same channel for the life of
	// the watch, and it had to be ours to end a stream with an error event.
	in := g.inner.ResultChan()
	for {
		select {
		case <-g.stop:
			return
		case ev, ok := <-in:
			if !ok || !g.Send(ev) {
				return
			}
		}
	}
}

// NotStreamingEvent is the error event a guarded streaming list ends with.
func NotStreamingEvent(detail string) watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotImplemented, Reason: StatusReasonStreamingListUnsupported,
		Message: ErrStreamingListUnsupported.Error() + ": " + detail,
	}}
}

// IsInitialEventsEnd reports whether obj (a bookmark's object) carries the
// k8s.io/initial-events-end annotation.
func IsInitialEventsEnd(obj runtime.Object) bool {
	type annotated interface{ GetAnnotations() map[string]string }
	if a, ok := obj.(annotated); ok {
		return a.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	}
	return false
}

// ErrNoWatchResponse: a watch request got no response (not even headers)
// within its bound: a proxy holding or buffering the stream
// (kubernetes/kubernetes#75837). It wraps ErrStreamingListUnsupported when
// the watch was a streaming list, so client-go's reflector lists instead.
var ErrNoWatchResponse = errors.New("no response to the watch request")

// OpenWatch sends a watch through c and bounds the wait for its response:
// an apiserver answers a watch (a streaming list included) with headers at
// once, so a response that has not started within d is a proxy holding the
// stream, and the request is abandoned with ErrNoWatchResponse instead of
// waiting forever. The returned watch's Stop also releases the request.
func OpenWatch(ctx context.Context, c WatchClient, opts metav1.ListOptions, d time.Duration) (watch.Interface, error) {
	wctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(d, cancel)
	w, err := c.Watch(wctx, opts)
	if !timer.Stop() {
		if err == nil {
			w.Stop()
		}
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = fmt.Errorf("%w within %s", ErrNoWatchResponse, d)
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
			err = fmt.Errorf("%w: %w", ErrStreamingListUnsupported, err)
		}
		return nil, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &cancelOnStop{Interface: w, cancel: cancel}, nil
}

type cancelOnStop struct {
	watch.Interface
	cancel context.CancelFunc
}

func (c *cancelOnStop) Stop() {
	c.Interface.Stop()
	c.cancel()
}
