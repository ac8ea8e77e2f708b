package lister_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// cmAPI is an apiserver (which ignores selectors) of ConfigMaps in namespaces "ns" and "other" at
// resourceVersion 10, over HTTP: lists (JSON, or PartialObjectMetadataList
// when asked for it) with limit, continue and remainingItemCount as an
// apiserver sends them, and watches that stay open without events. It logs
// every request.
type cmAPI struct {
	srv *httptest.Server
	cfg *rest.Config

	mu   sync.Mutex
	reqs []string // "list ns limit=N" or "watch ns"
}

// newCallerAPI returns a new cmAPI, a clientset on it, and the caller's
// own ListerWatcher of namespace ns through that clientset, recording what
// it lists.
func newCallerAPI(t *testing.T) (*cmAPI, kubernetes.Interface, *callerLists) {
	a := newCMAPI(t)
	cs := kubernetes.NewForConfigOrDie(a.cfg)
	return a, cs, &callerLists{ListerWatcherWithContext: cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "ns", fields.Everything())}
}

func newCMAPI(t *testing.T) *cmAPI {
	a := &cmAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	a.cfg = &rest.Config{Host: a.srv.URL, QPS: -1}
	return a
}

// nsKeys are the objects of namespace "ns".
var nsKeys = []string{"ns/cm-0", "ns/cm-1", "ns/cm-2", "ns/cm-3", "ns/cm-4"}

func (a *cmAPI) items(ns string) []corev1.ConfigMap {
	var out []corev1.ConfigMap
	for _, n := range []string{"ns", "other"} {
		if ns != "" && ns != n {
			continue
		}
		for i := range 3 + len(n) { // 8 in "other", 5 in "ns"
			out = append(out, corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: fmt.Sprintf("cm-%d", i), ResourceVersion: strconv.Itoa(i + 1)},
				Data:       map[string]string{"k": "v"},
			})
		}
	}
	return out
}

func (a *cmAPI) serve(w http.ResponseWriter, r *http.Request) {
	// Discovery: the core group's v1, with configmaps.
	var disc any
	switch r.URL.Path {
	case "/api":
		disc = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case "/apis":
		disc = &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	case "/api/v1":
		disc = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"list", "watch"}}}}
	}
	if disc != nil {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(disc)
		return
	}
	ns := ""
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/"); ok {
		ns, _, _ = strings.Cut(rest, "/")
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" {
		a.log("watch %s", ns)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	a.log("list %s limit=%d", ns, limit)
	items := a.items(ns)
	lm := metav1.ListMeta{ResourceVersion: "10"}
	if limit > 0 && limit < len(items) {
		rem := int64(len(items) - limit)
		lm.Continue = "more"
		if q.Get("labelSelector") == "" && q.Get("fieldSelector") == "" {
			lm.RemainingItemCount = &rem // an apiserver leaves it out with a selector
		}
		items = items[:limit]
	}
	w.Header().Set("Content-Type", "application/json")
	var body any = &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, ListMeta: lm, Items: items}
	if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
		l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: lm}
		for _, cm := range items {
			l.Items = append(l.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: cm.ObjectMeta})
		}
		body = l
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (a *cmAPI) log(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, fmt.Sprintf(format, args...))
}

func (a *cmAPI) lists() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(a.reqs), func(s string) bool { return strings.HasPrefix(s, "watch") })
}

// callerLists wraps a caller's ListerWatcher and records the limit of
// every list sent through it.
type callerLists struct {
	cache.ListerWatcherWithContext
	mu     sync.Mutex
	limits []int64
}

func (c *callerLists) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	c.limits = append(c.limits, o.Limit)
	c.mu.Unlock()
	return c.ListerWatcherWithContext.ListWithContext(ctx, o)
}

func (c *callerLists) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}

func (c *callerLists) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}

func (c *callerLists) sent() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.limits)
}

