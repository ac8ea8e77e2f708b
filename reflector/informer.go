package reflector

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

// NewSharedIndexInformer has the shape of cache.NewSharedIndexInformer, for
// drop-in use: it returns steadywatch's own cache.SharedIndexInformer over
// lw (lister.FromListerWatcher). Its handlers are served exactly as by
// client-go's informer (per-handler buffering and ordering, registrations,
// resync, transform, indexers, tombstones), and its store is filled by
// reflector.New, so every list and watch gets this package's guarantees:
// the KEP-2523 fallbacks on every list, no list or event older than the
// store applied, stall detection, the backoff between relists that follow
// each other without an event, and a relist applied object by object as
// it arrives (its handlers get per-object adds, updates and tombstoned
// deletes, and the informer never holds its old contents and the new list
// at once). docs/informer.md lists where the handler calls differ from
// client-go's informer, and why.
func NewSharedIndexInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return NewSharedIndexInformerWithOptions(lw, exampleObject, cache.SharedIndexInformerOptions{
		ResyncPeriod: defaultEventHandlerResyncPeriod,
		Indexers:     indexers,
	}, lister.Options{})
}

// NewSharedIndexInformerWithOptions is NewSharedIndexInformer with client-go's
// informer options and the lister's options (Server, Metrics, Name, ...).
//
// lo is resolved with exampleObject (lister.Options.Resolve): an empty
// Resource and Name are derived from it, and the Server is scoped to its
// group/version. Every field of lo is honoured.
func NewSharedIndexInformerWithOptions(lw cache.ListerWatcher, exampleObject runtime.Object, o cache.SharedIndexInformerOptions, lo lister.Options) cache.SharedIndexInformer {
	return newInformer(lister.FromListerWatcher(lw), exampleObject, o, Options{Lister: lo}, pathSharedIndexInformer)
}
