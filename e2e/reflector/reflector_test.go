package reflector_test

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

// ---- helpers ----

func startCluster(o harness.Options) *harness.Cluster {
	o.Progress = GinkgoWriter
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c, err := harness.Start(ctx, o)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Stop)
	return c
}

func clientset(cfg *rest.Config) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return cs
}

// seed creates a namespace with n ConfigMaps.
func seed(ctx context.Context, cs kubernetes.Interface, prefix string, n int) string {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	for i := 0; i < n; i++ {
		createCM(ctx, cs, ns.Name, fmt.Sprintf("cm-%d", i))
	}
	return ns.Name
}

func createCM(ctx context.Context, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return cm
}

// cmClient adapts a typed ConfigMaps client to reflector.Client.
type cmClient struct {
	cms interface {
		List(ctx context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error)
		Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
	}
}

func (c cmClient) List(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
	l, err := c.cms.List(ctx, o)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (c cmClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.cms.Watch(ctx, o)
}

// rvLog is a store that records every resourceVersion the reflector reports
// (Replace and UpdateResourceVersion) and every object resourceVersion it
// stores, to check that nothing ever goes back in time.
type rvLog struct {
	cache.Store
	mu       sync.Mutex
	rvs      []string
	backward []string // "key: old -> new" for an object whose RV went down
}

func newRVLog() *rvLog { return &rvLog{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)} }

func (s *rvLog) note(rv string) { s.mu.Lock(); s.rvs = append(s.rvs, rv); s.mu.Unlock() }

func (s *rvLog) UpdateResourceVersion(rv string) { s.note(rv) }

func (s *rvLog) Replace(items []any, rv string) error {
	for _, it := range items {
		s.checkForward(it)
	}
	s.note(rv)
	return s.Store.Replace(items, rv)
}

func (s *rvLog) Update(obj any) error { s.checkForward(obj); return s.Store.Update(obj) }

func (s *rvLog) checkForward(obj any) {
	n := obj.(*corev1.ConfigMap)
	old, ok, _ := s.Store.Get(n)
	if !ok {
		return
	}
	if o := old.(*corev1.ConfigMap); rvLess(n.ResourceVersion, o.ResourceVersion) {
		s.mu.Lock()
		s.backward = append(s.backward, fmt.Sprintf("%s/%s: %s -> %s", n.Namespace, n.Name, o.ResourceVersion, n.ResourceVersion))
		s.mu.Unlock()
	}
}

func (s *rvLog) wentBack() (backward []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	backward = append(backward, s.backward...)
	for i := 1; i < len(s.rvs); i++ {
		if rvLess(s.rvs[i], s.rvs[i-1]) {
			backward = append(backward, fmt.Sprintf("store RV %s -> %s", s.rvs[i-1], s.rvs[i]))
		}
	}
	return backward
}

func rvLess(a, b string) bool {
	var x, y uint64
	_, e1 := fmt.Sscan(a, &x)
	_, e2 := fmt.Sscan(b, &y)
	return e1 == nil && e2 == nil && x < y
}

type running struct {
	r     *reflector.Reflector
	store *rvLog
	stop  func()
}

// runReflector starts a ConfigMap reflector on ns through cfg; it is
// stopped (and waited for) at cleanup.
func runReflector(cfg *rest.Config, ns string, o reflector.Options) *running {
	if o.Server == nil {
		srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		o.Server = srv
	}
	store := newRVLog()
	r := reflector.New(cmClient{clientset(cfg).CoreV1().ConfigMaps(ns)}, &corev1.ConfigMap{}, store, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer GinkgoRecover(); defer close(done); r.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())
		})
	}
	DeferCleanup(stop)
	return &running{r: r, store: store, stop: stop}
}

func waitSynced(r *reflector.Reflector, d time.Duration) time.Duration {
	start := time.Now()
	Eventually(r.HasSynced).WithTimeout(d).WithPolling(10 * time.Millisecond).Should(BeTrue())
	return time.Since(start)
}

