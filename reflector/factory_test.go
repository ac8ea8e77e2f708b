package reflector

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// namedRecorder records the metric name of every list call.
type namedRecorder struct {
	metricsnop.Nop
	mu    sync.Mutex
	lists []string
}

func (r *namedRecorder) List(name, _, _ string) {
	r.mu.Lock()
	r.lists = append(r.lists, name)
	r.mu.Unlock()
}
func (r *namedRecorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(r.lists)))
}

// requestLog records the namespace and options of every list and watch a
// fake clientset receives.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "verb ns labelSelector fieldSelector"
}

func (l *requestLog) install(cs *fake.Clientset) {
	cs.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l.add("list", a.GetNamespace(), a.(k8stesting.ListActionImpl).ListOptions)
		return false, nil, nil
	})
	cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		l.add("watch", a.GetNamespace(), a.(k8stesting.WatchActionImpl).ListOptions)
		return false, nil, nil
	})
}

func (l *requestLog) add(verb, ns string, o metav1.ListOptions) {
	l.mu.Lock()
	l.reqs = append(l.reqs, strings.TrimSpace(verb+" "+ns+" "+o.LabelSelector+" "+o.FieldSelector))
	l.mu.Unlock()
}

func (l *requestLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

func labelled(ns, name, team string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if team != "" {
		cm.Labels = map[string]string{"team": team}
	}
	return cm
}

// The case: a factory with a namespace and a tweak function. Every
// list and watch its typed informer sends is in the factory's namespace with
// the tweak's selectors, the typed Lister holds only what matches, and the
// informer is steadywatch's (its lister's metrics name the resource).
// Building the factory sends nothing to the clientset.
func TestSharedInformerFactoryRunsInTheFactoryScope(t *testing.T) {
	cs := fake.NewClientset(
		labelled("a", "blue-1", "blue"), labelled("a", "red-1", "red"), labelled("a", "plain", ""),
		labelled("b", "blue-2", "blue"),
	)
	var log requestLog
	log.install(cs)
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "team=blue"; o.FieldSelector = "metadata.name!=x" }
	rec := &namedRecorder{}

	factory := NewSharedInformerFactoryWithOptions(cs, 0, lister.Options{Metrics: rec},
		informers.WithNamespace("a"), informers.WithTweakListOptions(tweak))
	if r := log.get(); len(r) != 0 {
		t.Fatalf("building the factory sent %v to the clientset", r)
	}
	configMaps := factory.Core().V1().ConfigMaps()
	if _, ok := AdoptionOf(configMaps.Informer()); !ok {
		t.Fatal("the typed accessor's informer is not steadywatch's")
	}
	testfake.StartFactory(t, factory)
	keys := configMaps.Informer().GetStore().ListKeys()
	if !slices.Equal(keys, []string{"a/blue-1"}) {
		t.Fatalf("store holds %v; want only a/blue-1 (namespace a, team=blue)", keys)
	}
	got, err := configMaps.Lister().ConfigMaps("a").List(labels.Everything())
	if err != nil || len(got) != 1 || got[0].Name != "blue-1" {
		t.Fatalf("typed Lister has %v (err %v); want only a/blue-1", got, err)
	}
	testfake.WaitFor(t, "a watch", func() bool { return slices.ContainsFunc(log.get(), func(r string) bool { return r[:5] == "watch" }) })
	for _, r := range log.get() {
		if r != "list a team=blue metadata.name!=x" && r != "watch a team=blue metadata.name!=x" {
			t.Errorf("request %q; want every list and watch in namespace a with the tweak's selectors", r)
		}
	}
	if n := rec.names(); !slices.Equal(n, []string{"v1/configmaps"}) {
		t.Errorf("lists recorded under %v; want [v1/configmaps] (steadywatch's lister served the factory's informer)", n)
	}
	if _, ok := configMaps.Informer().GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Error("no namespace index")
	}
}

// Every typed informer of the factory, and ForResource's, runs on
// steadywatch, in every group and version client-go's factory has; each
// resource name is one client-go's own factory's ForResource knows, and
// ForResource returns the typed accessor's informer.
func TestSharedInformerFactoryEveryTypedInformerRunsOnSteadywatch(t *testing.T) {
	cs := fake.NewClientset()
	f := NewSharedInformerFactory(cs, 0, informers.WithNamespace("a"))
	stock := informers.NewSharedInformerFactory(cs, 0)
	accessors := typedAccessors(f.(*sharedInformerFactory))
	if len(accessors) < 100 {
		t.Fatalf("%d typed accessors found; client-go v0.37 has more than 100", len(accessors))
	}
	for _, a := range accessors {
		inf := a.informer()
		if ad, ok := AdoptionOf(inf); !ok || ad.Path != pathInformerFactory {
			t.Errorf("%v: informer %T is not the factory's steadywatch informer", a.resource, inf)
		}
		if _, err := stock.ForResource(a.resource); err != nil {
			t.Errorf("%v: client-go's factory has no such resource: %v", a.resource, err)
		}
		g, err := f.ForResource(a.resource)
		if err != nil || g.Informer().GetIndexer() != inf.GetIndexer() {
			t.Errorf("%v: ForResource (err %v) does not return the typed accessor's informer", a.resource, err)
		}
	}
	if _, err := f.ForResource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}); err == nil {
		t.Error("ForResource found an informer for a resource outside the clientset")
	}
}