func keys(t *testing.T, list runtime.Object) []string {
	t.Helper()
	var out []string
	if err := meta.EachListItem(list, func(obj runtime.Object) error {
		k, err := cache.MetaNamespaceKeyFunc(obj)
		out = append(out, k)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// wrapDecoding is lister.WrapDecoding of caller over a decoding client of
// a's ConfigMaps in namespace ns, with o; its metrics go to the Recorder it
// returns.
func (a *cmAPI) wrapDecoding(t *testing.T, caller cache.ListerWatcher, ns string, o lister.Options) (*lister.ListerWatcher, *testfake.Recorder) {
	t.Helper()
	dec, err := lister.Decoding{Config: a.cfg, Namespace: ns}.ClientFor(&corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &testfake.Recorder{}
	o.Metrics = rec
	return lister.WrapDecoding(caller, dec, o), rec
}

// listAny lists lw from any resourceVersion ("0"), failing t on an error.
func listAny(t *testing.T, lw cache.ListerWatcherWithContext) runtime.Object {
	t.Helper()
	list, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// lister.WrapDecoding over client-go's typed cache.NewListWatchFromClient:
// the list is sent by steadywatch's typed client (decoded item by item),
// the caller's list function only sees the limit=1 scope check, and the
// result is the namespace's objects.
func TestWrapDecodingListsThroughTheDecodingClient(t *testing.T) {
	a, _, caller := newCallerAPI(t)
	lw, rec := a.wrapDecoding(t, caller, "ns", lister.Options{})
	for range 2 {
		list := listAny(t, lw)
		if got, want := keys(t, list), nsKeys; !slices.Equal(got, want) {
			t.Fatalf("listed %v, want %v", got, want)
		}
		if _, ok := list.(*corev1.ConfigMapList); !ok {
			t.Fatalf("list is %T", list)
		}
	}
	// One scope check, then the decoding client alone.
	if got := caller.sent(); !slices.Equal(got, []int64{1}) {
		t.Errorf("the caller's list function sent limits %v; want only the limit=1 scope check", got)
	}
	if got, want := a.lists(), []string{"list ns limit=0", "list ns limit=1", "list ns limit=0"}; !slices.Equal(got, want) {
		t.Errorf("server saw %v, want %v", got, want)
	}
	if got := rec.Labels(testfake.Fallback); len(got) != 0 {
		t.Errorf("fallbacks %v", got)
	}
}

// A decoding client of another namespace (or without a selector the
// caller's list function sets) is caught by the scope check: the list is
// the caller's, now and from then on, counted.
func TestWrapDecodingScopeMismatchListsThroughTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ns      string
		setOpts func(*metav1.ListOptions)
	}{
		{name: "another namespace", ns: "other"},
		{name: "every namespace", ns: ""},
		{name: "a selector only the caller sets", ns: "ns", setOpts: func(o *metav1.ListOptions) { o.LabelSelector = "app!=none" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newCMAPI(t)
			cs := kubernetes.NewForConfigOrDie(a.cfg)
			mod := func(o *metav1.ListOptions) {
				if tc.setOpts != nil {
					tc.setOpts(o)
				}
			}
			caller := &callerLists{ListerWatcherWithContext: cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "ns", mod)}
			lw, rec := a.wrapDecoding(t, caller, tc.ns, lister.Options{})
			for range 2 {
				list := listAny(t, lw)
				if got, want := keys(t, list), nsKeys; !slices.Equal(got, want) {
					t.Fatalf("listed %v, want the caller's %v", got, want)
				}
			}
			if got, want := caller.sent(), []int64{1, 0, 0}; !slices.Equal(got, want) {
				t.Errorf("the caller's list function sent limits %v, want %v (the check, then every list)", got, want)
			}
			if got := rec.Labels(testfake.Fallback); !slices.Equal(got, []string{"decoding-scope-mismatch"}) {
				t.Errorf("fallbacks %v", got)
			}
		})
	}
}

// A selector set in lister.Options reaches both clients: the scope check
// passes and the lists stay the decoding client's.
func TestWrapDecodingSelectorInOptionsIsConfirmed(t *testing.T) {
	a, _, caller := newCallerAPI(t)
	lw, rec := a.wrapDecoding(t, caller, "ns", lister.Options{LabelSelector: "app!=none"})
	for range 2 {
		listAny(t, lw)
	}
	if got := caller.sent(); !slices.Equal(got, []int64{1}) {
		t.Errorf("the caller's list function sent limits %v; want only the limit=1 scope check", got)
	}
	if got := rec.Labels(testfake.Fallback); len(got) != 0 {
		t.Errorf("fallbacks %v", got)
	}
}

// A scope check that keeps failing is not retried on every list for ever:
// after three, lists go through the caller, counted.
func TestWrapDecodingFailingScopeCheckIsBounded(t *testing.T) {
	a := newCMAPI(t)
	cs := kubernetes.NewForConfigOrDie(a.cfg)
	inner := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "ns", fields.Everything())
	caller := &callerLists{ListerWatcherWithContext: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.Limit == 1 {
				return nil, errors.New("refused")
			}
			return inner.ListWithContext(ctx, o)
		},
		WatchFuncWithContext: inner.WatchWithContext,
	}}
	lw, rec := a.wrapDecoding(t, caller, "ns", lister.Options{})
	for range 5 {
		list := listAny(t, lw)
		if got := keys(t, list); !slices.Equal(got, nsKeys) {
			t.Fatalf("listed %v", got)
		}
	}
	if got, want := caller.sent(), []int64{1, 1, 1, 0, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("the caller's list function sent limits %v, want %v", got, want)
	}
	if got := rec.Labels(testfake.Fallback); !slices.Equal(got, []string{"decoding-scope-mismatch"}) {
		t.Errorf("fallbacks %v", got)
	}
}

