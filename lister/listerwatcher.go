package lister

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
)

// ListerWatcher adapts a Lister to client-go: it implements
// cache.ListerWatcher and cache.ListerWatcherWithContext, so
// cache.NewSharedIndexInformer, informer factories and controller-runtime
// use it unchanged.
//
// List reads the wire options exactly as an apiserver would
// (fallback.FromListOptions: client-go's "0" is Any, a last-synced RV with a
// limit is legacy Exact, without a limit NotOlderThan), runs the whole list
// with the fallback rules — all pages internally, one snapshot — and returns
// one complete list without a continue token. client-go's pager therefore
// makes a single call; an expired token is recovered here (never stitched),
// and a failure keeps its apierrors meaning (an unavailable Exact is a 410,
// which makes the reflector relist at resourceVersion "").
//
// Watch forwards plain watches. A streaming list (SendInitialEvents=true)
// is refused at once with ErrStreamingListUnsupported when the server is
// known not to stream lists (client-go's reflector then lists); otherwise it
// is forwarded and guarded: if the k8s.io/initial-events-end bookmark does
// not arrive within Options.InitialEventsTimeout of quiet, or the stream shows
// a non-ADDED event first, the server is recorded as not streaming and the
// watch ends with an error event, so the reflector falls back to a list
// instead of waiting forever (v1.18 ignores sendInitialEvents).
type ListerWatcher struct {
	l *Lister
}

var (
	_ cache.ListerWatcher            = (*ListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)
)

// ListerWatcher returns the client-go adapter of l.
func (l *Lister) ListerWatcher() *ListerWatcher { return &ListerWatcher{l: l} }

// NewListerWatcher is New(c, o).ListerWatcher().
func NewListerWatcher(c Client, o Options) *ListerWatcher { return New(c, o).ListerWatcher() }

// List implements cache.Lister.
func (lw *ListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// Watch implements cache.Watcher.
func (lw *ListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// ListWithContext implements cache.ListerWithContext.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	q, err := fallback.FromListOptions(options)
	if err != nil {
		return nil, err
	}
	base := options
	base.ResourceVersion, base.ResourceVersionMatch, base.Limit, base.Continue = "", "", 0, ""
	if base.LabelSelector == "" {
		base.LabelSelector = lw.l.o.LabelSelector
	}
	if base.FieldSelector == "" {
		base.FieldSelector = lw.l.o.FieldSelector
	}
	obj, _, err := lw.l.list(ctx, q, base)
	return obj, err
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if options.LabelSelector == "" {
		options.LabelSelector = lw.l.o.LabelSelector
	}
	if options.FieldSelector == "" {
		options.FieldSelector = lw.l.o.FieldSelector
	}
	if options.SendInitialEvents == nil || !*options.SendInitialEvents {
		return lw.l.c.Watch(ctx, options)
	}
	log := klog.FromContext(ctx).WithValues("lister", lw.l.o.Name)
	srv := lw.l.o.Server
	caps := srv.Capabilities(ctx)
	if caps.Get(compat.StreamingList) == compat.No {
		why := caps.Reasons[compat.StreamingList]
		log.V(4).Info("streaming list refused without a request", "reason", why)
		return nil, fmt.Errorf("%w (%s)", ErrStreamingListUnsupported, orUnknown(why))
	}
	w, err := lw.l.c.Watch(ctx, options)
	if err != nil {
		if fallback.Classify(err) == fallback.Invalid {
			// 1.19-1.26 reject resourceVersionMatch on watch, 1.27+ with the
			// WatchList gate off reject sendInitialEvents: 422.
			srv.Observe(compat.Observation{Capability: compat.StreamingList, Support: compat.No, Detail: "observed: sendInitialEvents watch rejected: " + err.Error()})
			return nil, fmt.Errorf("%w: %w", ErrStreamingListUnsupported, err)
		}
		return nil, err
	}
	return newGuardedWatch(ctx, w, lw.l.o.InitialEventsTimeout, srv, log), nil
}

// IsWatchListSemanticsUnSupported is read once by client-go's reflector
// (tools/cache/reflector.go, via util/watchlist) when it is built: true when
// the server is known not to stream lists, so the reflector lists from the
// start. Unknown or tentative support is false: the guarded watch verifies.
func (lw *ListerWatcher) IsWatchListSemanticsUnSupported() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return lw.l.o.Server.Capabilities(ctx).Get(compat.StreamingList) == compat.No
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}

// StatusReasonStreamingListUnsupported is the reason of the error event a
// guarded streaming list ends with.
const StatusReasonStreamingListUnsupported metav1.StatusReason = "StreamingListUnsupported"

type guardedWatch struct {
	inner  watch.Interface
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
	quiet  time.Duration
	server compat.Server
	log    logr.Logger
}

