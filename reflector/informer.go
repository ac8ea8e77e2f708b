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

// NewInformerFunc returns a function with exactly the signature of
// controller-runtime's cache.Options.NewInformer (and of
// cache.NewSharedIndexInformer), so a manager runs every informer on
// steadywatch with one expression:
//
//	cache.Options{NewInformer: reflector.NewInformerFunc(lister.Options{Server: server, Metrics: recorder})}
//
// Each informer it builds is NewSharedIndexInformerWithOptions over the
// ListerWatcher controller-runtime hands it, with o. Leave o.Name and
// o.Resource empty: each informer derives them from its example object
// (lister.Options.Resolve: "v1/configmaps"; a type outside client-go's
// scheme without apiVersion/kind is named by its Go type, e.g.
// "*v1.Widget"), so the logs and metrics of different resources stay apart;
// set, they apply to every informer the function builds. With the zero
// lister.Options, NewSharedIndexInformer itself has that signature:
// cache.Options{NewInformer: reflector.NewSharedIndexInformer}.
//
// The informers' lists are controller-runtime's own ListerWatcher's, read
// whole and then decoded (then applied to the store object by object); NewInformerFuncWithDecoding decodes them item by item, given the
// manager's configuration.
func NewInformerFunc(o lister.Options) func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer {
	return func(lw cache.ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		return NewSharedIndexInformerWithOptions(lw, exampleObject, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     indexers,
		}, o)
	}
}
