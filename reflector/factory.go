package reflector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

// NewSharedInformerFactory has the signature of client-go's
// informers.NewSharedInformerFactoryWithOptions (and, without options, of
// informers.NewSharedInformerFactory): it returns an
// informers.SharedInformerFactory whose typed informers
// (factory.Core().V1().ConfigMaps(), factory.Apps().V1().Deployments(), ...,
// and ForResource) all run on steadywatch, with lister.Options' defaults.
// Replace informers.NewSharedInformerFactoryWithOptions with it and keep the
// options:
//
//	factory := reflector.NewSharedInformerFactory(cs, 0, informers.WithNamespace(ns), informers.WithTweakListOptions(tweak))
//	configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() run on steadywatch
//
// Every informer lists and watches exactly the factory's scope: its
// WithNamespace namespace and the label and field selectors its
// WithTweakListOptions function sets, read from the options themselves
// (NewSharedInformerFactoryWithOptions says how). A tweak function that
// sets any other list option cannot be honoured, and NewSharedInformerFactory
// panics naming it rather than run with a different scope.
// WithCustomResyncConfig and WithTransform apply as on client-go's factory;
// WithInformerName's metrics identity does not (steadywatch's metrics
// name each informer by its resource, "v1/configmaps").
//
// InformerFor(obj, newFunc) is client-go's: the informer is what newFunc
// builds (use it for a type of another clientset), and a typed accessor
// of its type then returns that informer, as on client-go's factory.
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, options ...informers.SharedInformerOption) informers.SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, lister.Options{}, options...)
}

// NewSharedInformerFactoryWithOptions is NewSharedInformerFactory with
// steadywatch's options (Server, Metrics, Policy, ListGate, ...), which
// every informer of the factory uses; leave o.Resource and o.Name empty:
// each informer derives them from its type ("v1/configmaps").
//
// client-go's options are functions over its factory's unexported fields,
// so the factory's scope is read by running them: they are applied to a
// client-go factory over a clientset that only records requests, and the
// namespace and options of the first list and watch its ConfigMap
// informer sends are the scope, compared with those of a factory without
// options. That runs a stock informer for a moment, and sends nothing to
// client.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, o lister.Options, options ...informers.SharedInformerOption) informers.SharedInformerFactory {
	s, err := observeScope(options)
	if err != nil {
		panic(err)
	}
	f := &sharedInformerFactory{
		factory:   informers.NewSharedInformerFactoryWithOptions(client, defaultResync, options...),
		scope:     s,
		lister:    o,
		namespace: s.namespace,
	}
	f.typed = typedInformers{f}
	return f
}

// scope is what a factory's informers list and watch: client-go's factory
// hands its namespace and tweak function to every typed informer.
type scope struct {
	namespace                    string
	labelSelector, fieldSelector string
}

// tweak sets the scope's selectors, as the factory's tweak function did.
func (s scope) tweak(o *metav1.ListOptions) {
	o.LabelSelector, o.FieldSelector = s.labelSelector, s.fieldSelector
}

// observeScope runs options on a client-go factory over a recording
// clientset and returns the namespace and selectors of the requests its
// ConfigMap informer sends. It fails when the tweak function sets list
// options other than the selectors (compared with a factory without
// options), or sets different selectors on the watch than on the list.
func observeScope(options []informers.SharedInformerOption) (scope, error) {
	base, _ := probeRequests(nil)
	list, w := probeRequests(options)
	s := scope{namespace: list.namespace, labelSelector: list.options.LabelSelector, fieldSelector: list.options.FieldSelector}
	rest, baseRest := list.options, base.options
	rest.LabelSelector, rest.FieldSelector, baseRest.LabelSelector, baseRest.FieldSelector = "", "", "", ""
	if !reflect.DeepEqual(rest, baseRest) {
		return scope{}, fmt.Errorf("steadywatch: the factory's WithTweakListOptions sets list options other than the label and field selectors "+
			"(list options %+v, without the tweak %+v); steadywatch's informers apply only the selectors, so it would not run with the factory's scope", rest, baseRest)
	}
	if w.namespace != list.namespace || w.options.LabelSelector != s.labelSelector || w.options.FieldSelector != s.fieldSelector {
		return scope{}, fmt.Errorf("steadywatch: the factory's options give its watches another scope (namespace %q, selectors %q %q) than its lists (namespace %q, selectors %q %q)",
			w.namespace, w.options.LabelSelector, w.options.FieldSelector, list.namespace, s.labelSelector, s.fieldSelector)
	}
	return s, nil
}