func query(req faults.Request) url.Values {
	v, err := url.ParseQuery(req.RawQuery)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// requests returns the proxy's logged requests of verb on configmaps in ns.
func requests(p *faults.Proxy, verb, ns string) []faults.Request {
	var out []faults.Request
	for _, r := range p.Requests() {
		if r.Verb == verb && r.Resource == "configmaps" && r.Namespace == ns {
			out = append(out, r)
		}
	}
	return out
}

// reflectorGoroutines returns the stacks of live goroutines running reflector code.
func reflectorGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "steadywatch/reflector.(*Reflector)") {
			out = append(out, g)
		}
	}
	return out
}

// relistRecorder records relist causes; everything else is dropped.
type relistRecorder struct {
	metrics.Nop
	mu     sync.Mutex
	causes []string
}

func (r *relistRecorder) Relist(_, cause string) {
	r.mu.Lock()
	r.causes = append(r.causes, cause)
	r.mu.Unlock()
}

func (r *relistRecorder) relists() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.causes...)
}

// ---- specs ----

var _ = Describe("sync time", Label("legacy"), Ordered, func() {
	for _, version := range []string{build.Current, build.Legacy} {
		Context(version, Ordered, func() {
			var c *harness.Cluster
			var ns string
			BeforeAll(func(ctx SpecContext) {
				c = startCluster(harness.Options{Version: version})
				ns = seed(ctx, clientset(c.RESTConfig()), "sync", 100)
			})

			It("syncs 100 ConfigMaps promptly with capabilities from /version", func() {
				run := runReflector(c.RESTConfig(), ns, reflector.Options{Name: "sync-" + version})
				took := waitSynced(run.r, 30*time.Second)
				AddReportEntry("sync time "+version, took.String())
				fmt.Fprintf(GinkgoWriter, "reflector synced on %s in %v\n", version, took)
				Expect(took).To(BeNumerically("<", 10*time.Second))
				Expect(run.store.ListKeys()).To(HaveLen(100))
			})

			It("syncs even when told (wrongly, for v1.18) that streaming lists work", func() {
				srv := compat.Static(compat.Capabilities{Support: map[compat.Capability]compat.Support{compat.StreamingList: compat.Yes}})
				run := runReflector(c.RESTConfig(), ns, reflector.Options{Name: "sync-stream-" + version, Server: srv, InitialEventsTimeout: 2 * time.Second})
				took := waitSynced(run.r, 30*time.Second)
				AddReportEntry("sync time with StreamingList=Yes "+version, took.String())
				fmt.Fprintf(GinkgoWriter, "reflector (streaming asked) synced on %s in %v\n", version, took)
				Expect(took).To(BeNumerically("<", 10*time.Second))
				Expect(run.store.ListKeys()).To(HaveLen(100))
				want := compat.Yes
				if version == build.Legacy {
					want = compat.No // the reflector observed that v1.18 ignores sendInitialEvents
				}
				Expect(srv.Capabilities(context.Background()).Get(compat.StreamingList)).To(Equal(want))
			})
		})
	}
})

