package lister_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// controller-runtime's cache hands its cache.Options.NewInformer hook a
// cache.ListWatch of closures over its own clients (pkg/cache/internal,
// makeListWatcher) and the example object; nothing in it says which
// namespace it lists, and a multi-namespace cache (DefaultNamespaces) builds
// one informer per namespace through the same hook. reflector.NewInformerFor
// is given only the manager's rest.Config: on a real server each informer
// finds its namespace, its lists and watches are sent by steadywatch's own
// client (the hook's ListWatch sends only the limit=1 scope check, and no
// watch), and the cache holds exactly the namespace's objects, for a typed
// object and for metadata only. Its client sends no request of client-go's
// own: a Retry-After of an hour is waited the cap, a reset connection
// reaches the informer as a failed list.
var _ = Describe("reflector.NewInformerFor under a controller-runtime-shaped NewInformer hook", Label("conformance", "needs-faults"), func() {
	for _, version := range []string{build.Current, build.Legacy} {
		Context("on "+version, Ordered, func() {
			var e *env
			var other string
			BeforeAll(func(ctx SpecContext) {
				e = startHarness(ctx, harness.Options{Version: version}, "injects a Retry-After and a reset connection at the harness's fault proxy")
				e.create(ctx, "crdec", 120)
				// Another namespace's objects: a second namespace of the cache.
				other = e.ns + "-other"
				_, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func(ctx SpecContext) {
					_ = e.cs.CoreV1().Namespaces().Delete(ctx, other, metav1.DeleteOptions{})
				})
				_, err = e.cs.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
			})
			AfterEach(func() { e.proxy.ClearRules(); e.proxy.ResetRequests() })

			It("lists and watches through steadywatch's own client, one informer per namespace, typed and metadata-only", func(ctx SpecContext) {
				gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
				callerCfg, callerReqs := recordRequests(e.cfg)
				ownCfg, ownReqs := recordRequests(e.cfg)
				rec := reasons.New()
				newInformer := reflector.NewInformerFor(ownCfg, lister.Options{Metrics: rec})

				metaExample := &metav1.PartialObjectMetadata{}
				metaExample.SetGroupVersionKind(gvk)
				// v1.18 leaves remainingItemCount out of metadata-only lists, so
				// the scope check cannot compare them: that informer lists
				// through the hook's ListWatch, counted.
				metaFallsBack := version == build.Legacy
				for _, c := range []struct {
					ns        string
					lw        cache.ListerWatcher
					example   runtime.Object
					fallsBack bool
				}{
					{e.ns, controllerRuntimeStructured(callerCfg, e.ns), &corev1.ConfigMap{}, false},
					{other, controllerRuntimeStructured(callerCfg, other), &corev1.ConfigMap{}, false},
					{e.ns, controllerRuntimeMetadata(callerCfg, e.ns, gvk), metaExample, metaFallsBack},
				} {
					want, err := e.cs.CoreV1().ConfigMaps(c.ns).List(ctx, metav1.ListOptions{})
					Expect(err).NotTo(HaveOccurred())
					var wantKeys []string
					for i := range want.Items {
						k, _ := cache.MetaNamespaceKeyFunc(&want.Items[i])
						wantKeys = append(wantKeys, k)
					}
					slices.Sort(wantKeys)
					before, fallbacksBefore := len(callerReqs()), len(rec.Labels(reasons.FamilyFallback))
					inf := newInformer(c.lw, c.example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
					logs := &capturedLogs{}
					ictx, cancel := context.WithCancel(klog.NewContext(ctx, logs.logger()))
					DeferCleanup(cancel)
					go inf.RunWithContext(ictx)
					Eventually(inf.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
					got := inf.GetStore().ListKeys()
					slices.Sort(got)
					Expect(got).To(Equal(wantKeys), "%T in %s", c.example, c.ns)
					if c.fallsBack {
						Expect(rec.Labels(reasons.FamilyFallback)[fallbacksBefore:]).To(Equal([]string{"decoding-scope-mismatch"}))
						AddReportEntry(fmt.Sprintf("%T in %s: fallback", c.example, c.ns), logs.containing("Listing and watching through the hook's"))
						continue
					}
					Expect(rec.Labels(reasons.FamilyFallback)[fallbacksBefore:]).To(BeEmpty(), "%T in %s fell back to the hook's ListWatch: %v", c.example, c.ns, logs.containing("Listing and watching through the hook's"))
					Expect(logs.containing(hiddenRetry)).To(BeEmpty(), "client-go retried a request on its own")
					// Its watch is steadywatch's client's, in the namespace.
					Eventually(func() []string {
						return slices.DeleteFunc(ownReqs(), func(q string) bool {
							return !strings.HasPrefix(q, "watch /api/v1/namespaces/"+c.ns+"/configmaps?")
						})
					}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).ShouldNot(BeEmpty())
					// The hook's ListWatch sent the scope check only (limit=1,
					// the newest: never at a resourceVersion, which its client
					// would retry on its own when a lagging server answers 504),
					// and no watch.
					Consistently(func() int { return len(callerReqs()) - before }).WithTimeout(time.Second).WithPolling(50 * time.Millisecond).Should(Equal(1))
					q := callerReqs()[before]
					Expect(q).To(HavePrefix("list "), "the hook's ListWatch watched")
					v := query(q[strings.Index(q, "?")+1:])
					Expect(v.Get("limit")).To(Equal("1"), "the hook's ListWatch sent a list that was not the scope check: %s", q)
					Expect(v.Get("resourceVersion")).To(BeEmpty(), "the hook's ListWatch was asked for a list at a resourceVersion: %s", q)
				}
				AddReportEntry("hook's ListWatch requests", callerReqs())
				AddReportEntry("steadywatch's client requests", ownReqs())
			})

			// Every PodTemplate of the cluster is in one namespace: the scope
			// check cannot tell whether the hook's ListWatch lists that
			// namespace or every one, so the informer lists through it
			// (client-go's client). A ConfigMap written last moves the etcd
			// revision past the PodTemplates' own; before v1.20 their watch
			// cache stays behind it (no progress notifications, KEP-1904),
			// and a list not older than that revision is answered 504 "too
			// large resource version" (kubernetes/kubernetes#97294), which
			// client-go's client retries on its own, 10 times. Both
			// informers, told what the server can do, sync with no such
			// answer.
			It("syncs a kind whose watch cache lags the etcd revision, with no list the server must refuse as too new", func(ctx SpecContext) {
				for i := range 3 {
					_, err := e.cs.CoreV1().PodTemplates(e.ns).Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pt-%d", i)},
						Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}, metav1.CreateOptions{})
					Expect(err).NotTo(HaveOccurred())
				}
				e.create(ctx, "after-podtemplates", 1)
				// What the server can do, as docs/adoption.md shows.
				srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(e.pcfg)
				Expect(err).NotTo(HaveOccurred())
				lw := cache.NewListWatchFromClient(e.pcs.CoreV1().RESTClient(), "podtemplates", e.ns, fields.Everything())
				factory := reflector.NewSharedInformerFactoryWithOptions(e.pcs, 0, lister.Options{Server: srv}, informers.WithNamespace(e.ns))
				for _, c := range []struct {
					path string
					inf  cache.SharedIndexInformer
				}{
					{"NewInformerFor", reflector.NewInformerFor(e.pcfg, lister.Options{Server: srv})(lw, &corev1.PodTemplate{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})},
					{"informer factory", factory.Core().V1().PodTemplates().Informer()},
				} {
					e.proxy.ResetRequests()
					logs := &capturedLogs{}
					ictx, cancel := context.WithCancel(klog.NewContext(ctx, logs.logger()))
					DeferCleanup(cancel)
					begin := time.Now()
					go c.inf.RunWithContext(ictx)
					Eventually(c.inf.HasSynced).WithTimeout(60*time.Second).WithPolling(20*time.Millisecond).Should(BeTrue(), c.path)
					took := time.Since(begin)
					Expect(c.inf.GetStore().ListKeys()).To(HaveLen(3), c.path)
					var sent []string
					for _, r := range e.proxy.Requests() {
						if r.Resource != "podtemplates" {
							continue
						}
						sent = append(sent, fmt.Sprintf("%s ns=%s %s: %d", r.Verb, r.Namespace, r.RawQuery, r.Status))
						Expect(r.Status).NotTo(Equal(http.StatusGatewayTimeout), "%s: %s", c.path, sent)
					}
					Expect(logs.containing(hiddenRetry)).To(BeEmpty(), "%s: client-go retried a request on its own", c.path)
					AddReportEntry(c.path+" on a lagging watch cache", fmt.Sprintf("synced in %s: %v", took.Round(10*time.Millisecond), sent))
					cancel()
				}
			})

			It("waits a Retry-After of 3600 s the cap, and sends the 429's request once", func(ctx SpecContext) {
				e.proxy.Inject(faults.Rule{Resource: "configmaps", Status: 429, RetryAfterSeconds: 3600, Count: 1})
				rec := reasons.New()
				const maxRetryAfter = 2 * time.Second
				inf := reflector.NewInformerFor(e.pcfg, lister.Options{MaxRetryAfter: maxRetryAfter, Metrics: rec})(controllerRuntimeStructured(e.pcfg, e.ns), &corev1.ConfigMap{}, 0, cache.Indexers{})
				logs := &capturedLogs{}
				ictx, cancel := context.WithCancel(klog.NewContext(ctx, logs.logger()))
				DeferCleanup(cancel)
				begin := time.Now()
				go inf.RunWithContext(ictx)
				Eventually(inf.HasSynced).WithTimeout(maxRetryAfter + 10*time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
				took := time.Since(begin)
				var faulted []faults.Request
				for _, r := range e.requests("") {
					if r.Status == 429 {
						faulted = append(faulted, r)
					}
				}
				Expect(faulted).To(HaveLen(1))
				Expect(faulted[0].Fault).NotTo(BeEmpty(), "the proxy's 429")
				Expect(took).To(BeNumerically("<", maxRetryAfter+10*time.Second), "waited the cap, not the hour")
				Expect(logs.containing(hiddenRetry)).To(BeEmpty(), "client-go retried a request on its own")
				Expect(rec.Labels(reasons.FamilyFallback)).To(BeEmpty())
				summary := fmt.Sprintf("synced in %s, %d configmaps requests on the wire, list outcomes %v", took.Round(100*time.Millisecond), len(e.requests("")), rec.Labels(reasons.FamilyList))
				fmt.Fprintln(GinkgoWriter, summary)
				AddReportEntry("429 Retry-After 3600, MaxRetryAfter 2 s", summary)
			})

			It("hands a reset connection to the informer, not to a retry inside client-go", func(ctx SpecContext) {
				// The informer's own list (no limit), not a limit=1 request of
				// the scope check: the lister counts the requests written under
				// its list call, so a retry inside client-go would be seen.
				e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Namespace: e.ns, Reset: true, Count: 1,
					Match: func(q url.Values) bool { return q.Get("limit") == "" }})
				rec := reasons.New()
				inf := reflector.NewInformerFor(e.pcfg, lister.Options{Metrics: rec})(controllerRuntimeStructured(e.pcfg, e.ns), &corev1.ConfigMap{}, 0, cache.Indexers{})
				logs := &capturedLogs{}
				ictx, cancel := context.WithCancel(klog.NewContext(ctx, logs.logger()))
				DeferCleanup(cancel)
				go inf.RunWithContext(ictx)
				Eventually(inf.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
				var reset []faults.Request
				for _, r := range e.requests("list") {
					if r.Fault != "" {
						reset = append(reset, r)
					}
				}
				Expect(reset).To(HaveLen(1), "the reset fired")
				// The lister counts every request written on the wire under
				// its own (an HTTP trace on the request's context) and logs a
				// request that client-go sent more than once.
				Expect(logs.containing(hiddenRetry)).To(BeEmpty(), "client-go retried the reset request on its own")
				// The reset reached steadywatch, which backed off before it
				// listed again: over controller-runtime's ListWatch
				// (reflector.NewSharedIndexInformer), client-go retries it on
				// its own and nothing is counted.
				Expect(rec.Labels(reasons.FamilyFallback)).To(Equal([]string{"transport-backoff"}))
				AddReportEntry("reset connection", fmt.Sprintf("list outcomes %v, %d configmaps requests on the wire", rec.Labels(reasons.FamilyList), len(e.requests(""))))
			})
		})
	}
})

// hiddenRetry is the lister's log line for a request client-go's REST
// client sent more than once on its own.
const hiddenRetry = "client-go's REST client retried a request on its own"

// capturedLogs records every log line (verbosity up to 4) of a logger.
type capturedLogs struct {
	mu    sync.Mutex
	lines []string
}

func (c *capturedLogs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines = append(c.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 4})
}

func (c *capturedLogs) containing(s string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(c.lines), func(l string) bool { return !strings.Contains(l, s) })
}

// recordRequests returns cfg with every ConfigMap list and watch it sends
// recorded as "list path?query" or "watch path?query", and a function
// returning them.
func recordRequests(cfg *rest.Config) (*rest.Config, func() []string) {
	cfg = rest.CopyConfig(cfg)
	var mu sync.Mutex
	var reqs []string
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/configmaps") {
				verb := "list"
				if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
					verb = "watch"
				}
				mu.Lock()
				reqs = append(reqs, verb+" "+r.URL.Path+"?"+r.URL.RawQuery)
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reqs)
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