// The scope is read from client-go's options as they run: a tweak function
// that sets a list option other than the selectors cannot be honoured, and
// the constructor panics instead of running with another scope.
func TestSharedInformerFactoryRejectsATweakBeyondSelectors(t *testing.T) {
	for name, tweak := range map[string]func(*metav1.ListOptions){
		"limit":   func(o *metav1.ListOptions) { o.Limit = 7 },
		"timeout": func(o *metav1.ListOptions) { o.LabelSelector = "a=b"; o.TimeoutSeconds = new(int64) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Error("no panic")
				}
			}()
			NewSharedInformerFactory(fake.NewClientset(), 0, informers.WithTweakListOptions(tweak))
		})
	}
	s, err := observeScope([]informers.SharedInformerOption{informers.WithNamespace("n"), informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=x"
	})})
	if want := (scope{namespace: "n", fieldSelector: "spec.nodeName=x"}); err != nil || s != want {
		t.Fatalf("observeScope = %+v, %v; want %+v", s, err, want)
	}
}

// InformerFor is client-go's: the informer is newFunc's, and the typed
// accessor of its type returns it, as on client-go's factory.
func TestSharedInformerFactoryInformerForIsTheCallers(t *testing.T) {
	cs := fake.NewClientset()
	f := NewSharedInformerFactory(cs, 0, informers.WithNamespace("a"))
	own := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Secret{}, 0, cache.Indexers{})
	got := f.InformerFor(&corev1.Secret{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return own })
	if got != own || f.Core().V1().Secrets().Informer().GetIndexer() != own.GetIndexer() {
		t.Fatal("InformerFor did not keep the caller's informer")
	}
}

// Without options, every namespace is listed unfiltered; the fake
// clientset's declaration that it cannot stream lists is kept (the informer
// lists at once: no streaming watch is ever sent).
func TestSharedInformerFactoryDefaultsAndFakeDeclaration(t *testing.T) {
	cs := fake.NewClientset(labelled("a", "x", ""), labelled("b", "y", "blue"))
	var streaming []string
	var mu sync.Mutex
	cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if o := a.(k8stesting.WatchActionImpl).ListOptions; o.SendInitialEvents != nil && *o.SendInitialEvents {
			mu.Lock()
			streaming = append(streaming, a.GetNamespace())
			mu.Unlock()
		}
		return false, nil, nil
	})
	factory := NewSharedInformerFactory(cs, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer factory.Shutdown()
	defer cancel()
	inf := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 3*time.Second) // the guard would wait 10s
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatal("not synced within 3s")
	}
	keys := inf.GetStore().ListKeys()
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"a/x", "b/y"}) {
		t.Fatalf("store %v; want a/x b/y", keys)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(streaming) != 0 {
		t.Fatalf("%d streaming watches sent to a fake clientset that declares it cannot stream", len(streaming))
	}
}

// The typed client is found by the list type, for resources of every
// shape: namespaced and cluster-scoped, core and named groups, the same
// kind in two groups (core and events.k8s.io Event) and the same kind in
// two versions of different groups (apps/v1 and extensions/v1beta1
// Deployment).
func TestSharedInformerFactoryFindsTypedClients(t *testing.T) {
	for _, tc := range []struct {
		obj        runtime.Object
		want       string
		namespaced bool
	}{
		{&corev1.ConfigMap{}, "CoreV1.ConfigMaps", true},
		{&discoveryv1.EndpointSlice{}, "DiscoveryV1.EndpointSlices", true},
		{&corev1.Namespace{}, "CoreV1.Namespaces", false},
		{&corev1.Event{}, "CoreV1.Events", true},
		{&eventsv1.Event{}, "EventsV1.Events", true},
		{&appsv1.Deployment{}, "AppsV1.Deployments", true},
		{&extensionsv1beta1.Deployment{}, "ExtensionsV1beta1.Deployments", true},
		{&storagev1.StorageClass{}, "StorageV1.StorageClasses", false},
	} {
		p, err := lister.TypedResourceOf(tc.obj)
		if err != nil {
			t.Errorf("%T: %v", tc.obj, err)
			continue
		}
		if got := p.String(); got != tc.want || p.Namespaced() != tc.namespaced {
			t.Errorf("%T: %s (namespaced %v); want %s (%v)", tc.obj, got, p.Namespaced(), tc.want, tc.namespaced)
		}
	}
	// A cluster-scoped resource ignores the namespace, as the factory does.
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	var log requestLog
	log.install(cs)
	inf := NewSharedInformerFactory(cs, 0, informers.WithNamespace("ignored")).Core().V1().Namespaces().Informer()
	if len(inf.GetIndexer().GetIndexers()) != 0 {
		t.Errorf("cluster-scoped informer has indexers %v; want none", inf.GetIndexer().GetIndexers())
	}
	stop := runInformer(t, inf)
	defer stop()
	if keys := inf.GetStore().ListKeys(); !slices.Equal(keys, []string{"n1"}) {
		t.Fatalf("store %v; want n1", keys)
	}
	for _, r := range log.get() {
		if r != "list" && r != "watch" {
			t.Errorf("request %q; want no namespace", r)
		}
	}
}

