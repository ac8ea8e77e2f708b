package reflector

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

// FactoryOptions are what a client-go SharedInformerFactory informer needs
// beyond the clientset and resync period the factory hands to a
// NewInformerFunc. The zero value lists and watches every namespace,
// unfiltered, with lister.Options' defaults.
type FactoryOptions struct {
	// Namespace is the factory's informers.WithNamespace value: a namespaced
	// resource is listed and watched in it. Default "" (metav1.NamespaceAll):
	// every namespace. Ignored for cluster-scoped resources, as by the
	// factory.
	Namespace string
	// TweakListOptions is the factory's informers.WithTweakListOptions value.
	// It is applied where the factory's own informers apply it: to the
	// options of every list and watch client-go's reflector asks for, before
	// steadywatch reads them, so a selector it sets reaches every request
	// (each page, retry and fallback) and a limit it sets paginates. Default
	// nil: none.
	TweakListOptions func(*metav1.ListOptions)
	// Lister configures the lister (Server, Metrics, Policy, ...); every
	// field is honoured. It is resolved with the example object
	// (lister.Options.Resolve): leave Resource and Name empty and they are
	// derived from it ("v1/configmaps"). Its selectors apply together with
	// any TweakListOptions sets. A ListGate set here is shared by every
	// informer built from these options; give the same gate to the other
	// FactoryInformer calls (and reflectors) of the process.
	Lister lister.Options
}

// FactoryInformer returns, for a typed object of client-go's clientset
// (&corev1.ConfigMap{}, &appsv1.Deployment{}, ...), a NewInformerFunc for
// SharedInformerFactory.InformerFor: steadywatch's own SharedIndexInformer
// (NewSharedIndexInformer: client-go's handler semantics) whose store
// reflector.New fills from the clientset's typed client for that resource, with the namespace index the factory's typed Lister uses for a
// namespaced resource. Registered before the factory's typed accessor is
// first used, it is the informer behind that accessor's Informer() and
// Lister(). Register it with Adopt or MustAdopt, which fail when the
// factory already built a stock informer for the type (client-go's factory
// keeps the first informer per type, so a bare factory.InformerFor call made
// after the typed accessor was used silently keeps stock client-go):
//
//	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns), informers.WithTweakListOptions(tweak))
//	reflector.MustAdopt(factory, &corev1.ConfigMap{}, reflector.FactoryOptions{Namespace: ns, TweakListOptions: tweak})
//	configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() run on steadywatch
//
// The factory does not tell a NewInformerFunc its namespace or tweak
// function (both are unexported fields of client-go's factory), so o
// repeats them: pass the same values. The factory's resync period (default
// and WithCustomResyncConfig) and WithTransform apply as to its own
// informers; its WithInformerName metrics identity does not.
//
// The typed client is found by the object's list type on
// kubernetes.Interface (CoreV1().ConfigMaps(ns) for *corev1.ConfigMapList;
// lister.FromClientset, so its lists are decoded item by item as they
// arrive), so every resource of the clientset works, and any kubernetes.Interface
// the factory holds (a client-go fake clientset too: its declaration that it
// cannot stream lists is kept, so informers in unit tests list at once).
// FactoryInformer panics with an *UnsupportedTypeError when exampleObject
// is not such a type (a CRD's Go type: use NewSharedIndexInformer over a
// ListerWatcher of its own client, lister.FromRESTClient for a generated
// clientset); FactoryInformerFunc returns that error
// instead.
func FactoryInformer(exampleObject runtime.Object, o FactoryOptions) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	f, err := FactoryInformerFunc(exampleObject, o)
	if err != nil {
		panic(err)
	}
	return f
}

// FactoryInformerFunc is FactoryInformer returning its error.
func FactoryInformerFunc(exampleObject runtime.Object, o FactoryOptions) (func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer, error) {
	p, err := lister.TypedResourceOf(exampleObject)
	if err != nil {
		return nil, err
	}
	lo := o.Lister.Resolve(exampleObject)
	indexers := cache.Indexers{}
	if p.Namespaced() {
		indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	}
	return func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		c := p.Client(cs, o.Namespace)
		if o.TweakListOptions != nil {
			c = tweaked{Client: c, tweak: o.TweakListOptions}
		}
		return newInformer(c, exampleObject, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     indexers,
		}, Options{Lister: lo}, PathFactoryInformer)
	}, nil
}

// UnsupportedTypeError is FactoryInformerFunc's error for an object that is
// not a resource of client-go's typed clientset (lister.TypedResourceOf's).
type UnsupportedTypeError = lister.UnsupportedTypeError

// ErrUnsupportedType matches every *UnsupportedTypeError (errors.Is).
var ErrUnsupportedType = lister.ErrUnsupportedType

// tweaked applies a factory's tweak function to the options of every list
// and watch the reflector sends, as the factory's own informers do. The
// selectors it sets join the reflector's own (Lister's), as on the factory's
// informers, where the tweak runs before steadywatch reads the options.
type tweaked struct {
	lister.Client
	tweak func(*metav1.ListOptions)
}

func (t tweaked) apply(o metav1.ListOptions) metav1.ListOptions {
	ls, fs := o.LabelSelector, o.FieldSelector
	o.LabelSelector, o.FieldSelector = "", ""
	t.tweak(&o)
	o.LabelSelector, o.FieldSelector = joinSelectors(o.LabelSelector, ls), joinSelectors(o.FieldSelector, fs)
	return o
}

func joinSelectors(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return a + "," + b
}

func (t tweaked) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return t.Client.List(ctx, t.apply(o))
}

func (t tweaked) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return t.Client.Watch(ctx, t.apply(o))
}

// IsWatchListSemanticsUnSupported forwards the client's declaration (a
// fake clientset's: no streaming lists).
func (t tweaked) IsWatchListSemanticsUnSupported() bool {
	d, ok := t.Client.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && d.IsWatchListSemanticsUnSupported()
}
