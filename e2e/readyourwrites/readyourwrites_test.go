package readyourwrites_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/readyourwrites"
	"github.com/steadywatch/steadywatch/reflector"
)

type cmClient = readyourwrites.Client[*corev1.ConfigMap, *corev1.ConfigMapList]

// env is one server behind a fault proxy, a stock client-go informer and
// steadywatch's informer through the proxy, and two read-your-writes
// clients over steadywatch's (the default bound, and a short one).
type env struct {
	version string
	pcfg    *rest.Config
	p       *faults.Proxy
	ns      string
	stock   cache.SharedIndexInformer
	ours    *cmClient
	short   *cmClient
	rec     *reasons.Counter
	shortB  time.Duration
}

// stockListWatch is client-go's own ListWatch; on a server that ignores
// sendInitialEvents (v1.18) stock client-go never syncs with its default
// streaming list, so there it opts out the documented way
// (IsWatchListSemanticsUnSupported), as a stock user must.
type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func start(ctx context.Context, version string) *env {
	c := suite.StartHarness(ctx, harness.Options{Version: version}, "needs the harness's "+version+" server and its fault proxy")
	cs := suite.Clientset(c.RESTConfig())
	e := &env{version: version, ns: suite.NewNamespace(ctx, cs, "ryw"), rec: reasons.New(), shortB: time.Second}
	var pcfg *rest.Config
	var err error
	e.p, pcfg, err = c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	e.pcfg = pcfg
	pcs := suite.Clientset(pcfg)
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

	var stockLW cache.ListerWatcher = cache.NewListWatchFromClient(pcs.CoreV1().RESTClient(), "configmaps", e.ns, fields.Everything())
	if version == build.Legacy {
		stockLW = noWatchList{stockLW.(*cache.ListWatch)}
	}
	e.stock = cache.NewSharedIndexInformer(stockLW, &corev1.ConfigMap{}, 0, indexers)

	server, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(pcfg)
	Expect(err).NotTo(HaveOccurred())
	oursLW := cache.NewListWatchFromClient(pcs.CoreV1().RESTClient(), "configmaps", e.ns, fields.Everything())
	oursInf := reflector.NewSharedIndexInformerWithOptions(oursLW, &corev1.ConfigMap{},
		cache.SharedIndexInformerOptions{Indexers: indexers}, lister.Options{Server: server})
	typed := pcs.CoreV1().ConfigMaps(e.ns)
	e.ours, err = readyourwrites.New(typed, e.ns, oursInf, readyourwrites.Options{Metrics: e.rec})
	Expect(err).NotTo(HaveOccurred())
	e.short, err = readyourwrites.New(typed, e.ns, oursInf, readyourwrites.Options{Bound: e.shortB, Metrics: e.rec})
	Expect(err).NotTo(HaveOccurred())

	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, inf := range []cache.SharedIndexInformer{e.stock, oursInf} {
		wg.Add(1)
		go func() { defer GinkgoRecover(); defer wg.Done(); inf.RunWithContext(runCtx) }()
	}
	DeferCleanup(func() { cancel(); wg.Wait() })
	syncCtx, done := context.WithTimeout(ctx, 2*time.Minute)
	defer done()
	Expect(cache.WaitForCacheSync(syncCtx.Done(), e.stock.HasSynced, oursInf.HasSynced)).To(BeTrue(), "both informers sync on "+version)
	_, err = e.ours.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "loop"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return e
}

// outcome of a loop: stale reads of stock and ours out of cycles, and our
// added wait per read.
type outcome struct {
	cycles, stockStale, oursStale, fallbacks int
	waits                                    []time.Duration
}