// runInformer runs inf (until the test ends, see testfake.RunInformer),
// waits until it has synced and returns the function that stops it and
// waits for it.
func runInformer(t *testing.T, inf cache.SharedIndexInformer) func() {
	t.Helper()
	stop := testfake.RunInformer(t, inf)
	testfake.WaitFor(t, "the informer's sync", inf.HasSynced)
	return stop
}

// NewInformerFor has controller-runtime's cache.Options.NewInformer
// signature and names each informer's lister after its own object.
func TestNewInformerForNamesEachInformer(t *testing.T) {
	type newInformer = func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer
	var _ newInformer = NewSharedIndexInformer // the plain ListerWatcher path has the signature too
	var _ newInformer = NewInformerFor(&rest.Config{Host: "https://127.0.0.1:1"}, lister.Options{})
	rec := &namedRecorder{}
	// No client of steadywatch's own here: every informer lists through
	// the hook's ListerWatcher.
	noClient := func(string) (clients.Lister, error) { return nil, errors.New("no client in this test") }
	hook := func(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		return informerFor(lw, obj, cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers}, lister.Options{Metrics: rec}, noClient)
	}

	cs := fake.NewClientset(labelled("ns", "a", ""), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}})
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	type widget struct{ corev1.ConfigMap } // a Go type outside client-go's scheme
	for _, obj := range []runtime.Object{&corev1.ConfigMap{}, &corev1.Secret{}, meta, &widget{}} {
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().ConfigMaps("ns").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().ConfigMaps("ns").Watch(ctx, o)
			},
		}, cs)
		inf := hook(lw, obj, 0, cache.Indexers{})
		defer runInformer(t, inf)()
	}
	want := []string{"*reflector.widget", "apps/v1/deployments", "v1/configmaps", "v1/secrets"}
	if got := rec.names(); !slices.Equal(got, want) {
		t.Fatalf("lists recorded under %v; want %v", got, want)
	}
}

// BenchmarkNewSharedInformerFactory measures the constructor, which reads
// the factory's scope by running two probe informers.
func BenchmarkNewSharedInformerFactory(b *testing.B) {
	cs := fake.NewClientset()
	tweak := informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "team=blue" })
	for b.Loop() {
		NewSharedInformerFactory(cs, 0, informers.WithNamespace("a"), tweak)
	}
}

// A factory's WithTweakListOptions and its lister.Options' selectors both
// apply: neither is dropped for the other.
func TestFactorySelectorsJoinTweakListOptions(t *testing.T) {
	e := newEnv(t, &probe{})
	cs := fake.NewClientset()
	e.srv.Install(&cs.Fake, "configmaps")
	f := NewSharedInformerFactoryWithOptions(cs, 0,
		lister.Options{LabelSelector: "half!=no", FieldSelector: "metadata.name=cm-02"},
		informers.WithNamespace("ns"), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "half=yes" }))
	inf := f.(*sharedInformerFactory).newInformerFunc(&corev1.ConfigMap{})(cs, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	e.waitFor(inf.HasSynced, 5*time.Second)
	cancel()
	<-done
	if n := len(inf.GetStore().List()); !inf.HasSynced() || n != 1 {
		t.Errorf("synced %v with %d objects, want 1 (cm-02)", inf.HasSynced(), n)
	}
	for _, q := range e.srv.Requests() {
		if q.Options.LabelSelector != "half=yes,half!=no" || q.Options.FieldSelector != "metadata.name=cm-02" {
			t.Errorf("request sent with label %q field %q, want both selectors", q.Options.LabelSelector, q.Options.FieldSelector)
		}
	}
}
