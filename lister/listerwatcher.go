package lister

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/dropin"
	"github.com/steadywatch/steadywatch/internal/wirewait"
)

// ListerWatcher adapts a Lister to client-go: it implements
// cache.ListerWatcher and cache.ListerWatcherWithContext, so
// cache.NewSharedIndexInformer, informer factories and controller-runtime
// use it unchanged, and gives client-go's own reflector what package
// reflector has:
//
//   - List reads the wire options exactly as an apiserver would
//     (fallback.FromListOptions: client-go's "0" is Any, a last-synced RV
//     with a limit is legacy Exact, without a limit NotOlderThan), runs the
//     whole list with the KEP-2523 rules — all pages internally, one
//     snapshot — and returns one complete list without a continue token. An
//     expired token is recovered here (never stitched), and a failure keeps
//     its apierrors meaning (an unavailable Exact is a 410, which makes the
//     reflector relist at resourceVersion "").
//   - Never back in time: a list served older than a resourceVersion this
//     ListerWatcher already delivered (a lagging HA member answering RV "0"
//     or "") is not returned as current; it is asked again as
//     NotOlderThan(delivered), counted (reason "stale-list-reasked").
//   - Relists stay paginated where the server paginates: once a list came
//     back in pages (the watch cache is off: every list is an etcd read),
//     an unpaginated NotOlderThan relist is sent with Options.PageSize, as
//     stock client-go's reflector does after a paginated first list.
//   - Watch forwards plain watches, ending one that delivered nothing for
//     Options.StallTimeout (client-go then watches again from its
//     resourceVersion, without a relist). A streaming list
//     (SendInitialEvents=true) is refused at once with
//     ErrStreamingListUnsupported while the API group/version is believed
//     not to stream lists (client-go's reflector then lists); otherwise it is
//     guarded by the streaming-list guard (AwaitInitialEvents).
//   - Never an event older than what was already delivered: every event
//     passes the SDK's one watch pipeline (shared with reflector.New). Where
//     resourceVersions compare as numbers (etcd-backed servers), an event
//     older than the object this ListerWatcher last delivered, at or below
//     the object's deletion, at or below the resourceVersion the watch
//     started from, or older than the newest event the watch delivered (a
//     watch cache re-delivering history, kubernetes/kubernetes#73845; streams
//     mixed by a proxy, linkerd/linkerd#1680) is not delivered. It is
//     counted and logged with both versions (reason "event-older-than-store"), and
//     the watch ends with a 410 Expired error event, so client-go's
//     reflector relists NotOlderThan its last synced resourceVersion (after
//     its own jittered backoff) instead of applying it. The versions are one
//     entry per object, and deletions are remembered (at most 4096, the
//     oldest forgotten first) until a list or streaming list replaces them.
//     Where a list carries a resourceVersion that does not parse as a number
//     (aggregated APIs with opaque versions), nothing is compared until a
//     list whose versions all parse.
//   - No request loop without a delay: a streaming list or plain watch that
//     ends, or fails to open, without delivering anything newer than where
//     it started (a server answering every watch 410 Expired, which
//     client-go's streaming list retries at once) delays the next watch by
//     a growing, jittered backoff (800ms doubling to 30s), reset by progress
//     or a successful list; a retry goes without the limit=1 count list.
//     Counted and logged (reason "no-progress-backoff").
//   - Relists, watch restarts, bookmarks and items are counted and logged
//     from where the ListerWatcher sees them (Options.Metrics, Options.Name).
type ListerWatcher struct {
	l  *Lister
	lw *dropin.ListerWatcher
}

var (
	_ cache.ListerWatcher            = (*ListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)
)

// ListerWatcher returns the client-go adapter of l.
func (l *Lister) ListerWatcher() *ListerWatcher {
	o := l.o
	return &ListerWatcher{l: l, lw: dropin.New(dropin.Config{
		Name:                 o.Name,
		Metrics:              o.Metrics,
		Server:               o.Server,
		ListGate:             o.ListGate,
		PageSize:             o.PageSize,
		InitialEventsTimeout: o.InitialEventsTimeout,
		StallTimeout:         o.StallTimeout,
		DisableStreamingList: o.DisableStreamingList,
		Selectors:            o.withSelectors,
		List:                 l.listed,
		Client:               l.c,
		ExpectInitialEvents:  l.expectInitialEvents,
	})}
}

// listed is list for the drop-in ListerWatcher: the list and what it was
// served at.
func (l *Lister) listed(ctx context.Context, q Query, base metav1.ListOptions) (runtime.Object, dropin.Listed, error) {
	obj, rec, err := l.list(ctx, q, base)
	if err != nil {
		return nil, dropin.Listed{}, err
	}
	return obj, dropin.Listed{ResourceVersion: rec.ServedResourceVersion, Pages: rec.Pages, Items: rec.Items}, nil
}

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
	return lw.lw.ListWithContext(wirewait.WithBound(ctx, lw.l.o.ResponseTimeout), options)
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return lw.lw.WatchWithContext(wirewait.WithBound(ctx, lw.l.o.ResponseTimeout), options)
}

// IsWatchListSemanticsUnSupported is read once by client-go's reflector
// (tools/cache/reflector.go, via util/watchlist) when it is built, and an
// informer built while it says true never streams for its whole life. So it
// is true only when the inner Client itself declares it (as client-go's fake
// clientsets do: tests then list at once instead of waiting for a guard) or
// Options.DisableStreamingList is set; a belief about the server is decided
// per request instead, in WatchWithContext, where it can expire and let a
// long-lived informer stream again.
func (lw *ListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return lw.l.o.DisableStreamingList || declaresNoWatchList(lw.l.c)
}
