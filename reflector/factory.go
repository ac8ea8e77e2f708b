package reflector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
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
	// Lister configures the lister (Server, Metrics, Policy, ...). Leave
	// Resource and Name empty: they are derived from the example object
	// ("v1/configmaps").
	Lister lister.Options
}

// FactoryInformer returns, for a typed object of client-go's clientset
// (&corev1.ConfigMap{}, &appsv1.Deployment{}, ...), a NewInformerFunc for
// SharedInformerFactory.InformerFor: client-go's own SharedIndexInformer over
// a steadywatch lister.ListerWatcher on the clientset's typed client for that
// resource, with the namespace index the factory's typed Lister uses for a
// namespaced resource. Registered before the factory's typed accessor is
// first used, it is the informer behind that accessor's Informer() and
// Lister():
//
//	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns), informers.WithTweakListOptions(tweak))
//	factory.InformerFor(&corev1.ConfigMap{}, reflector.FactoryInformer(&corev1.ConfigMap{}, reflector.FactoryOptions{Namespace: ns, TweakListOptions: tweak}))
//	configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() run on steadywatch
//
// The factory does not tell a NewInformerFunc its namespace or tweak
// function (both are unexported fields of client-go's factory), so o
// repeats them: pass the same values. The factory's resync period (default
// and WithCustomResyncConfig) and WithTransform apply as to its own
// informers; its WithInformerName metrics identity does not.
//
// The typed client is found by the object's list type on
// kubernetes.Interface (CoreV1().ConfigMaps(ns) for *corev1.ConfigMapList),
// so every resource of the clientset works, and any kubernetes.Interface
// the factory holds (a client-go fake clientset too: its declaration that it
// cannot stream lists is kept, so informers in unit tests list at once).
// FactoryInformer panics with an *UnsupportedTypeError when exampleObject
// is not such a type (a CRD's Go type: use NewSharedIndexInformer over a
// ListerWatcher of its own client); FactoryInformerFunc returns that error
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
	p, err := typedClientPathOf(exampleObject)
	if err != nil {
		return nil, err
	}
	lo := o.Lister
	if lo.Resource.Empty() {
		lo.Resource, _ = lister.ResourceOf(exampleObject)
	}
	indexers := cache.Indexers{}
	if p.namespaced {
		indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	}
	return func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		var lw cache.ListerWatcher = lister.NewListerWatcher(p.client(cs, o.Namespace), lo)
		if o.TweakListOptions != nil {
			lw = tweaked{ListerWatcher: lw.(*lister.ListerWatcher), tweak: o.TweakListOptions}
		}
		return cache.NewSharedIndexInformerWithOptions(lw, exampleObject, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     indexers,
		})
	}, nil
}

// UnsupportedTypeError is FactoryInformerFunc's error for an object that is
// not a resource of client-go's typed clientset.
type UnsupportedTypeError struct {
	Type   string // the Go type, e.g. "*v1.Widget"
	Reason string
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("reflector: %s is not a resource of client-go's typed clientset (kubernetes.Interface): %s", e.Type, e.Reason)
}

// ErrUnsupportedType matches every *UnsupportedTypeError (errors.Is).
var ErrUnsupportedType = errors.New("not a resource of client-go's typed clientset")

// Is makes errors.Is(err, ErrUnsupportedType) true.
func (e *UnsupportedTypeError) Is(target error) bool { return target == ErrUnsupportedType }

// typedClientPath is where a resource's typed client is on
// kubernetes.Interface: cs.<group>().<resource>(namespace) or, cluster-scoped,
// cs.<group>().<resource>().
type typedClientPath struct {
	group, resource string
	namespaced      bool
	listType        reflect.Type // e.g. *corev1.ConfigMapList
}

