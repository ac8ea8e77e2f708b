package reflector_test

import (
	"context"
	"maps"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// A relist answered by a list, or by a streaming list (sendInitialEvents),
// keeps, in the factory line's informer, the very objects it held at the
// listed resourceVersion (none is decoded anew) and decodes the one that
// changed; the handler gets the changed one as an update, and each
// unchanged one as an update from the object to itself, as client-go's
// informer gives a handler without a resync period.
var _ = Describe("a relist of the factory line's informer", Label("conformance", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: build.Current},
			"needs the harness's "+build.Current+" server and the fault proxy")
	})
	It("after a 410, keeps the objects held at the listed resourceVersion as they are and decodes the changed one", func(ctx SpecContext) {
		relistKeepsUnchanged(ctx, c, false)
	})
	It("after a 410, a streaming list keeps the objects held at the streamed resourceVersion as they are and decodes the changed one", func(ctx SpecContext) {
		relistKeepsUnchanged(ctx, c, true)
	})
	It("fills its store by a streaming list with the very objects the clientset gets", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns := populate(ctx, cs, "streamed", 20)
		p, inf, start := factoryLine(ctx, c, ns, lister.Options{})
		start()
		rl := relists(p, ns)
		Expect(rl).To(HaveLen(1), "one fill")
		Expect(isStreamingList(rl[0])).To(BeTrue(), "the store was filled by a streaming list")
		// The server's own objects (managedFields, timestamps, UIDs),
		// through the clientset's protobuf decoder, one by one.
		Expect(inf.GetStore().List()).To(HaveLen(20))
		for _, obj := range inf.GetStore().List() {
			held := obj.(*corev1.ConfigMap)
			got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, held.Name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(held).To(Equal(got), "%s as the streaming list stored it and as the clientset gets it", held.Name)
		}
	})
})

// factoryLine builds the factory line's ConfigMap informer of ns through a
// new proxy of c's first apiserver, with lo and a compat Detector of that
// proxy as lo.Server; start starts it and waits for its sync (it is shut
// down at cleanup).
func factoryLine(ctx context.Context, c *harness.Cluster, ns string, lo lister.Options) (p *faults.Proxy, inf cache.SharedIndexInformer, start func()) {
	GinkgoHelper()
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	lo.Server = detectorServer(pcfg)
	factory := reflector.NewSharedInformerFactoryWithOptions(suite.Clientset(pcfg), 0, lo, informers.WithNamespace(ns))
	inf = factory.Core().V1().ConfigMaps().Informer()
	return p, inf, func() {
		GinkgoHelper()
		fctx, cancel := context.WithCancel(ctx)
		DeferCleanup(func() { cancel(); factory.Shutdown() })
		factory.Start(fctx.Done())
		for typ, ok := range factory.WaitForCacheSync(fctx.Done()) {
			Expect(ok).To(BeTrue(), "%v not synced", typ)
		}
	}
}

// relistKeepsUnchanged checks the relist of 10 ConfigMaps after one changed
// while the watch was down, by a list or a streaming list.
func relistKeepsUnchanged(ctx context.Context, c *harness.Cluster, streaming bool) {
	cs := suite.Clientset(c.RESTConfig())
	ns := populate(ctx, cs, "unchanged", 10)
	p, inf, start := factoryLine(ctx, c, ns, lister.Options{DisableStreamingList: !streaming})
	var mu sync.Mutex
	updates := map[string][2]string{} // name -> old and new resourceVersion of its last update
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, obj any) {
		o, n := old.(*corev1.ConfigMap), obj.(*corev1.ConfigMap)
		mu.Lock()
		updates[n.Name] = [2]string{o.ResourceVersion, n.ResourceVersion}
		mu.Unlock()
	}})
	Expect(err).NotTo(HaveOccurred())
	start()
	Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
	held := map[string]*corev1.ConfigMap{}
	for _, obj := range inf.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		held[cm.Name] = cm
	}
	Expect(held).To(HaveLen(10))

	// The watch forwards nothing while cm-5 changes; its resumption is
	// answered 410, so the informer relists with a list.
	p.StallWatches(time.Minute)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-5", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	cm.Data = map[string]string{"updated": "while the watch was down"}
	changed, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	dropWatchAndAnswerResumeGone(p, ns)

	Eventually(func() string {
		obj, _, _ := inf.GetStore().GetByKey(ns + "/cm-5")
		if obj == nil {
			return ""
		}
		return obj.(*corev1.ConfigMap).ResourceVersion
	}).WithTimeout(60*time.Second).Should(Equal(changed.ResourceVersion), "the relist did not bring cm-5's update")
	Eventually(func() []faults.Request { return relists(p, ns) }).WithTimeout(10*time.Second).Should(HaveLen(1), "one relist")
	rl := relists(p, ns)
	Expect(rl).To(HaveLen(1), "one relist")
	Expect(isStreamingList(rl[0])).To(Equal(streaming), "the relist is a streaming list: %v", streaming)
	for name, before := range held {
		obj, ok, err := inf.GetStore().GetByKey(ns + "/" + name)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue(), name)
		if name == "cm-5" {
			Expect(obj).NotTo(BeIdenticalTo(before), "cm-5 changed: decoded anew")
			continue
		}
		Expect(obj).To(BeIdenticalTo(before), "%s is held at the listed resourceVersion: kept as it is, not decoded anew", name)
	}
	Eventually(func() map[string][2]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(updates)
	}).WithTimeout(10*time.Second).Should(And(
		HaveKeyWithValue("cm-5", [2]string{held["cm-5"].ResourceVersion, changed.ResourceVersion}),
		HaveKeyWithValue("cm-0", [2]string{held["cm-0"].ResourceVersion, held["cm-0"].ResourceVersion})),
		"the handler gets cm-5's update, and each unchanged object as an update to itself")
}
