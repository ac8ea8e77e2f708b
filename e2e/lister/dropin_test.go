package lister_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// startStockInformer runs client-go's SharedIndexInformer over lw (client-go
// v0.37 defaults: it asks for a streaming list first) until the spec ends.
func startStockInformer(ctx context.Context, lw cache.ListerWatcher, example runtime.Object) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	testfake.Start(GinkgoTB(), ctx, inf.RunWithContext)
	return inf
}

// startReflector runs reflector.New on c into a new store until the spec ends.
func startReflector(ctx context.Context, c lister.Client, example runtime.Object, o reflector.Options) (*reflector.Reflector, cache.Store) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := reflector.New(c, example, store, o)
	testfake.Start(GinkgoTB(), ctx, r.Run)
	return r, store
}

// streamingLists returns the proxy's streaming-list requests on resource in ns
// whose label selector is sel.
func (e *env) streamingLists(resource, sel string) []faults.Request {
	var out []faults.Request
	for _, r := range e.proxy.Requests() {
		q := query(r.RawQuery)
		if r.Resource == resource && r.Namespace == e.ns && r.Verb == "watch" && q.Get("sendInitialEvents") == "true" && q.Get("labelSelector") == sel {
			out = append(out, r)
		}
	}
	return out
}

func belief(srv compat.Server, gv schema.GroupVersion) capability.Support {
	return capability.ForGroupVersion(srv, gv).Capabilities(context.Background()).Get(capability.StreamingList)
}

var coreV1 = schema.GroupVersion{Version: "v1"}
var appsV1 = schema.GroupVersion{Group: "apps", Version: "v1"}

