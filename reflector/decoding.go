package reflector

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/lister"
)

// pathInformerFor: NewInformerFor (Adoption.Path).
const pathInformerFor = "NewInformerFor"

// NewInformerFor returns controller-runtime's cache.Options.NewInformer
// hook (it has the signature of cache.NewSharedIndexInformer) for a manager
// built from cfg, so the manager runs every informer on steadywatch with
// every guarantee in one line:
//
//	cache.Options{NewInformer: reflector.NewInformerFor(cfg)}
//
// Each informer is steadywatch's own cache.SharedIndexInformer (see
// NewSharedIndexInformer) whose lists and watches are sent by steadywatch's
// own client, built from cfg: no retry of its own inside client-go
// (fallback.NoHiddenRetries), lists decoded item by item as they arrive,
// and a RESTMapper that reads the server's discovery on first need, for
// *unstructured.Unstructured and *metav1.PartialObjectMetadata objects.
//
// The hook says nothing of an informer's scope but the ListerWatcher it
// hands over, so each informer checks it before it lists: limit=1 lists of
// steadywatch's client (for every namespace, and for the namespace of the
// first object the hook's ListerWatcher lists) against the hook's
// ListerWatcher's newest limit=1 list, at its resourceVersion (the hook's
// is never asked for a list at a resourceVersion, which its client would
// retry on its own where a lagging server answers 504). So a cache limited to one or
// several namespaces (DefaultNamespaces) gets the right client for each of
// its informers. Where no client of steadywatch lists what the hook's
// ListerWatcher lists (a label or field selector of ByObject or
// DefaultLabelSelector, a custom resource's Go type), that informer lists
// and watches through the hook's ListerWatcher, read whole and with
// client-go's retries, logged and counted (reasons
// "decoding-scope-mismatch", "no-decoding-client"). While
// the lists cannot tell (the hook's ListerWatcher lists nothing, or every
// object is in one namespace), or a read of the check fails (a lagging
// server's 504 at a resourceVersion), a list goes through it and the next
// list checks again. A list that goes through the hook's ListerWatcher is
// the newest, in pages, never one at a resourceVersion (which its client
// would retry on its own where a lagging server answers 504).
//
// o, at most one (it panics with more), applies to every informer; its
// zero value without. Leave o.Name and o.Resource empty: each informer
// derives them from its example object (lister.Options.Resolve).
func NewInformerFor(cfg *rest.Config, opts ...lister.Options) func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer {
	var o lister.Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		panic(fmt.Sprintf("reflector.NewInformerFor: %d lister.Options given, want at most one", len(opts)))
	}
	mapper := sync.OnceValue(func() meta.RESTMapper {
		dc, err := discovery.NewDiscoveryClientForConfig(fallback.NoHiddenRetries(cfg))
		if err != nil {
			return nil // ClientFor says no mapper; the informer falls back, logged and counted.
		}
		return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	})
	return func(lw cache.ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		return informerFor(lw, exampleObject, cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers}, o,
			func(namespace string) (clients.Lister, error) {
				d := lister.Decoding{Config: cfg, Namespace: namespace}
				switch exampleObject.(type) {
				case runtime.Unstructured, *metav1.PartialObjectMetadata:
					d.Mapper = mapper() // only these need one: discovery is read on first need
				}
				return d.ClientFor(exampleObject)
			})
	}
}

// informerFor is the informer NewInformerFor builds, with newDec building
// steadywatch's client for the example object's resource in a namespace.
func informerFor(lw cache.ListerWatcher, exampleObject runtime.Object, io cache.SharedIndexInformerOptions, o lister.Options, newDec func(namespace string) (clients.Lister, error)) *adoptedInformer {
	r := o.Resolve(exampleObject)
	c := &clients.Inferred{
		LW:             lister.FromListerWatcher(lw),
		NewDec:         newDec,
		Name:           r.Name,
		Metrics:        r.Metrics,
		MismatchReason: string(reason.DecodingScopeMismatch),
		NoClientReason: string(reason.NoDecodingClient),
	}
	return newInformer(c, exampleObject, io, Options{Lister: o}, pathInformerFor)
}