// typedClientPathOf finds the typed client whose List returns the list type
// of obj's kind, by the method types of kubernetes.Interface alone (nothing
// is called). A Go list type belongs to one group/version, so at most one
// client matches.
func typedClientPathOf(obj runtime.Object) (typedClientPath, error) {
	name := fmt.Sprintf("%T", obj)
	if obj == nil {
		return typedClientPath{}, &UnsupportedTypeError{Type: name, Reason: "nil example object"}
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(kinds) == 0 {
		return typedClientPath{}, &UnsupportedTypeError{Type: name, Reason: "not registered in k8s.io/client-go/kubernetes/scheme"}
	}
	gvk := kinds[0]
	list, err := scheme.Scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return typedClientPath{}, &UnsupportedTypeError{Type: name, Reason: "no " + gvk.Kind + "List in the scheme"}
	}
	listType := reflect.TypeOf(list)
	clientsetType := reflect.TypeFor[kubernetes.Interface]()
	var found []typedClientPath
	for i := range clientsetType.NumMethod() {
		gm := clientsetType.Method(i)
		if gm.Type.NumIn() != 0 || gm.Type.NumOut() != 1 || gm.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		group := gm.Type.Out(0)
		for j := range group.NumMethod() {
			rm := group.Method(j)
			namespaced := rm.Type.NumIn() == 1 && rm.Type.In(0).Kind() == reflect.String
			if (!namespaced && rm.Type.NumIn() != 0) || rm.Type.NumOut() != 1 {
				continue
			}
			if c := rm.Type.Out(0); listsAndWatches(c, listType) {
				found = append(found, typedClientPath{group: gm.Name, resource: rm.Name, namespaced: namespaced, listType: listType})
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return typedClientPath{}, &UnsupportedTypeError{Type: name, Reason: "no typed client lists " + listType.String()}
	default:
		return typedClientPath{}, &UnsupportedTypeError{Type: name, Reason: fmt.Sprintf("%d typed clients list %s", len(found), listType)}
	}
}

// listsAndWatches reports whether the interface type c has
// List(context.Context, metav1.ListOptions) (listType, error) and
// Watch(context.Context, metav1.ListOptions) (watch.Interface, error).
func listsAndWatches(c, listType reflect.Type) bool {
	if c.Kind() != reflect.Interface {
		return false
	}
	is := func(name string, out reflect.Type) bool {
		m, ok := c.MethodByName(name)
		t := m.Type
		return ok && t.NumIn() == 2 && t.In(0) == reflect.TypeFor[context.Context]() && t.In(1) == reflect.TypeFor[metav1.ListOptions]() &&
			t.NumOut() == 2 && t.Out(0) == out && t.Out(1) == reflect.TypeFor[error]()
	}
	return is("List", listType) && is("Watch", reflect.TypeFor[watch.Interface]())
}

// client returns the lister.Client of cs's typed client on path p.
func (p typedClientPath) client(cs kubernetes.Interface, namespace string) lister.Client {
	group := reflect.ValueOf(cs).MethodByName(p.group).Call(nil)[0]
	var args []reflect.Value
	if p.namespaced {
		args = []reflect.Value{reflect.ValueOf(namespace)}
	}
	rc := group.MethodByName(p.resource).Call(args)[0]
	return typedClient{
		list:  rc.MethodByName("List"),
		watch: rc.MethodByName("Watch").Interface().(func(context.Context, metav1.ListOptions) (watch.Interface, error)),
		cs:    cs,
	}
}

// typedClient is a typed client as a lister.Client.
type typedClient struct {
	list  reflect.Value // func(context.Context, metav1.ListOptions) (*XList, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	cs    kubernetes.Interface
}

func (c typedClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	out := c.list.Call([]reflect.Value{reflect.ValueOf(&ctx).Elem(), reflect.ValueOf(o)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	return out[0].Interface().(runtime.Object), nil
}

func (c typedClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.watch(ctx, o)
}

// IsWatchListSemanticsUnSupported forwards the clientset's own declaration
// (client-go's fake clientsets make it), as the factory's informers do
// through cache.ToListWatcherWithWatchListSemantics.
func (c typedClient) IsWatchListSemanticsUnSupported() bool {
	type declares interface{ IsWatchListSemanticsUnSupported() bool }
	d, ok := c.cs.(declares)
	return ok && d.IsWatchListSemanticsUnSupported()
}

// tweaked applies a factory's tweak function to the options client-go's
// reflector passes, before the lister reads them.
type tweaked struct {
	*lister.ListerWatcher
	tweak func(*metav1.ListOptions)
}

func (t tweaked) List(o metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), o)
}

func (t tweaked) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return t.WatchWithContext(context.Background(), o)
}

func (t tweaked) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	t.tweak(&o)
	return t.ListerWatcher.ListWithContext(ctx, o)
}

func (t tweaked) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	t.tweak(&o)
	return t.ListerWatcher.WatchWithContext(ctx, o)
}
