package lister

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// Decoding is what steadywatch needs to send the lists of a caller's
// cache.ListerWatcher itself, decoding them item by item as they arrive
// (FromClientset, FromDynamicConfig, FromMetadataConfig), on the adoption
// paths that otherwise only receive the caller's ListerWatcher:
// WrapDecoding (reflector.NewInformerFor builds its Decoding itself, for
// controller-runtime's cache.Options.NewInformer). A ListerWatcher is a pair of functions: the
// configuration, namespace and selectors inside them cannot be read, so
// Decoding repeats what they hold.
type Decoding struct {
	// Config is the REST configuration the caller's ListerWatcher was built
	// from (controller-runtime: the manager's GetConfig()). Required.
	Config *rest.Config
	// Namespace is the namespace the caller's ListerWatcher lists; "" for
	// every namespace (and for a cluster-scoped resource, where it is
	// ignored). controller-runtime: the one namespace of
	// cache.Options.DefaultNamespaces, "" without it.
	Namespace string
	// Mapper maps an example object's kind to its resource for objects
	// outside client-go's typed clientset (*unstructured.Unstructured,
	// *metav1.PartialObjectMetadata). controller-runtime: the manager's
	// GetRESTMapper(). Default nil: such objects keep the caller's lists.
	Mapper meta.RESTMapper
}

// ErrNoDecodingClient matches the error of Decoding.ClientFor for an
// object steadywatch cannot build a decoding client for.
var ErrNoDecodingClient = errors.New("lister: no item-by-item decoding client for this object")

// ClientFor returns steadywatch's decoding Client for exampleObject's
// resource in d.Namespace: FromClientset for a resource of client-go's
// typed clientset (&corev1.ConfigMap{}), FromDynamicConfig for an
// *unstructured.Unstructured and FromMetadataConfig for a
// *metav1.PartialObjectMetadata (both with their apiVersion and kind set,
// mapped to a resource by d.Mapper; the metadata list's items get that
// apiVersion and kind, as controller-runtime's own metadata lists do). It
// fails with an error matching ErrNoDecodingClient for any other object (a
// custom resource's Go type: use FromRESTClient with its generated
// clientset and WrapDecoding).
func (d Decoding) ClientFor(exampleObject runtime.Object) (Client, error) {
	if d.Config == nil {
		return nil, fmt.Errorf("%w: Decoding.Config is nil", ErrNoDecodingClient)
	}
	switch exampleObject.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		gvk := exampleObject.GetObjectKind().GroupVersionKind()
		if gvk.Empty() || d.Mapper == nil {
			return nil, fmt.Errorf("%w: %T needs its apiVersion and kind and a Decoding.Mapper", ErrNoDecodingClient, exampleObject)
		}
		m, err := d.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoDecodingClient, err)
		}
		ns := d.Namespace
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		if _, ok := exampleObject.(runtime.Unstructured); ok {
			return FromDynamicConfig(d.Config, m.Resource, ns)
		}
		c, err := FromMetadataConfig(d.Config, m.Resource, ns)
		if err != nil {
			return nil, err
		}
		return metadataKinded{Client: c, gvk: gvk}, nil
	}
	t, err := TypedResourceOf(exampleObject)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDecodingClient, err)
	}
	cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(d.Config))
	if err != nil {
		return nil, err
	}
	return t.Client(cs, d.Namespace), nil
}

// metadataKinded sets the example's apiVersion and kind on the items of a
// metadata list (the server answers them as PartialObjectMetadata).
type metadataKinded struct {
	Client
	gvk schema.GroupVersionKind
}

func (c metadataKinded) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := c.Client.List(ctx, o)
	if l, ok := obj.(*metav1.PartialObjectMetadataList); ok {
		for i := range l.Items {
			l.Items[i].SetGroupVersionKind(c.gvk)
		}
	}
	return obj, err
}

// WrapDecoding is Wrap, with every list sent by dec — steadywatch's own
// client for the same resource, namespace and selectors (Decoding.ClientFor,
// FromClientset, FromRESTClient, FromDynamicConfig, FromMetadataConfig) —
// so that it is decoded item by item as it arrives instead of read whole
// and then decoded, which lowers the peak heap of a sync that lists
// (docs/benchmarks.md). Watches go through lw unchanged.
//
//	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
//	dec, err := lister.Decoding{Config: cfg, Namespace: ns}.ClientFor(&corev1.ConfigMap{})
//	slw := lister.WrapDecoding(lw, dec, lister.Options{})
//
// Selectors that lw sets inside its own functions do not reach dec: set
// them in o (LabelSelector, FieldSelector), which applies them to both.
// The first list (and every list until one is confirmed) is checked
// against lw with one more request, a limit=1 list through lw at the
// resourceVersion dec's list was served at: its first object must be in
// dec's list and the number of objects it reports must match. When it is
// not (another namespace, a selector only lw sets), or the check failed on
// three lists, lists go through lw from then on, counted and logged (reason
// "decoding-scope-mismatch"), so the cache never holds objects lw does
// not list. A lw that filters its own lists (shard.Wrap) is always listed
// through: its lists are not decoded item by item.
func WrapDecoding(lw cache.ListerWatcher, dec Client, o Options) *ListerWatcher {
	c := &clients.Scoped{LW: FromListerWatcher(lw), Dec: dec, Reason: string(reason.DecodingScopeMismatch)}
	slw := NewListerWatcher(c, o)
	c.Name, c.Metrics = slw.l.o.Name, slw.l.o.Metrics
	return slw
}
