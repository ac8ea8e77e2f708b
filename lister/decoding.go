package lister

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
)

// Decoding is what steadywatch needs to send the lists of a caller's
// cache.ListerWatcher itself, decoding them item by item as they arrive
// (FromClientset, FromDynamicConfig, FromMetadataConfig), on the adoption
// paths that otherwise only receive the caller's ListerWatcher:
// WrapDecoding, reflector.NewSharedIndexInformerWithDecoding and
// reflector.NewInformerFuncWithDecoding (controller-runtime's
// cache.Options.NewInformer). A ListerWatcher is a pair of functions: the
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
// ReasonDecodingScopeMismatch), so the cache never holds objects lw does
// not list. A lw that filters its own lists (shard.Wrap) is always listed
// through: its lists are not decoded item by item.
func WrapDecoding(lw cache.ListerWatcher, dec Client, o Options) *ListerWatcher {
	c := &decodingClient{lwClient: FromListerWatcher(lw).(lwClient), dec: dec}
	slw := NewListerWatcher(c, o)
	c.o = slw.l.o
	return slw
}

// decodingClient lists through dec, checked once against lw's scope, and
// watches through lw.
type decodingClient struct {
	lwClient
	dec Client
	o   Options // resolved: Name and Metrics

	confirmed atomic.Bool  // a list of dec matched lw's scope
	mismatch  atomic.Bool  // one did not: every list goes through lw
	unchecked atomic.Int32 // checks that failed (an error, not a mismatch)
}

// maxUncheckedLists is how many lists of dec may go out while the check
// fails (the caller's server refuses the limit=1 list at that
// resourceVersion) before lists go through lw: never an unbounded number of
// extra requests, never a scope left unchecked for good.
const maxUncheckedLists = 3

func (c *decodingClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if c.mismatch.Load() {
		return c.lwClient.List(ctx, o)
	}
	if c.lwClient.PipelineFilter() != nil {
		// lw filters what it lists itself (shard.Wrap: a shardSelector, and
		// the hash range applied on the client where the server ignores
		// it). dec's lists carry neither, and the scope check cannot see it:
		// lw's limit=1 page keeps the server's remainingItemCount.
		c.mismatch.Store(true)
		c.o.Metrics.Fallback(c.o.Name, string(ReasonDecodingScopeMismatch))
		klog.FromContext(ctx).Info("The caller's ListerWatcher filters its own lists; listing through it from now on, not decoded item by item",
			"lister", c.o.Name, "reason", string(ReasonDecodingScopeMismatch))
		return c.lwClient.List(ctx, o)
	}
	obj, err := c.dec.List(ctx, o)
	if err != nil || c.confirmed.Load() || o.Continue != "" {
		return obj, err
	}
	log := klog.FromContext(ctx).WithValues("lister", c.o.Name)
	detail, err := c.checkScope(ctx, obj, o)
	switch {
	case err != nil && c.unchecked.Add(1) < maxUncheckedLists:
		// Not confirmed: the next list checks again.
		log.V(2).Info("could not check the decoding client's scope against the caller's ListerWatcher; checking on the next list", "err", err)
		return obj, nil
	case err != nil:
		detail = fmt.Sprintf("the scope check failed %d times: %v", maxUncheckedLists, err)
	case detail == "":
		c.confirmed.Store(true)
		log.V(2).Info("the decoding client lists what the caller's ListerWatcher lists; lists are decoded item by item")
		return obj, nil
	}
	c.mismatch.Store(true)
	c.o.Metrics.Fallback(c.o.Name, string(ReasonDecodingScopeMismatch))
	log.Info("The decoding client does not list what the caller's ListerWatcher lists; listing through the caller's ListerWatcher from now on",
		"reason", string(ReasonDecodingScopeMismatch), "detail", detail)
	return c.lwClient.List(ctx, o)
}

// checkScope compares list (dec's answer to o) with a limit=1 list of lw at
// the same resourceVersion, and returns what differs ("" when nothing).
func (c *decodingClient) checkScope(ctx context.Context, list runtime.Object, o metav1.ListOptions) (string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	p := o
	// A resourceVersion with a limit and no resourceVersionMatch is Exact on
	// every apiserver (the legacy form, before v1.19 the only one).
	p.Limit, p.Continue, p.ResourceVersion, p.ResourceVersionMatch = 1, "", lm.GetResourceVersion(), ""
	probe, err := c.lwClient.List(ctx, p)
	if err != nil {
		return "", err
	}
	pm, err := meta.ListAccessor(probe)
	if err != nil {
		return "", err
	}
	mine, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return "", err
	}
	theirs, err := meta.ExtractListWithAlloc(probe)
	if err != nil {
		return "", err
	}
	if len(theirs) > 0 {
		k, _ := cache.MetaNamespaceKeyFunc(theirs[0])
		found := false
		for _, obj := range mine {
			if mk, _ := cache.MetaNamespaceKeyFunc(obj); mk == k {
				found = true
				break
			}
		}
		if !found {
			return fmt.Sprintf("the caller's ListerWatcher lists %s, which the decoding client's list does not hold", k), nil
		}
	}
	myTotal, myKnown := listTotal(lm, len(mine))
	theirTotal, theirKnown := listTotal(pm, len(theirs))
	switch {
	case myKnown && theirKnown && myTotal != theirTotal:
		return fmt.Sprintf("the caller's ListerWatcher lists %d objects at resourceVersion %s, the decoding client %d", theirTotal, lm.GetResourceVersion(), myTotal), nil
	case !theirKnown && o.LabelSelector == "" && o.FieldSelector == "":
		// An apiserver leaves remainingItemCount out of a list with a
		// selector: lw sets one that o does not.
		return "the caller's ListerWatcher lists with a selector the decoding client does not have (set it in lister.Options)", nil
	}
	return "", nil
}

// listTotal returns the number of objects a list (page) with n items
// stands for, and whether it is known: a list without a continue token
// holds them all, a page tells the rest in remainingItemCount (left out by
// an apiserver when the list has a selector).
func listTotal(l metav1.ListInterface, n int) (int64, bool) {
	if l.GetContinue() == "" {
		return int64(n), true
	}
	if r := l.GetRemainingItemCount(); r != nil {
		return int64(n) + *r, true
	}
	return 0, false
}

func (c *decodingClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.lwClient.Watch(ctx, o)
}