func TestDecodingClientForRefusesWhatItCannotDecode(t *testing.T) {
	a := newCMAPI(t)
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	for _, tc := range []struct {
		name string
		d    lister.Decoding
		obj  runtime.Object
	}{
		{"no config", lister.Decoding{}, &corev1.ConfigMap{}},
		{"unstructured without a mapper", lister.Decoding{Config: a.cfg}, u},
		{"unstructured without a kind", lister.Decoding{Config: a.cfg, Mapper: cmMapper()}, &unstructured.Unstructured{}},
		{"a type outside the clientset", lister.Decoding{Config: a.cfg}, &widget{}},
	} {
		if _, err := tc.d.ClientFor(tc.obj); !errors.Is(err, lister.ErrNoDecodingClient) {
			t.Errorf("%s: %v, want ErrNoDecodingClient", tc.name, err)
		}
	}
}

type widget struct{ corev1.ConfigMap }

func cmMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return m
}

// syncInformer runs inf until it has synced and returns its keys.
func syncInformer(t *testing.T, inf cache.SharedIndexInformer) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	got := inf.GetStore().ListKeys()
	slices.Sort(got)
	return got
}

// reflector.NewInformerFor, called as controller-runtime's cache calls its
// NewInformer hook in a cache limited to namespace "ns": over a ListWatch
// of the dynamic client in "ns". The informer finds the namespace, and its
// list is sent by steadywatch's dynamic decoding client (mapped by
// discovery); the caller's list function sees only the scope check.
func TestInformerForFindsTheNamespaceOfADynamicListWatch(t *testing.T) {
	a := newCMAPI(t)
	ri := dynamic.NewForConfigOrDie(a.cfg).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("ns")
	caller := &callerLists{ListerWatcherWithContext: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: ri.Watch,
	}}
	example := &unstructured.Unstructured{}
	example.SetAPIVersion("v1")
	example.SetKind("ConfigMap")
	inf := reflector.NewInformerFor(a.cfg, lister.Options{DisableStreamingList: true})(caller, example, 0, cache.Indexers{})
	if got, want := syncInformer(t, inf), nsKeys; !slices.Equal(got, want) {
		t.Fatalf("synced %v, want %v", got, want)
	}
	if got := caller.sent(); !slices.Equal(got, []int64{1}) {
		t.Errorf("the caller's list function sent limits %v; want only the limit=1 scope check", got)
	}
	if _, ok := inf.GetStore().List()[0].(*unstructured.Unstructured); !ok {
		t.Errorf("store holds %T", inf.GetStore().List()[0])
	}
	if a, ok := reflector.AdoptionOf(inf); !ok || a.Path != "NewInformerFor" {
		t.Errorf("AdoptionOf = %+v, %v", a, ok)
	}
}

// reflector.NewInformerFor, called as controller-runtime's cache calls its
// NewInformer hook for a metadata-only watch of every namespace: a
// cache.ListWatch of closures over the metadata client, which sets the
// kind on every item. The informer's list is steadywatch's, of every
// namespace, with the kind set too.
func TestInformerForControllerRuntimeMetadataShapeEveryNamespace(t *testing.T) {
	a := newCMAPI(t)
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ri := metadata.NewForConfigOrDie(a.cfg).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	caller := &callerLists{ListerWatcherWithContext: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := ri.List(ctx, o)
			if list != nil {
				for i := range list.Items {
					list.Items[i].SetGroupVersionKind(gvk)
				}
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return ri.Watch(ctx, o)
		},
	}}
	example := &metav1.PartialObjectMetadata{}
	example.SetGroupVersionKind(gvk)
	inf := reflector.NewInformerFor(a.cfg, lister.Options{DisableStreamingList: true})(caller, example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var want []string
	for _, cm := range a.items("") {
		want = append(want, cm.Namespace+"/"+cm.Name)
	}
	slices.Sort(want)
	if got := syncInformer(t, inf); !slices.Equal(got, want) {
		t.Fatalf("synced %v, want %v", got, want)
	}
	if got := caller.sent(); !slices.Equal(got, []int64{1}) {
		t.Errorf("the caller's list function sent limits %v; want only the limit=1 scope check", got)
	}
	for _, obj := range inf.GetStore().List() {
		if got := obj.(*metav1.PartialObjectMetadata).GroupVersionKind(); got != gvk {
			t.Fatalf("item kind %v, want %v", got, gvk)
		}
	}
}