func (o outcome) String() string {
	return fmt.Sprintf("%d cycles: stock stale %d, ours stale %d, ours fell back to the server %d, our added wait p50 %s p99 %s",
		o.cycles, o.stockStale, o.oursStale, o.fallbacks, pct(o.waits, 50), pct(o.waits, 99))
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// older reports whether read is older than written (KEP-5504).
func older(read, written string) bool {
	c, err := resourceversion.CompareResourceVersion(read, written)
	Expect(err).NotTo(HaveOccurred(), "a real server's resourceVersions compare")
	return c < 0
}

// loop runs n controller cycles: update the ConfigMap through c, then read
// it at once from the stock informer's cache (counting stale reads) and
// through c (which must never be stale), as a reconcile does.
func (e *env) loop(ctx context.Context, c *cmClient, n int) outcome {
	o := outcome{cycles: n}
	before := e.rec.Total(reasons.FamilyReadFallback)
	for i := range n {
		cur, err := c.Get(ctx, "loop")
		Expect(err).NotTo(HaveOccurred())
		next := cur.DeepCopy()
		next.Data = map[string]string{"n": strconv.Itoa(i)}
		written, err := c.Update(ctx, next, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		if obj, ok, _ := e.stock.GetIndexer().GetByKey(e.ns + "/loop"); !ok || older(obj.(*corev1.ConfigMap).ResourceVersion, written.ResourceVersion) {
			o.stockStale++
		}
		begin := time.Now()
		got, err := c.Get(ctx, "loop")
		o.waits = append(o.waits, time.Since(begin))
		Expect(err).NotTo(HaveOccurred())
		if older(got.ResourceVersion, written.ResourceVersion) {
			o.oursStale++
		}
	}
	o.fallbacks = e.rec.Total(reasons.FamilyReadFallback) - before
	return o
}

// listed checks a List after a write holds the write.
func (e *env) listAfterWrite(ctx context.Context) {
	cur, err := e.ours.Get(ctx, "loop")
	Expect(err).NotTo(HaveOccurred())
	next := cur.DeepCopy()
	next.Data = map[string]string{"list": "yes"}
	written, err := e.ours.Update(ctx, next, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	items, err := e.ours.List(ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	found := false
	for _, it := range items {
		if it.Name == "loop" {
			found = true
			Expect(older(it.ResourceVersion, written.ResourceVersion)).To(BeFalse(), "a List after a write holds the write")
		}
	}
	Expect(found).To(BeTrue())
}

// rewatch makes the watches through the proxy start again under its
// current stream faults and waits until n of them are open again (both
// informers: 2).
func (e *env) rewatch(n int) {
	mark := len(e.p.Requests())
	e.p.EndWatches()
	Eventually(func() int {
		watches := 0
		for _, r := range e.p.Requests()[mark:] {
			if r.Verb == "watch" {
				watches++
			}
		}
		return watches
	}).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).Should(BeNumerically(">=", n), "the watches start again")
}

func report(e *env, fault string, o outcome) {
	line := fmt.Sprintf("read-your-writes %s, %s: %s", e.version, fault, o)
	fmt.Fprintln(GinkgoWriter, line)
	AddReportEntry(line)
}

// The cycle counts keep the suite within the CI budget: the lag makes every
// read of ours wait about 2 s.
const (
	plainCycles = 200
	lagCycles   = 10
	cutCycles   = 5
	lag         = 2 * time.Second
)

func specs(version string) {
	var e *env
	BeforeAll(func(ctx SpecContext) { e = start(ctx, version) })

	It("never reads older than its own write in a write-then-read loop, where stock client-go does", func(ctx SpecContext) {
		o := e.loop(ctx, e.ours, plainCycles)
		report(e, "no fault", o)
		Expect(o.oursStale).To(BeZero())
		e.listAfterWrite(ctx)
	})

	It("lets reflector.New's WaitForResourceVersion return once its store holds a write, also behind a lagging watch", func(ctx SpecContext) {
		cs := suite.Clientset(e.pcfg)
		server, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(e.pcfg)
		Expect(err).NotTo(HaveOccurred())
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := reflector.New(suite.ConfigMaps(cs, e.ns), &corev1.ConfigMap{}, store, reflector.Options{Lister: lister.Options{Server: server}})
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer GinkgoRecover(); defer close(done); r.Run(runCtx) }()
		DeferCleanup(func() { cancel(); <-done })
		Eventually(r.HasSynced).WithTimeout(time.Minute).Should(BeTrue())
		for _, delay := range []time.Duration{0, lag} {
			e.p.SetStreamFaults(faults.StreamFaults{DelayEvents: delay})
			e.rewatch(3) // both informers' and the reflector's
			written, err := cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "wait-"}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			begin := time.Now()
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			Expect(r.WaitForResourceVersion(wctx, written.ResourceVersion)).To(Succeed())
			wcancel()
			waited := time.Since(begin)
			obj, ok, _ := store.Get(written)
			Expect(ok).To(BeTrue(), "the store holds the object when the wait returns")
			Expect(older(obj.(*corev1.ConfigMap).ResourceVersion, written.ResourceVersion)).To(BeFalse())
			line := fmt.Sprintf("reflector wait %s, watch events held back %s: returned after %s", e.version, delay, waited)
			fmt.Fprintln(GinkgoWriter, line)
			AddReportEntry(line)
			if delay > 0 {
				Expect(waited).To(BeNumerically(">=", delay/2), "the wait lasts until the held-back event arrives")
			}
		}
		e.p.SetStreamFaults(faults.StreamFaults{})
		e.rewatch(3)
	})

	It("waits about the lag when the watch holds every event back", func(ctx SpecContext) {
		e.p.SetStreamFaults(faults.StreamFaults{DelayEvents: lag})
		DeferCleanup(func() { e.p.SetStreamFaults(faults.StreamFaults{}); e.rewatch(2) })
		e.rewatch(2)
		o := e.loop(ctx, e.ours, lagCycles)
		report(e, fmt.Sprintf("watch events held back %s", lag), o)
		Expect(o.oursStale).To(BeZero())
		Expect(o.stockStale).To(Equal(lagCycles), "with every event held back %s, stock reads its own write stale every cycle", lag)
		Expect(o.fallbacks).To(BeZero(), "the lag is shorter than the default bound: the cache catches up")
		Expect(pct(o.waits, 50)).To(BeNumerically(">=", lag/2), "ours waits for the held-back event")
		e.listAfterWrite(ctx)
	})

	It("reads from the server past the bound while the watch is cut, and stays correct", func(ctx SpecContext) {
		e.p.StallWatches(time.Duration(cutCycles+5) * 2 * e.shortB)
		DeferCleanup(func() { e.p.StallWatches(0) })
		o := e.loop(ctx, e.short, cutCycles)
		report(e, "watch cut longer than the bound", o)
		Expect(o.oursStale).To(BeZero())
		Expect(o.stockStale).To(Equal(cutCycles))
		Expect(o.fallbacks).To(BeNumerically(">=", cutCycles), "every read after an own write falls back at the bound")
	})
}

var _ = Describe("read your own writes", func() {
	Context(build.Current, Label("conformance", "needs-faults"), Ordered, func() { specs(build.Current) })
	Context(build.Legacy, Label("legacy", "needs-faults"), Ordered, func() { specs(build.Legacy) })
})