var _ = Describe("the drop-in path and per-group/version evidence on a current apiserver behind a fault proxy", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current}, "needs the harness's fault proxy (stalled watches, injected 422s, request log)")
	})

	It("a watch stalled by the proxy (no bytes, connection open) is restarted on the drop-in path (lister.Options.StallTimeout)", func(ctx SpecContext) {
		e.create(ctx, "stl", 2)
		rec := reasons.New()
		lw := lister.NewListerWatcher(e.client(true), lister.Options{LabelSelector: "set=stl", StallTimeout: 3 * time.Second, Metrics: rec})
		inf := startStockInformer(ctx, lw, &corev1.ConfigMap{})
		Eventually(inf.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Eventually(e.proxy.Watches).WithTimeout(30 * time.Second).Should(Equal(1))

		e.proxy.ResetRequests()
		e.proxy.StallWatches(2 * time.Minute)
		DeferCleanup(e.proxy.StallWatches, time.Duration(0))
		stalledAt := time.Now()
		_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stl-during", Labels: map[string]string{"set": "stl"}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return rec.Family(reasons.FamilyWatchRestart)["watch-stalled"] }).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", 1))
		took := time.Since(stalledAt)
		AddReportEntry("drop-in: stalled watch restarted after (StallTimeout 3s)", took.Round(time.Millisecond).String())
		Expect(took).To(BeNumerically(">=", 3*time.Second-100*time.Millisecond), "not before StallTimeout")
		// client-go watches again (from its last resourceVersion, no relist).
		Eventually(func() int { return len(e.requests("watch")) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
		rv := query(e.requests("watch")[0].RawQuery).Get("resourceVersion")
		Expect(rv).NotTo(BeElementOf("", "0"), "the restarted watch resumes from a resourceVersion")

		e.proxy.StallWatches(0)
		Eventually(func() []string { return inf.GetStore().ListKeys() }).WithTimeout(30 * time.Second).Should(ContainElement(e.ns + "/stl-during"))
		for _, r := range e.requests("list") {
			Expect(query(r.RawQuery).Get("limit")).To(Equal("1"), "no relist after a stall (only a guard's count list): %s", r.RawQuery)
		}
	})

	It("a bad label selector on one informer (its streaming list answered 400 by the real server) leaves another informer on the same host streaming lists", func(ctx SpecContext) {
		e.create(ctx, "sel", 3)
		srv := detect(e.pcfg)
		e.proxy.ResetRequests()
		const bad = "set in (sel"
		// Both adoption paths with the caller's own bad selector.
		startStockInformer(ctx, lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: bad, Resource: corev1.SchemeGroupVersion.WithResource("configmaps")}), &corev1.ConfigMap{})
		badClient := configMapsWithSelector(e.pcs, e.ns, bad)
		startReflector(ctx, badClient, &corev1.ConfigMap{}, reflector.Options{Lister: lister.Options{Server: srv, Name: "bad-selector"}})
		// Each sent its streaming list and got the real server's own 400.
		Eventually(func() int { return len(e.streamingLists("configmaps", bad)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 2))
		Eventually(func() int {
			n := 0
			for _, r := range e.requests("list") {
				if query(r.RawQuery).Get("labelSelector") == bad {
					n++
				}
			}
			return n
		}).WithTimeout(30*time.Second).Should(BeNumerically(">=", 2), "both fell back to a list (also refused)")
		for _, r := range e.streamingLists("configmaps", bad) {
			Expect(r.Status).To(Equal(400), "the real server's answer to the bad selector")
			Expect(r.Fault).To(BeEmpty())
		}
		Expect(belief(srv, coreV1)).NotTo(Equal(capability.No), "the caller's own 400 is not evidence about the server")

		// Another informer (and a reflector) on the same host streams its list.
		good := startStockInformer(ctx, lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=sel", Resource: corev1.SchemeGroupVersion.WithResource("configmaps")}), &corev1.ConfigMap{})
		Eventually(good.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Expect(good.GetStore().List()).To(HaveLen(3))
		r, _ := startReflector(ctx, configMapsWithSelector(e.pcs, e.ns, "set=sel"), &corev1.ConfigMap{}, reflector.Options{Lister: lister.Options{Server: srv, Name: "good-selector"}})
		Eventually(r.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		streamed := e.streamingLists("configmaps", "set=sel")
		Expect(len(streamed)).To(BeNumerically(">=", 2), "the drop-in informer and the reflector with a good selector both sent sendInitialEvents=true")
		for _, s := range streamed {
			Expect(s.Status).To(Equal(200))
		}
		AddReportEntry("bad selector, then good selector on the same host", fmt.Sprintf("%d streaming lists refused 400 (bad selector), %d streaming lists served 200 (good selector), belief v1 %s",
			len(e.streamingLists("configmaps", bad)), len(streamed), belief(srv, coreV1)))
	})

	It("apps/v1 refusing streaming lists (proxy on its path only) leaves core v1 streaming: compat evidence is per group/version", func(ctx SpecContext) {
		e.create(ctx, "gv", 2)
		for i := 0; i < 2; i++ {
			_, err := e.cs.AppsV1().Deployments(e.ns).Create(ctx, deployment(fmt.Sprintf("gv-%d", i)), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		srv := detect(e.pcfg)
		id := e.proxy.Inject(faults.Rule{Verb: "watch", Resource: "deployments", Namespace: e.ns, Query: map[string]string{"sendInitialEvents": "true"},
			Status: 422, Message: faults.SendInitialEventsForbiddenMessage})
		DeferCleanup(e.proxy.Remove, id)
		e.proxy.ResetRequests()

		deps := e.pcs.AppsV1().Deployments(e.ns)
		dc := lister.FromFuncs(deps.List, deps.Watch)
		dinf := startStockInformer(ctx, lister.NewListerWatcher(dc, lister.Options{Server: srv, Resource: appsv1.SchemeGroupVersion.WithResource("deployments")}), &appsv1.Deployment{})
		Eventually(dinf.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Expect(dinf.GetStore().List()).To(HaveLen(2))
		dr, _ := startReflector(ctx, dc, &appsv1.Deployment{}, reflector.Options{Lister: lister.Options{Server: srv}})
		Eventually(dr.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Expect(belief(srv, appsV1)).To(Equal(capability.No), "the 422 naming sendInitialEvents is evidence for apps/v1")

		cinf := startStockInformer(ctx, lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=gv", Resource: corev1.SchemeGroupVersion.WithResource("configmaps")}), &corev1.ConfigMap{})
		Eventually(cinf.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		cr, _ := startReflector(ctx, configMapsWithSelector(e.pcs, e.ns, "set=gv"), &corev1.ConfigMap{}, reflector.Options{Lister: lister.Options{Server: srv}})
		Eventually(cr.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		streamed := e.streamingLists("configmaps", "set=gv")
		Expect(len(streamed)).To(BeNumerically(">=", 2), "core v1: the drop-in informer and the reflector streamed their lists")
		for _, s := range streamed {
			Expect(s.Status).To(Equal(200))
		}
		Expect(belief(srv, coreV1)).NotTo(Equal(capability.No))
		var refused int
		for _, r := range e.proxy.Requests() {
			if r.Resource == "deployments" && r.Verb == "watch" && query(r.RawQuery).Get("sendInitialEvents") == "true" {
				refused++
				Expect(r.Status).To(Equal(422))
			}
		}
		Expect(refused).To(BeNumerically(">=", 1))
		AddReportEntry("apps/v1 streaming refused, core v1", fmt.Sprintf("apps/v1: %d streaming list(s) refused 422, belief %s; v1: %d streaming lists served, belief %s",
			refused, belief(srv, appsV1), len(streamed), belief(srv, coreV1)))
	})
})

// configMapsWithSelector is a ConfigMap client of ns that sends sel with
// every list and watch (reflector.New takes the selector from its client).
func configMapsWithSelector(cs kubernetes.Interface, ns, sel string) lister.Client {
	cms := cs.CoreV1().ConfigMaps(ns)
	return lister.FromFuncs(
		func(ctx context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
			o.LabelSelector = sel
			return cms.List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return cms.Watch(ctx, o)
		})
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
			},
		},
	}
}