// A caller's ListWatch that sets a label selector inside its own functions
// (controller-runtime's ByObject): no client of steadywatch's own lists
// what it lists, so the informer lists through it, logged and counted.
func TestInformerForFallsBackObservablyOnTheCallersOwnSelector(t *testing.T) {
	a := newCMAPI(t)
	cs := kubernetes.NewForConfigOrDie(a.cfg)
	caller := &callerLists{ListerWatcherWithContext: cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "ns",
		func(o *metav1.ListOptions) { o.LabelSelector = "app=x" })}
	rec := &testfake.Recorder{}
	inf := reflector.NewInformerFor(a.cfg, lister.Options{DisableStreamingList: true, Metrics: rec})(caller, &corev1.ConfigMap{}, 0, cache.Indexers{})
	if got := syncInformer(t, inf); !slices.Equal(got, nsKeys) {
		t.Fatalf("synced %v", got) // (the test server ignores selectors)
	}
	// The scope check, then the informer's lists: the current
	// resourceVersion's limit=1 read and the list.
	if got := caller.sent(); !slices.Equal(got, []int64{1, 1, 0}) {
		t.Errorf("the caller's list function sent limits %v; want the scope check and the informer's lists [1 1 0]", got)
	}
	if got := rec.Labels(testfake.Fallback); !slices.Equal(got, []string{"decoding-scope-mismatch"}) {
		t.Errorf("fallbacks %v", got)
	}
}

// A Go type outside client-go's scheme (a custom resource's): no decoding
// client, so the informer lists through the caller's ListerWatcher,
// logged and counted.
func TestInformerForFallsBackObservablyWithoutAClient(t *testing.T) {
	a, _, caller := newCallerAPI(t)
	rec := &testfake.Recorder{}
	type widget struct{ corev1.ConfigMap }
	inf := reflector.NewInformerFor(a.cfg, lister.Options{DisableStreamingList: true, Metrics: rec})(caller, &widget{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if got := caller.sent(); !slices.Equal(got, []int64{1, 0}) {
		t.Errorf("the caller's list function sent limits %v; want the informer's lists [1 0]", got)
	}
	if got := rec.Labels(testfake.Fallback); !slices.Equal(got, []string{"no-decoding-client"}) {
		t.Errorf("fallbacks %v", got)
	}
}

// filteringLists is a caller's ListerWatcher that filters its own lists, as
// shard.Wrap does (watchpipe.FilterSource): it keeps only "cm-0".
type filteringLists struct{ *callerLists }

type keepName string

func (k keepName) Keep(m metav1.Object) bool { return m.GetName() == string(k) }

func (f filteringLists) PipelineFilter() interface{ Keep(m metav1.Object) bool } {
	return keepName("cm-0")
}

// A caller's ListerWatcher that filters its own lists (shard.Wrap's hash
// range) is listed through, never through the decoding client: the scope
// check cannot see a filter that keeps the server's remainingItemCount, and
// the cache must never hold what the caller's lists leave out.
func TestWrapDecodingListsThroughACallerThatFilters(t *testing.T) {
	a, _, lists := newCallerAPI(t)
	caller := filteringLists{lists}
	lw, rec := a.wrapDecoding(t, caller, "ns", lister.Options{})
	for range 2 {
		listAny(t, lw)
	}
	if got, want := caller.sent(), []int64{0, 0}; !slices.Equal(got, want) {
		t.Errorf("the caller's list function sent limits %v, want %v (every list, no scope check)", got, want)
	}
	if got := rec.Labels(testfake.Fallback); !slices.Equal(got, []string{"decoding-scope-mismatch"}) {
		t.Errorf("fallbacks %v, want one %s", got, "decoding-scope-mismatch")
	}
}