// probeRequest is one list or watch the probe clientset received.
type probeRequest struct {
	namespace string
	options   metav1.ListOptions
}

// probeRequests builds client-go's ConfigMap informer from a factory with
// options over a clientset that answers the first list with an empty list
// and records it and the first watch; it stops the informer once both are
// recorded.
func probeRequests(options []informers.SharedInformerOption) (list, w probeRequest) {
	lists, watches := make(chan probeRequest, 1), make(chan probeRequest, 1)
	cs := probeClientset{core: probeCoreV1{lists: lists, watches: watches}}
	inf := informers.NewSharedInformerFactoryWithOptions(cs, 0, options...).Core().V1().ConfigMaps().Informer()
	// The probe's failed watch is expected: nothing is logged for it.
	_ = inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	list, w = <-lists, <-watches
	cancel()
	<-done
	return list, w
}

// probeClientset is a kubernetes.Interface with only CoreV1().ConfigMaps;
// it declares that it cannot stream lists, so the informer lists.
type probeClientset struct {
	kubernetes.Interface
	core probeCoreV1
}

func (p probeClientset) CoreV1() corev1client.CoreV1Interface { return p.core }
func (probeClientset) IsWatchListSemanticsUnSupported() bool  { return true }

type probeCoreV1 struct {
	corev1client.CoreV1Interface
	lists, watches chan probeRequest
}

func (p probeCoreV1) ConfigMaps(namespace string) corev1client.ConfigMapInterface {
	return probeConfigMaps{p: p, namespace: namespace}
}

type probeConfigMaps struct {
	corev1client.ConfigMapInterface
	p         probeCoreV1
	namespace string
}

func (c probeConfigMaps) List(_ context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
	select {
	case c.p.lists <- probeRequest{namespace: c.namespace, options: o}:
	default:
	}
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

// errProbeDone ends the probe informer's watch.
var errProbeDone = errors.New("steadywatch: scope probe done")

func (c probeConfigMaps) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	select {
	case c.p.watches <- probeRequest{namespace: c.namespace, options: o}:
	default:
	}
	return nil, errProbeDone
}

// sharedInformerFactory is NewSharedInformerFactory's factory: client-go's
// factory holds its informers and starts, waits for and shuts them down;
// the typed accessors build steadywatch's informers through typed.
type sharedInformerFactory struct {
	factory   informers.SharedInformerFactory
	scope     scope
	lister    lister.Options
	namespace string
	typed     internalinterfaces.SharedInformerFactory
}

// typedInformers is the factory the typed accessors call: its InformerFor
// builds steadywatch's informer for the type, in the factory's scope,
// instead of the accessor's stock one.
type typedInformers struct{ f *sharedInformerFactory }

func (t typedInformers) Start(stopCh <-chan struct{})      { t.f.factory.Start(stopCh) }
func (t typedInformers) InformerName() *cache.InformerName { return t.f.factory.InformerName() }
func (t typedInformers) InformerFor(obj runtime.Object, _ internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return t.f.factory.InformerFor(obj, t.f.newInformerFunc(obj))
}

// newInformerFunc returns the NewInformerFunc of steadywatch's informer for
// obj, a type of client-go's typed clientset (every typed accessor's is):
// the typed client of the clientset the factory hands it, in the factory's
// namespace and with its selectors, and the namespace index of the
// accessor's Lister for a namespaced resource.
func (f *sharedInformerFactory) newInformerFunc(obj runtime.Object) internalinterfaces.NewInformerFunc {
	p, err := lister.TypedResourceOf(obj)
	if err != nil {
		panic(fmt.Errorf("steadywatch: a typed informer of the factory: %w", err))
	}
	lo := f.lister.Resolve(obj)
	indexers := cache.Indexers{}
	if p.Namespaced() {
		indexers[cache.NamespaceIndex] = cache.MetaNamespaceIndexFunc
	}
	return func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		var c Client = p.Client(cs, f.scope.namespace)
		if f.scope.labelSelector != "" || f.scope.fieldSelector != "" {
			c = tweaked{Client: c, tweak: f.scope.tweak}
		}
		return newInformer(c, obj, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     indexers,
		}, Options{Lister: lo}, pathInformerFactory)
	}
}

func (f *sharedInformerFactory) Start(stopCh <-chan struct{}) { f.factory.Start(stopCh) }
func (f *sharedInformerFactory) StartWithContext(ctx context.Context) {
	f.factory.StartWithContext(ctx)
}
func (f *sharedInformerFactory) Shutdown()                         { f.factory.Shutdown() }
func (f *sharedInformerFactory) InformerName() *cache.InformerName { return f.factory.InformerName() }

