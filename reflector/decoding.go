package reflector

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/lister"
)

// NewSharedIndexInformerWithDecoding is NewSharedIndexInformerWithOptions
// with its lists sent by steadywatch's own client, built from d for
// exampleObject (lister.Decoding.ClientFor), checked against lw's scope as
// lister.WrapDecoding does: the win in peak heap of the adapters
// that build their own client (FromClientset, FromDynamicConfig,
// FromMetadataConfig; docs/benchmarks.md), for a ListerWatcher built by the
// caller. Watches go through lw unchanged.
//
//	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
//	inf := reflector.NewSharedIndexInformerWithDecoding(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{},
//		lister.Options{}, lister.Decoding{Config: cfg, Namespace: ns})
//
// When no decoding client can be built for exampleObject (a custom
// resource's Go type; an unstructured or metadata object without d.Mapper),
// lists go through lw, as with NewSharedIndexInformerWithOptions: logged
// and counted (reason "no-decoding-client").
func NewSharedIndexInformerWithDecoding(lw cache.ListerWatcher, exampleObject runtime.Object, o cache.SharedIndexInformerOptions, lo lister.Options, d lister.Decoding) cache.SharedIndexInformer {
	dec, err := d.ClientFor(exampleObject)
	return sharedIndexInformerDecoding(lw, exampleObject, o, lo, dec, err)
}

// sharedIndexInformerDecoding is NewSharedIndexInformerWithDecoding with
// the decoding client (or the error that left none) given.
func sharedIndexInformerDecoding(lw cache.ListerWatcher, exampleObject runtime.Object, o cache.SharedIndexInformerOptions, lo lister.Options, dec lister.Client, err error) cache.SharedIndexInformer {
	r := lo.Resolve(exampleObject)
	c := lister.FromListerWatcher(lw)
	if err != nil {
		r.Metrics.Fallback(r.Name, string(reason.NoDecodingClient))
		klog.Background().Info("Informer lists through the caller's ListerWatcher: no item-by-item decoding client",
			"informer", r.Name, "reason", string(reason.NoDecodingClient), "err", err)
	} else {
		// lister.WrapDecoding's client: dec's lists, checked against lw's
		// scope until one matches; lw's watches.
		c = &clients.Scoped{LW: c, Dec: dec, Name: r.Name, Metrics: r.Metrics, Reason: string(reason.DecodingScopeMismatch)}
	}
	return newInformer(c, exampleObject, o, Options{Lister: lo}, pathSharedIndexInformer)
}

// NewInformerFuncWithDecoding is NewInformerFunc whose informers send their
// lists through steadywatch's own client built from d, decoded item by item
// (NewSharedIndexInformerWithDecoding). For controller-runtime, whose
// NewInformer hook receives only a ListerWatcher of its own and the example
// object:
//
//	cache.Options{
//		NewInformer: reflector.NewInformerFuncWithDecoding(lister.Decoding{
//			Config: mgrConfig, Mapper: mapper, // the manager's rest.Config and RESTMapper
//			Namespace: ns, // the one namespace of DefaultNamespaces, "" without it
//		}, lister.Options{}),
//	}
//
// A cache with several namespaces (DefaultNamespaces with more than one)
// builds one informer per namespace through the same hook, which does not
// say which: use NewInformerFunc there, or one Decoding per cache. The
// first list of each informer is checked against controller-runtime's own
// (lister.WrapDecoding), so a namespace or selector that does not match
// costs the win, never the cache's correctness.
func NewInformerFuncWithDecoding(d lister.Decoding, o lister.Options) func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer {
	return func(lw cache.ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		return NewSharedIndexInformerWithDecoding(lw, exampleObject, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     indexers,
		}, o, d)
	}
}
