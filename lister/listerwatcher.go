package lister

import (
	"context"
	"fmt"
	"strings"
	"time"

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
		if rejectsStreaming(err) {
			// 1.19-1.26 reject resourceVersionMatch on watch, 1.27+ with the
			// WatchList gate off reject sendInitialEvents: 422 naming the
			// parameter. Any other 400/422 (a bad selector) is the caller's
			// own mistake and says nothing about the server.
			srv.Observe(compat.Observation{Capability: compat.StreamingList, Support: compat.No, Detail: "observed: sendInitialEvents watch rejected: " + err.Error()})
			return nil, fmt.Errorf("%w: %w", ErrStreamingListUnsupported, err)
		}
		return nil, err
	}
	return GuardInitialEvents(ctx, w, GuardOptions{
		Timeout:  lw.l.o.InitialEventsTimeout,
		Expected: ExpectInitialEvents(ctx, lw.l.c, options),
		Server:   srv,
	}, log), nil
}

// rejectsStreaming reports whether err is a server's refusal of the
// streaming-list parameters themselves (evidence it does not stream lists),
// as opposed to any other invalid request.
func rejectsStreaming(err error) bool {
	if fallback.Classify(err) != fallback.Invalid {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "sendInitialEvents") || strings.Contains(msg, "resourceVersionMatch")
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