func (f *sharedInformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.factory.WaitForCacheSync(stopCh)
}

func (f *sharedInformerFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return f.factory.WaitForCacheSyncWithContext(ctx)
}

func (f *sharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return f.factory.InformerFor(obj, newFunc)
}

// ForResource returns the typed accessor's informer for resource, as
// client-go's factory does.
func (f *sharedInformerFactory) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	for _, a := range typedAccessors(f) {
		if a.resource == resource {
			return genericInformer{informer: a.informer(), resource: resource.GroupResource()}, nil
		}
	}
	return nil, fmt.Errorf("no informer found for %v", resource)
}

type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.informer }
func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// typedAccessor is one typed informer of a factory:
// factory.<Group>().<Version>().<Resource>().
type typedAccessor struct {
	resource schema.GroupVersionResource
	informer func() cache.SharedIndexInformer
}

// typedAccessors lists every typed informer of f by walking its group,
// version and resource accessors. Each one's resource is its accessor's
// name in lower case, in the group and version client-go's scheme gives its
// type; the type is found with a factory whose InformerFor only records it.
func typedAccessors(f *sharedInformerFactory) []typedAccessor {
	rec := &typeRecorder{}
	probe := &sharedInformerFactory{typed: rec}
	var out []typedAccessor
	groups, probeGroups := reflect.ValueOf(f), reflect.ValueOf(probe)
	for i := range groups.NumMethod() {
		m := groups.Type().Method(i)
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Interface || m.Name == "InformerName" {
			continue
		}
		g, pg := groups.Method(i).Call(nil)[0].Elem(), probeGroups.Method(i).Call(nil)[0].Elem()
		for j := range g.NumMethod() {
			v, pv := g.Method(j).Call(nil)[0].Elem(), pg.Method(j).Call(nil)[0].Elem()
			for k := range v.NumMethod() {
				name := v.Type().Method(k).Name
				acc, pacc := v.Method(k).Call(nil)[0], pv.Method(k).Call(nil)[0]
				rec.obj = nil
				pacc.MethodByName("Informer").Call(nil)
				kinds, _, err := scheme.Scheme.ObjectKinds(rec.obj)
				if rec.obj == nil || err != nil || len(kinds) == 0 {
					continue
				}
				out = append(out, typedAccessor{
					resource: kinds[0].GroupVersion().WithResource(strings.ToLower(name)),
					informer: func() cache.SharedIndexInformer {
						return acc.MethodByName("Informer").Call(nil)[0].Interface().(cache.SharedIndexInformer)
					},
				})
			}
		}
	}
	return out
}

// typeRecorder is a factory whose InformerFor records the type it is asked
// for and builds nothing.
type typeRecorder struct{ obj runtime.Object }

func (*typeRecorder) Start(<-chan struct{})             {}
func (*typeRecorder) InformerName() *cache.InformerName { return nil }
func (r *typeRecorder) InformerFor(obj runtime.Object, _ internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	r.obj = obj
	return nil
}

// The group accessors of client-go's factory, each over typed.

func (f *sharedInformerFactory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Apps() apps.Interface { return apps.New(f.typed, f.namespace, nil) }
func (f *sharedInformerFactory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Batch() batch.Interface { return batch.New(f.typed, f.namespace, nil) }
func (f *sharedInformerFactory) Certificates() certificates.Interface {
	return certificates.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Coordination() coordination.Interface {
	return coordination.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Core() core.Interface { return core.New(f.typed, f.namespace, nil) }
func (f *sharedInformerFactory) Discovery() discovery.Interface {
	return discovery.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Events() events.Interface {
	return events.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Extensions() extensions.Interface {
	return extensions.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Lifecycle() lifecycle.Interface {
	return lifecycle.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Networking() networking.Interface {
	return networking.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Node() node.Interface { return node.New(f.typed, f.namespace, nil) }
func (f *sharedInformerFactory) Policy() policy.Interface {
	return policy.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Rbac() rbac.Interface { return rbac.New(f.typed, f.namespace, nil) }
func (f *sharedInformerFactory) Resource() resource.Interface {
	return resource.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Scheduling() scheduling.Interface {
	return scheduling.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Storage() storage.Interface {
	return storage.New(f.typed, f.namespace, nil)
}
func (f *sharedInformerFactory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f.typed, f.namespace, nil)
}

// tweaked applies a factory's selectors to the options of every list and
// watch the reflector sends, as the factory's own informers apply its tweak
// function. The selectors join the reflector's own (Lister's).
type tweaked struct {
	Client
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
