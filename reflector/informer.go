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
// ListerWatcher: every list it sends is read with the seeds' semantics and run
// with the KEP-2523 fallbacks (verified served resourceVersions, 410/too-large
// recovery, legacy servers), and a streaming list on a server that ignores
// sendInitialEvents ends with an error instead of hanging.
//
// What this informer does not get from package reflector: stall detection,
// the "never older than the store" guard across relists, and the consistency
// checker. For those, run New with a DeltaFIFO or RealFIFO and your own
// processing loop (or controller-runtime on top).
func NewSharedIndexInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, cache.SharedIndexInformerOptions{
		ResyncPeriod: defaultEventHandlerResyncPeriod,
		Indexers:     indexers,
	}, lister.Options{})
}

// NewSharedIndexInformerWithOptions is NewSharedIndexInformer with client-go's
// informer options and the lister's options (Server, Metrics, Name, ...).
func NewSharedIndexInformerWithOptions(lw cache.ListerWatcher, exampleObject runtime.Object, o cache.SharedIndexInformerOptions, lo lister.Options) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformerWithOptions(lister.NewListerWatcher(lwClient{cache.ToListerWatcherWithContext(lw)}, lo), exampleObject, o)
}

// lwClient adapts a cache.ListerWatcherWithContext to lister.Client.
type lwClient struct {
	lw cache.ListerWatcherWithContext
}

func (c lwClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.lw.ListWithContext(ctx, o)
}

func (c lwClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.lw.WatchWithContext(ctx, o)
}
