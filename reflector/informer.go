package reflector

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

// NewSharedIndexInformer has the shape of cache.NewSharedIndexInformer, for
// drop-in use: it returns client-go's own SharedIndexInformer (event
// handlers, indexers, resync, HasSynced, transform: all unchanged) whose
// ListerWatcher is lw wrapped in a steadywatch lister.ListerWatcher.
//
// Why not our Reflector inside the informer: client-go builds the reflector
// inside sharedIndexInformer.RunWithContext (cache.New -> NewReflector) with
// no hook to swap it, and its event processor (sharedProcessor, per-handler
// buffering, registrations, resync) is unexported; re-implementing it would
// duplicate ~1,000 lines of subtle concurrency code that would drift from
// client-go. Instead the informer's own reflector is made safe through its
// ListerWatcher: every list it sends is read with the API Concepts semantics and run
// with the KEP-2523 fallbacks (verified served resourceVersions, 410/too-large
// recovery, legacy servers), and a streaming list on a server that ignores
// sendInitialEvents ends with an error instead of hanging.
//
// Through lister.ListerWatcher it also gets stall detection, the "never
// older than what was delivered" guard across relists, paginated relists
// where the server paginates, per-group/version capability evidence
// (Resource derived from exampleObject) and metrics named after the
// resource. What it does not get from package reflector: the consistency
// checker, the per-object "event older than the stored object" filter, and
// the backoff between relists that follow each other without an event
// (client-go's own reflector backs off 800ms doubling to 30s between its
// list-and-watch rounds). README's adoption table lists each path's
// guarantees.
func NewSharedIndexInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, cache.SharedIndexInformerOptions{
		ResyncPeriod: defaultEventHandlerResyncPeriod,
		Indexers:     indexers,
	}, lister.Options{})
}

// NewSharedIndexInformerWithOptions is NewSharedIndexInformer with client-go's
// informer options and the lister's options (Server, Metrics, Name, ...).
func NewSharedIndexInformerWithOptions(lw cache.ListerWatcher, exampleObject runtime.Object, o cache.SharedIndexInformerOptions, lo lister.Options) cache.SharedIndexInformer {
	if lo.Resource.Empty() {
		lo.Resource, _ = lister.ResourceOf(exampleObject)
	}
	return cache.NewSharedIndexInformerWithOptions(lister.NewListerWatcher(lwClient{lw: cache.ToListerWatcherWithContext(lw), orig: lw}, lo), exampleObject, o)
}

// lwClient adapts a cache.ListerWatcherWithContext to lister.Client and
// forwards the inner ListerWatcher's own declaration that it cannot stream
// lists (client-go's fake clientsets make it, via
// cache.ToListWatcherWithWatchListSemantics): without it every informer over
// a fake clientset waited for the streaming-list guard.
type lwClient struct {
	lw   cache.ListerWatcherWithContext
	orig cache.ListerWatcher
}

// IsWatchListSemanticsUnSupported forwards the inner declaration.
func (c lwClient) IsWatchListSemanticsUnSupported() bool {
	type declares interface{ IsWatchListSemanticsUnSupported() bool }
	for _, x := range []any{c.orig, c.lw} {
		if d, ok := x.(declares); ok && d.IsWatchListSemanticsUnSupported() {
			return true
		}
	}
	return false
}

func (c lwClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.lw.ListWithContext(ctx, o)
}

func (c lwClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.lw.WatchWithContext(ctx, o)
}