func newGuardedWatch(ctx context.Context, inner watch.Interface, quiet time.Duration, server compat.Server, log logr.Logger) *guardedWatch {
	g := &guardedWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{}), quiet: quiet, server: server, log: log}
	go g.run(ctx)
	return g
}

func (g *guardedWatch) Stop() { g.once.Do(func() { close(g.stop) }) }

func (g *guardedWatch) ResultChan() <-chan watch.Event { return g.out }

func (g *guardedWatch) send(ev watch.Event) bool {
	select {
	case g.out <- ev:
		return true
	case <-g.stop:
		return false
	}
}

// notStreaming records that the server does not stream lists and ends the
// watch with an error event that client-go's reflector does not retry as a
// watch (not 410, 504, 429 or connection refused), so it lists instead.
func (g *guardedWatch) notStreaming(detail string) {
	g.log.V(2).Info("server does not stream lists; ending the watch so the reflector lists", "detail", detail)
	g.server.Observe(compat.Observation{Capability: compat.StreamingList, Support: compat.No, Detail: "observed: " + detail})
	g.send(watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotImplemented, Reason: StatusReasonStreamingListUnsupported,
		Message: ErrStreamingListUnsupported.Error() + ": " + detail,
	}})
}

// run guards the initial events, then forwards the rest of the watch. The
// watch ends when the inner one does, on Stop, or when ctx ends.
func (g *guardedWatch) run(ctx context.Context) {
	defer close(g.out)
	defer g.inner.Stop()
	// ctx ending is a Stop: one channel for every select below, instead of
	// a ctx.Done case on each event.
	defer context.AfterFunc(ctx, g.Stop)()
	in := g.inner.ResultChan()
	if !g.guard(in) {
		return
	}
	// The guard's job is done: forward with nothing but the hand-over (no
	// timer, no checks). The hop itself stays: ResultChan must return the
	// same channel for the life of the watch, and it had to be ours to end
	// a stream that never streams with an error event.
	for {
		select {
		case <-g.stop:
			return
		case ev, ok := <-in:
			if !ok || !g.send(ev) {
				return
			}
		}
	}
}

// guard forwards the initial events until the initial-events-end bookmark
// (or a server error, which is no evidence either way) and reports whether
// the watch goes on. It ends the watch, with an error event where the server
// is shown not to stream lists, when Options.InitialEventsTimeout of quiet
// passes, a non-ADDED event or a plain bookmark comes first, or the stream
// closes after some initial events but without the bookmark.
//
// Quiet is measured from the hand-over of the last event, so a slow consumer
// is not mistaken for a silent server. The timer is re-armed lazily: each
// event only records its hand-over time, and a firing that comes early is
// re-armed for the rest of the bound. Same bound, no Stop/Reset per event.
func (g *guardedWatch) guard(in <-chan watch.Event) bool {
	timer := time.NewTimer(g.quiet)
	defer timer.Stop()
	last := time.Now()
	events := 0
	for {
		select {
		case <-g.stop:
			return false
		case <-timer.C:
			if quiet := time.Since(last); quiet < g.quiet {
				timer.Reset(g.quiet - quiet)
				continue
			}
			g.notStreaming(fmt.Sprintf("no %s bookmark within %s of quiet after %d initial event(s)", metav1.InitialEventsAnnotationKey, g.quiet, events))
			return false
		case ev, ok := <-in:
			if !ok {
				if events > 0 {
					g.notStreaming(fmt.Sprintf("the watch ended after %d event(s) without the %s bookmark", events, metav1.InitialEventsAnnotationKey))
				}
				return false
			}
			done := false
			switch ev.Type {
			case watch.Added:
				events++
			case watch.Bookmark:
				if !isInitialEventsEnd(ev.Object) {
					g.notStreaming("a bookmark without " + metav1.InitialEventsAnnotationKey + " arrived before the initial events ended")
					return false
				}
				done = true
				g.server.Observe(compat.Observation{Capability: compat.StreamingList, Support: compat.Yes, Detail: "observed: initial-events-end bookmark received"})
			case watch.Error:
				done = true // a server error (e.g. 410) is no evidence either way
			case watch.Modified, watch.Deleted:
				g.notStreaming(fmt.Sprintf("a %s event arrived before the %s bookmark", ev.Type, metav1.InitialEventsAnnotationKey))
				return false
			}
			if !g.send(ev) {
				return false
			}
			if done {
				return true
			}
			last = time.Now()
		}
	}
}

func isInitialEventsEnd(obj runtime.Object) bool {
	type annotated interface{ GetAnnotations() map[string]string }
	if a, ok := obj.(annotated); ok {
		return a.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	}
	return false
}