var _ = Describe("410 recovery", Ordered, func() {
	for _, version := range []string{build.Current, build.Legacy} {
		It("relists with NotOlderThan(last RV), not RV=\"\", after a watch 410 on "+version, func(ctx SpecContext) {
			// The watch cache off sends watches to etcd, where a compacted RV is 410 at once.
			c := startCluster(harness.Options{Version: version, DisableWatchCache: true})
			cs := clientset(c.RESTConfig())
			ns := seed(ctx, cs, "gone", 5)
			p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
			Expect(err).NotTo(HaveOccurred())
			rec := &relistRecorder{}
			run := runReflector(pcfg, ns, reflector.Options{Name: "gone-" + version, Metrics: rec})
			waitSynced(run.r, 30*time.Second)
			Eventually(func() int { return len(requests(p, "watch", ns)) }).WithTimeout(10 * time.Second).Should(Equal(1))
			last := run.r.LastSyncResourceVersion()

			// Move etcd on without touching ns (no event reaches the reflector),
			// compact, then cut the watch: it must come back from `last`, get 410
			// and relist NotOlderThan(last).
			seed(ctx, cs, "other", 20)
			_, err = c.Etcd().Compact(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(p.DropWatches()).To(Equal(1))

			Eventually(func() int { return len(requests(p, "list", ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 2))
			Eventually(func() int { return len(requests(p, "watch", ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 3))
			lists := requests(p, "list", ns)
			for i, l := range lists {
				fmt.Fprintf(GinkgoWriter, "list %d: %s -> %d\n", i, l.RawQuery, l.Status)
			}
			Expect(query(lists[0]).Get("resourceVersion")).To(BeEmpty(), "the initial list is MostRecent")
			relist := query(lists[1])
			Expect(relist.Get("resourceVersion")).To(Equal(last), "the relist after 410 is NotOlderThan(last)")
			Expect(relist.Get("limit")).To(BeEmpty(), "NotOlderThan is unpaginated (served from the watch cache when on)")
			Expect(lists[1].Status).To(Equal(200))
			for _, l := range lists[1:] {
				Expect(query(l).Get("resourceVersion")).NotTo(BeEmpty(), "no MostRecent relist while NotOlderThan works: %s", l.RawQuery)
			}
			// And the relist was caused by the watch's 410, as the reflector counted it.
			Expect(rec.relists()).To(ContainElement("watch-gone"))
			Expect(run.store.ListKeys()).To(HaveLen(5))
			Expect(run.store.wentBack()).To(BeEmpty())
		})
	}
})

var _ = Describe("bookmarks", Ordered, func() {
	It("advance the resourceVersion on a quiet resource", func(ctx SpecContext) {
		c := startCluster(harness.Options{Version: build.Current})
		cs := clientset(c.RESTConfig())
		ns := seed(ctx, cs, "quiet", 3)
		run := runReflector(c.RESTConfig(), ns, reflector.Options{Name: "bookmarks"})
		waitSynced(run.r, 30*time.Second)
		start := run.r.LastSyncResourceVersion()
		// Writes elsewhere move the cluster's resourceVersion; ns stays quiet.
		other := seed(ctx, cs, "busy", 5)
		newer := createCM(ctx, cs, other, "last").ResourceVersion
		// The watch cache sends a bookmark about once a minute.
		Eventually(func() bool { return !rvLess(run.r.LastSyncResourceVersion(), newer) }).
			WithTimeout(150*time.Second).WithPolling(time.Second).Should(BeTrue(),
			"RV stayed at %s (start %s), want >= %s", run.r.LastSyncResourceVersion(), start, newer)
		Expect(run.r.State().Phase).To(Equal(reflector.PhaseWatching))
	})
})

var _ = Describe("watch faults", Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func() { c = startCluster(harness.Options{Version: build.Current}) })

	It("resumes a dropped watch from the last RV without a relist", func(ctx SpecContext) {
		cs := clientset(c.RESTConfig())
		ns := seed(ctx, cs, "drop", 3)
		p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		run := runReflector(pcfg, ns, reflector.Options{Name: "drop"})
		waitSynced(run.r, 30*time.Second)
		Eventually(func() int { return len(requests(p, "watch", ns)) }).WithTimeout(10 * time.Second).Should(Equal(1))
		createCM(ctx, cs, ns, "before-drop")
		Eventually(func() int { return len(run.store.ListKeys()) }).WithTimeout(10 * time.Second).Should(Equal(4))
		last := run.r.LastSyncResourceVersion()

		Expect(p.DropWatches()).To(Equal(1))
		Eventually(func() int { return len(requests(p, "watch", ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 2))
		Expect(query(requests(p, "watch", ns)[1]).Get("resourceVersion")).To(Equal(last))
		createCM(ctx, cs, ns, "after-drop")
		Eventually(func() int { return len(run.store.ListKeys()) }).WithTimeout(10 * time.Second).Should(Equal(5))
		Expect(requests(p, "list", ns)).To(HaveLen(1), "a dropped watch must not cause a relist")
	})

	It("detects a stalled watch and restarts it without a relist", func(ctx SpecContext) {
		cs := clientset(c.RESTConfig())
		ns := seed(ctx, cs, "stall", 3)
		p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		run := runReflector(pcfg, ns, reflector.Options{Name: "stall", StallTimeout: 3 * time.Second})
		waitSynced(run.r, 30*time.Second)
		Eventually(func() int { return len(requests(p, "watch", ns)) }).WithTimeout(10 * time.Second).Should(Equal(1))

		p.StallWatches(8 * time.Second)
		stalledAt := time.Now()
		createCM(ctx, cs, ns, "during-stall")
		// The stall (no event, no bookmark for 3s) is detected and the watch restarted.
		Eventually(func() int { return len(requests(p, "watch", ns)) }).WithTimeout(15 * time.Second).Should(BeNumerically(">=", 2))
		fmt.Fprintf(GinkgoWriter, "stalled watch restarted after %v\n", time.Since(stalledAt))
		Expect(time.Since(stalledAt)).To(BeNumerically("<", 7*time.Second))
		Eventually(func() int { return len(run.store.ListKeys()) }).WithTimeout(30 * time.Second).Should(Equal(4))
		Expect(requests(p, "list", ns)).To(HaveLen(1), "a stalled watch must not cause a relist")
	})

	It("leaves no goroutine behind when stopped", func(ctx SpecContext) {
		ns := seed(ctx, clientset(c.RESTConfig()), "leak", 2)
		run := runReflector(c.RESTConfig(), ns, reflector.Options{Name: "leak", ConsistencyCheckInterval: time.Second, ResyncPeriod: time.Second})
		waitSynced(run.r, 30*time.Second)
		Expect(reflectorGoroutines()).NotTo(BeEmpty())
		run.stop()
		Eventually(reflectorGoroutines).WithTimeout(10 * time.Second).Should(BeEmpty())
		Expect(run.r.State().Phase).To(Equal(reflector.PhaseStopped))
	})
})

var _ = Describe("HA", Ordered, func() {
	It("never goes back in time while requests alternate between two apiservers", func(ctx SpecContext) {
		c := startCluster(harness.Options{Version: build.Current, HA: true})
		b := c.Balancer()
		Expect(b).NotTo(BeNil())
		cs := clientset(c.RESTConfig())
		ns := seed(ctx, cs, "ha", 10)
		b.Alternate() // every request goes to the other apiserver
		run := runReflector(c.RESTConfig(), ns, reflector.Options{Name: "ha", StallTimeout: 5 * time.Second})
		waitSynced(run.r, 30*time.Second)

		// Writes, dropped watches (resumed on the other server), a restart of
		// one apiserver and a compaction (forcing relists) while alternating.
		for i := 0; i < 30; i++ {
			cm := createCM(ctx, cs, ns, fmt.Sprintf("w-%d", i))
			cm.Data = map[string]string{"n": fmt.Sprint(i)}
			_, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			if i%10 == 5 {
				b.DropWatches()
			}
		}
		Expect(c.APIServers()[1].Restart(ctx)).To(Succeed())
		_, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		b.DropWatches()
		final := createCM(ctx, cs, ns, "final").ResourceVersion

		Eventually(func() bool { return !rvLess(run.r.LastSyncResourceVersion(), final) }).WithTimeout(60 * time.Second).Should(BeTrue())
		Eventually(func() int { return len(run.store.ListKeys()) }).WithTimeout(30 * time.Second).Should(Equal(41))
		Expect(run.store.wentBack()).To(BeEmpty(), "the store went back in time")
	})
})
