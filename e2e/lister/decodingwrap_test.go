package lister_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// controller-runtime's cache hands its cache.Options.NewInformer hook a
// cache.ListWatch of closures over its own clients (pkg/cache/internal,
// makeListWatcher) and the example object; nothing in it says which
// configuration or namespace it lists. reflector.NewInformerFuncWithDecoding
// is given them, and the informer's lists are sent and decoded item by item
// by steadywatch's own client: on a real server, the hook's ListWatch sends
// only the limit=1 scope check, steadywatch's client the lists, and the
// cache holds exactly the namespace's objects, for a typed object and for
// metadata only.
var _ = Describe("reflector.NewInformerFuncWithDecoding under a controller-runtime-shaped NewInformer hook", Label("conformance"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = start(ctx, harness.Options{Version: build.Current})
		e.create(ctx, "crdec", 120)
		// Another namespace's objects, which neither ListWatch lists.
		other := e.ns + "-other"
		_, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = e.cs.CoreV1().Namespaces().Delete(ctx, other, metav1.DeleteOptions{})
		})
		_, err = e.cs.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("lists through steadywatch's decoding client, for a typed and a metadata-only informer", func(ctx SpecContext) {
		want, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var wantKeys []string
		for i := range want.Items {
			k, _ := cache.MetaNamespaceKeyFunc(&want.Items[i])
			wantKeys = append(wantKeys, k)
		}
		slices.Sort(wantKeys)
		Expect(len(wantKeys)).To(BeNumerically(">=", 120))

		gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(gvk, meta.RESTScopeNamespace)
		callerCfg, callerLists := recordLists(e.cfg)
		decCfg, decLists := recordLists(e.cfg)
		newInformer := reflector.NewInformerFuncWithDecoding(lister.Decoding{Config: decCfg, Namespace: e.ns, Mapper: mapper},
			lister.Options{DisableStreamingList: true}) // lists, as where the server does not stream them

		typedExample := &corev1.ConfigMap{}
		metaExample := &metav1.PartialObjectMetadata{}
		metaExample.SetGroupVersionKind(gvk)
		for _, inf := range []cache.SharedIndexInformer{
			newInformer(controllerRuntimeStructured(callerCfg, e.ns), typedExample, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
			newInformer(controllerRuntimeMetadata(callerCfg, e.ns, gvk), metaExample, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		} {
			ictx, cancel := context.WithCancel(ctx)
			DeferCleanup(cancel)
			go inf.RunWithContext(ictx)
			Eventually(inf.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
			got := inf.GetStore().ListKeys()
			slices.Sort(got)
			Expect(got).To(Equal(wantKeys))
		}
		// The hook's ListWatches sent the scope checks only (limit=1, at
		// the resourceVersion the decoding client's list was served at);
		// steadywatch's client sent the lists.
		Expect(callerLists()).To(HaveLen(2))
		for _, q := range callerLists() {
			v := query(q[strings.Index(q, "?")+1:])
			Expect(v.Get("limit")).To(Equal("1"), "the hook's ListWatch sent a list that was not the scope check: %s", q)
			Expect(v.Get("resourceVersion")).NotTo(BeEmpty())
		}
		// Per informer, steadywatch's client sent the reflector's read of the
		// current resourceVersion (limit=1, no resourceVersion) and the list
		// not older than it.
		Expect(decLists()).To(HaveLen(4))
		lists := 0
		for _, q := range decLists() {
			v := query(q[strings.Index(q, "?")+1:])
			if v.Get("limit") == "1" {
				Expect(v.Get("resourceVersion")).To(BeEmpty(), "a limit=1 list of the decoding client that is not the current-resourceVersion read: %s", q)
				continue
			}
			lists++
		}
		Expect(lists).To(Equal(2), "lists of the decoding client other than the limit=1 reads: %v", decLists())
		AddReportEntry("caller lists", callerLists())
		AddReportEntry("decoding client lists", decLists())
	})
})

// recordLists returns cfg with every list request (not a watch) it sends
// recorded as "path?query", and a function returning them.
func recordLists(cfg *rest.Config) (*rest.Config, func() []string) {
	cfg = rest.CopyConfig(cfg)
	var mu sync.Mutex
	var lists []string
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Query().Get("watch") != "true" && strings.HasSuffix(r.URL.Path, "/configmaps") {
				mu.Lock()
				lists = append(lists, r.URL.Path+"?"+r.URL.RawQuery)
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lists)
	}
}

// controllerRuntimeStructured is the ListWatch controller-runtime's cache
// builds for a typed object (pkg/cache/internal/informers.go,
// makeListWatcher and addInformerToMap): closures over a REST client for
// the group/version, decoding each list whole into the list type.
func controllerRuntimeStructured(cfg *rest.Config, ns string) cache.ListerWatcher {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	c.APIPath = "/api"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	Expect(err).NotTo(HaveOccurred())
	pc := runtime.NewParameterCodec(scheme.Scheme)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			res := &corev1.ConfigMapList{}
			if err := rc.Get().Resource("configmaps").VersionedParams(&opts, pc).Namespace(ns).Do(ctx).Into(res); err != nil {
				return nil, err
			}
			return res, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			return rc.Get().Resource("configmaps").VersionedParams(&opts, pc).Namespace(ns).Watch(ctx)
		},
	}
}

// controllerRuntimeMetadata is the ListWatch controller-runtime's cache
// builds for a metadata-only object: closures over the metadata client
// that set the kind on every item and event.
func controllerRuntimeMetadata(cfg *rest.Config, ns string, gvk schema.GroupVersionKind) cache.ListerWatcher {
	ri := metadata.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := ri.List(ctx, opts)
			if list != nil {
				for i := range list.Items {
					list.Items[i].SetGroupVersionKind(gvk)
				}
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			w, err := ri.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(in watch.Event) (watch.Event, bool) {
				in.Object.GetObjectKind().SetGroupVersionKind(gvk)
				return in, true
			}), nil
		},
	}
}
