package reflector_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// Every spec runs against real kube-apiservers that the harness starts
// (v1.36.3 = build.Current, v1.18.19 = build.Legacy), most of them through a
// faults.Proxy whose request log is the evidence of what the reflector sent.
// The "sync / on any cluster" specs need no fault control and also run on an
// external cluster (E2E_KUBECONFIG); the rest are labelled needs-faults and
// skip there with the reason.
//
// Real behaviour the specs rely on (observed here, not assumed):
//   - v1.36 honours streaming lists (WatchList on by default), so with a
//     compat Detector the reflector's (re)lists there are watches with
//     sendInitialEvents=true, not list requests; v1.18.19 ignores
//     sendInitialEvents, and a Detector says so from /version, so there the
//     reflector lists.
//   - With the watch cache off, a watch at a compacted resourceVersion is
//     410 at once (from etcd); a streaming list NotOlderThan that same
//     resourceVersion is served (etcd lists the current state).
//   - With the watch cache on, a watch is 410 only once its resourceVersion
//     has left the cache's event window: >=75 s old and pushed out by newer
//     events (k8s.io/apiserver cacher, DefaultEventFreshDuration).
//   - The watch cache sends a bookmark to a plain watch about once a minute
//     (about 60 s after the last write). A watch that began as a v1.36
//     streaming list gets one within a second of a write elsewhere, then
//     about once a minute.

// syncEnv is what the proxy sync specs of one server share: a namespace
// with 100 ConfigMaps and a fault proxy in front of the server.
type syncEnv struct {
	ns   string
	p    *faults.Proxy
	pcfg *rest.Config
}

// proxySyncSpecs are the sync specs whose evidence is the proxy's request
// log (which requests filled the store); env is set by the container's
// BeforeAll.
func proxySyncSpecs(version string, env *syncEnv) {
	BeforeEach(func() { env.p.ResetRequests() })

	It("syncs 100 ConfigMaps with a compat Detector, streaming only where the server streams", func() {
		start := time.Now()
		run := runReflector(env.pcfg, env.ns, reflector.Options{Lister: lister.Options{Name: "sync-" + version}})
		waitSynced(run.r, 60*time.Second)
		suite.Timing("reflector sync (Detector) on "+version, time.Since(start))
		Expect(run.store.ListKeys()).To(HaveLen(100))
		Eventually(func() reflector.Phase { return run.r.State().Phase }).WithTimeout(30 * time.Second).Should(Equal(reflector.PhaseWatching))

		fills := relists(env.p, env.ns)
		logRequests("requests", requests(env.p, "", env.ns))
		Expect(fills).To(HaveLen(1), "one list or streaming list fills the store")
		if version == build.Legacy {
			Expect(fills[0].Verb).To(Equal("list"), "on v1.18 the reflector must not even try a streaming list")
			// The newest list, in pages, read from etcd: v1.18's watch cache
			// moves only when ConfigMaps are written (no progress
			// notifications before v1.20, KEP-1904), so a list not older
			// than the current resourceVersion could wait for it and be
			// answered 504 "too large resource version"
			// (kubernetes/kubernetes#97294).
			Expect(query(fills[0]).Get("resourceVersion")).To(BeEmpty(), "the newest list: %s", fills[0].RawQuery)
			Expect(query(fills[0]).Get("limit")).NotTo(BeEmpty(), "in pages: %s", fills[0].RawQuery)
			Expect(requests(env.p, "list", env.ns)).To(HaveLen(1), "no limit=1 read of the current resourceVersion first")
			Expect(plainWatches(env.p, env.ns)).NotTo(BeEmpty())
			Expect(query(plainWatches(env.p, env.ns)[0]).Get("resourceVersion")).To(Equal(run.r.LastSyncResourceVersion()))
		} else {
			Expect(isStreamingList(fills[0])).To(BeTrue(), "v1.36 streams the initial list: %s", fills[0].RawQuery)
			Expect(withoutCountProbes(requests(env.p, "list", env.ns))).To(BeEmpty(), "no list of the data (the guard's limit=1 count aside)")
		}
	})

	It("lists from the watch cache in one response where it does not stream and the cache keeps up (no pages read from etcd)", func() {
		run := runReflector(env.pcfg, env.ns, reflector.Options{Lister: lister.Options{Name: "sync-cache-" + version, DisableStreamingList: true}})
		waitSynced(run.r, 60*time.Second)
		Expect(run.store.ListKeys()).To(HaveLen(100))
		fills := relists(env.p, env.ns)
		logRequests("requests", requests(env.p, "", env.ns))
		Expect(fills).To(HaveLen(1), "one list fills the store")
		Expect(query(fills[0]).Get("continue")).To(BeEmpty())
		Expect(query(fills[0]).Get("resourceVersion")).To(BeEmpty(), fills[0].RawQuery)
		if version == build.Legacy {
			// A watch cache that moves only on ConfigMap writes (before
			// v1.20): the newest list in pages, from etcd (100 objects: one
			// page).
			Expect(query(fills[0]).Get("limit")).NotTo(BeEmpty(), "in pages: %s", fills[0].RawQuery)
		} else {
			// ConsistentListFromCache (1.31+): MostRecent itself is served
			// from the cache, in one response.
			Expect(query(fills[0]).Get("limit")).To(BeEmpty(), "one response: %s", fills[0].RawQuery)
		}
		Expect(run.r.LastSyncResourceVersion()).NotTo(BeEmpty())
	})

	It("syncs even when told (wrongly, for v1.18) that streaming lists work", func() {
		srv := capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes}})
		start := time.Now()
		run := runReflector(env.pcfg, env.ns, reflector.Options{Lister: lister.Options{Name: "sync-stream-" + version, Server: srv, InitialEventsTimeout: 2 * time.Second}})
		waitSynced(run.r, 60*time.Second)
		suite.Timing("reflector sync (StreamingList=Yes, InitialEventsTimeout 2s) on "+version, time.Since(start))
		Expect(run.store.ListKeys()).To(HaveLen(100))

		fills := relists(env.p, env.ns)
		logRequests("requests", requests(env.p, "", env.ns))
		Expect(isStreamingList(fills[0])).To(BeTrue())
		if version == build.Legacy {
			// v1.18 sends the 100 objects as ADDED events and never the
			// initial-events-end bookmark: after 2 s of quiet the
			// reflector records that and lists.
			Expect(fills).To(HaveLen(2))
			Expect(fills[1].Verb).To(Equal("list"))
			// Evidence is kept for the resource's API group/version (core v1).
			core := capability.ForGroupVersion(srv, schema.GroupVersion{Version: "v1"})
			Expect(core.Capabilities(context.Background()).Get(capability.StreamingList)).To(Equal(capability.No))
		} else {
			Expect(fills).To(HaveLen(1))
			Expect(srv.Capabilities(context.Background()).Get(capability.StreamingList)).To(Equal(capability.Yes))
		}
	})

	for _, withServer := range []bool{false, true} {
		name := map[bool]string{false: "without a Server", true: "with a Detector's Server"}[withServer]
		It("NewSharedIndexInformer (steadywatch's informer over reflector.New) syncs "+name, func(ctx SpecContext) {
			lo := lister.Options{Name: "informer-" + version}
			if withServer {
				lo.Server = detectorServer(env.pcfg)
			}
			lw := cache.NewListWatchFromClient(suite.Clientset(env.pcfg).CoreV1().RESTClient(), "configmaps", env.ns, fields.Everything())
			inf := reflector.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, lo)
			ictx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			start := time.Now()
			go func() { defer GinkgoRecover(); defer close(done); inf.RunWithContext(ictx) }()
			DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed()) })
			Eventually(inf.HasSynced).WithTimeout(60 * time.Second).WithPolling(5 * time.Millisecond).Should(BeTrue())
			suite.Timing("NewSharedIndexInformer sync "+name+" on "+version, time.Since(start))
			Expect(inf.GetStore().ListKeys()).To(HaveLen(100))

			fills := relists(env.p, env.ns)
			logRequests("requests", requests(env.p, "", env.ns))
			switch {
			case !withServer || version == build.Legacy:
				// reflector.New streams only where the Server says the
				// apiserver can: without one (and on v1.18) it lists.
				Expect(fills).NotTo(BeEmpty())
				for _, f := range fills {
					Expect(isStreamingList(f)).To(BeFalse())
					Expect(f.Verb).To(Equal("list"))
				}
			default:
				Expect(fills).To(HaveLen(1))
				Expect(isStreamingList(fills[0])).To(BeTrue())
			}
		})
	}
}

var _ = Describe("sync", Ordered, func() {
	Context(build.Current, Label("conformance"), Ordered, func() {
		var t *extcluster.Target
		BeforeAll(func(ctx SpecContext) { t = suite.Start(ctx, harness.Options{Version: build.Current}) })

		// These run on any cluster (E2E_KUBECONFIG too): they check what the
		// reflector delivers, not which requests it sent.
		Context("on any cluster", func() {
			It("syncs with a compat Detector, follows creates, updates and deletes, and the store equals a fresh list and never goes back", func(ctx SpecContext) {
				cs := suite.Clientset(t.RESTConfig())
				ns := populate(ctx, cs, "follow", 50)
				start := time.Now()
				run := runReflector(t.RESTConfig(), ns, reflector.Options{Lister: lister.Options{Name: "follow"}})
				waitSynced(run.r, 60*time.Second)
				suite.Timing("reflector sync (Detector) on "+t.Version(), time.Since(start))
				for i := 0; i < 50; i++ {
					Expect(run.store.state()).To(HaveKey(fmt.Sprintf("%s/cm-%d", ns, i)))
				}
				Eventually(func() reflector.Phase { return run.r.State().Phase }).WithTimeout(30 * time.Second).Should(Equal(reflector.PhaseWatching))
				synced := run.r.LastSyncResourceVersion()
				Expect(synced).NotTo(BeEmpty())

				created := suite.CreateConfigMap(ctx, cs, ns, "created", nil)
				cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-1", metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				cm.Data = map[string]string{"updated": "yes"}
				updated, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-2", metav1.DeleteOptions{})).To(Succeed())
				expectStoreEqualsTruth(ctx, cs, run, ns)
				state := run.store.state()
				Expect(state).To(HaveKeyWithValue(ns+"/created", created.ResourceVersion))
				Expect(state).To(HaveKeyWithValue(ns+"/cm-1", updated.ResourceVersion))
				Expect(state).NotTo(HaveKey(ns + "/cm-2"))
				Expect(rvLess(synced, run.r.LastSyncResourceVersion())).To(BeTrue(),
					"the watch moved the RV on: %s -> %s", synced, run.r.LastSyncResourceVersion())
				Expect(run.store.wentBack()).To(BeEmpty())
			})

			for _, withServer := range []bool{false, true} {
				name := map[bool]string{false: "without a Server", true: "with a Detector's Server"}[withServer]
				It("NewSharedIndexInformer (steadywatch's informer over reflector.New) syncs "+name+" and its store equals a fresh list", func(ctx SpecContext) {
					cs := suite.Clientset(t.RESTConfig())
					ns := populate(ctx, cs, "informer", 30)
					lo := lister.Options{Name: "informer-any"}
					if withServer {
						lo.Server = detectorServer(t.RESTConfig())
					}
					lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
					inf := reflector.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, lo)
					ictx, cancel := context.WithCancel(context.Background())
					done := make(chan struct{})
					go func() { defer GinkgoRecover(); defer close(done); inf.RunWithContext(ictx) }()
					DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed()) })
					Eventually(inf.HasSynced).WithTimeout(60 * time.Second).WithPolling(5 * time.Millisecond).Should(BeTrue())
					Expect(inf.GetStore().ListKeys()).To(ContainElements(ns+"/cm-0", ns+"/cm-29"))
					suite.CreateConfigMap(ctx, cs, ns, "late", nil)
					Eventually(func(g Gomega) {
						want, err := truth(ctx, cs, ns)
						g.Expect(err).NotTo(HaveOccurred())
						g.Expect(inf.GetStore().ListKeys()).To(ConsistOf(slices.Collect(maps.Keys(want))))
					}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
				})
			}

			It("stops without leaving a goroutine behind", func(ctx SpecContext) {
				Eventually(goroutines).WithTimeout(10*time.Second).Should(BeEmpty(), "left over by earlier specs")
				cs := suite.Clientset(t.RESTConfig())
				ns := populate(ctx, cs, "stop", 3)
				run := runReflector(t.RESTConfig(), ns, reflector.Options{Lister: lister.Options{Name: "stop"}, ResyncPeriod: time.Second})
				waitSynced(run.r, 60*time.Second)
				Eventually(func() reflector.Phase { return run.r.State().Phase }).WithTimeout(30 * time.Second).Should(Equal(reflector.PhaseWatching))
				Expect(goroutines()).NotTo(BeEmpty())
				run.stop()
				Eventually(goroutines).WithTimeout(10 * time.Second).Should(BeEmpty())
				Expect(run.r.State().Phase).To(Equal(reflector.PhaseStopped))
			})
		})

		Context("through the fault proxy", Label("needs-faults"), Ordered, func() {
			env := &syncEnv{}
			BeforeAll(func(ctx SpecContext) {
				c := t.RequireFaults()
				env.ns = populate(ctx, suite.Clientset(c.RESTConfig()), "sync", 100)
				var err error
				env.p, env.pcfg, err = c.NewProxy(ctx, c.APIServers()[0])
				Expect(err).NotTo(HaveOccurred())
			})
			proxySyncSpecs(build.Current, env)
		})
	})

	Context(build.Legacy, Label("legacy", "needs-faults"), Ordered, func() {
		env := &syncEnv{}
		BeforeAll(func(ctx SpecContext) {
			c := suite.StartHarness(ctx, harness.Options{Version: build.Legacy}, "needs the harness's "+build.Legacy+" server and its fault proxy")
			env.ns = populate(ctx, suite.Clientset(c.RESTConfig()), "sync", 100)
			var err error
			env.p, env.pcfg, err = c.NewProxy(ctx, c.APIServers()[0])
			Expect(err).NotTo(HaveOccurred())
		})
		proxySyncSpecs(build.Legacy, env)
	})
})

// goneSpec: a reflector through a proxy on a watch-cache-off server; etcd
// moves on and is compacted while ns is quiet; the watch is dropped, comes
// back at the last RV, gets a real 410, and must relist NotOlderThan(last).
func goneSpec(ctx context.Context, c *harness.Cluster, version string, stream bool) {
	cs := suite.Clientset(c.RESTConfig())
	ns := populate(ctx, cs, "gone", 5)
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	rec := reasons.New()
	name := fmt.Sprintf("gone-%s-stream=%v", version, stream)
	run := runReflector(pcfg, ns, reflector.Options{Lister: lister.Options{Name: name, Metrics: rec, DisableStreamingList: !stream}})
	waitSynced(run.r, 60*time.Second)
	Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
	last := run.r.LastSyncResourceVersion()
	Expect(last).NotTo(BeEmpty())

	// etcd moves on without touching ns (no event reaches the reflector) and
	// is compacted past `last`.
	populate(ctx, cs, "other", 20)
	_, err = c.Etcd().Compact(ctx)
	Expect(err).NotTo(HaveOccurred())

	expectRecovery(p, run, ns, last, p.DropWatches, "recovery after watch 410 (drop -> 410 -> relist -> watching), "+name)

	reqs := requests(p, "", ns)
	logRequests("requests after the drop", reqs)
	Expect(reqs[0].Verb).To(Equal("watch"))
	Expect(isStreamingList(reqs[0])).To(BeFalse())
	Expect(query(reqs[0]).Get("resourceVersion")).To(Equal(last), "the dropped watch is resumed from the last RV")
	Expect(rec.Labels(reasons.FamilyRelist)).To(Equal([]string{"watch-gone"}), "exactly one relist, caused by the watch's 410")

	fills := relists(p, ns)
	Expect(fills).To(HaveLen(1))
	q := query(fills[0])
	Expect(q.Get("resourceVersion")).To(Equal(last), "the relist after the 410 is NotOlderThan(last), not RV=\"\"")
	Expect(q.Get("limit")).To(BeEmpty(), "NotOlderThan is unpaginated (a limit makes it Exact on legacy servers)")
	Expect(fills[0].Status).To(Equal(200))
	if version == build.Legacy {
		Expect(q.Get("resourceVersionMatch")).To(BeEmpty(), "v1.18 gets the legacy wire form")
	} else {
		Expect(q.Get("resourceVersionMatch")).To(Equal("NotOlderThan"))
	}
	Expect(isStreamingList(fills[0])).To(Equal(stream))
	for _, r := range withoutCountProbes(reqs) {
		Expect(query(r).Get("resourceVersion")).NotTo(BeEmpty(), "no MostRecent request while NotOlderThan works: %s", r.RawQuery)
	}

	suite.CreateConfigMap(ctx, cs, ns, "after-recovery", nil)
	expectStoreEqualsTruth(ctx, cs, run, ns)
	Expect(run.store.wentBack()).To(BeEmpty())
}

var _ = Describe("410 recovery with the watch cache off", Label("needs-faults"), Ordered, func() {
	Context(build.Current, Label("conformance"), Ordered, func() {
		var c *harness.Cluster
		BeforeAll(func(ctx SpecContext) {
			c = suite.StartHarness(ctx, harness.Options{Version: build.Current, DisableWatchCache: true},
				"needs the harness's "+build.Current+" server with the watch cache off (--watch-cache=false), etcd compaction and the fault proxy")
		})
		It("relists with a streaming list NotOlderThan(last RV) after a real watch 410", func(ctx SpecContext) {
			goneSpec(ctx, c, build.Current, true)
		})
		It("relists with a list NotOlderThan(last RV) after a real watch 410 (streaming disabled)", func(ctx SpecContext) {
			goneSpec(ctx, c, build.Current, false)
		})
	})
	Context(build.Legacy, Label("legacy"), Ordered, func() {
		var c *harness.Cluster
		BeforeAll(func(ctx SpecContext) {
			c = suite.StartHarness(ctx, harness.Options{Version: build.Legacy, DisableWatchCache: true},
				"needs the harness's "+build.Legacy+" server with the watch cache off, etcd compaction and the fault proxy")
		})
		It("relists with a legacy-form list NotOlderThan(last RV) after a real watch 410", func(ctx SpecContext) {
			goneSpec(ctx, c, build.Legacy, false)
		})
	})
})

var _ = Describe("a quiet resource with the watch cache on", Label("conformance", "needs-faults"), Ordered, func() {
	It("bookmarks advance the RV a restarted watch uses; without bookmarks the RV leaves the watch cache, the watch 410s and the relist is NotOlderThan", func(ctx SpecContext) {
		// Fault proxies (one strips allowWatchBookmarks) and etcd compaction.
		c := suite.Start(ctx, harness.Options{Version: build.Current}).RequireFaults()
		cs := suite.Clientset(c.RESTConfig())
		ns := populate(ctx, cs, "quiet", 3)
		pA, cfgA, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		pB, cfgB, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		pB.StripParams("allowWatchBookmarks") // B never gets a bookmark
		pP, cfgP, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		// A: the default (on v1.36 its watch is the streaming list's);
		// P: a plain list then a plain watch; B: a plain watch without bookmarks.
		recA, recP, recB := reasons.New(), reasons.New(), reasons.New()
		a := runReflector(cfgA, ns, reflector.Options{Lister: lister.Options{Name: "bookmarks", Metrics: recA}})
		pl := runReflector(cfgP, ns, reflector.Options{Lister: lister.Options{Name: "bookmarks-plain", Metrics: recP, DisableStreamingList: true}})
		b := runReflector(cfgB, ns, reflector.Options{Lister: lister.Options{Name: "no-bookmarks", Metrics: recB, DisableStreamingList: true}})
		for _, r := range []*running{a, pl, b} {
			waitSynced(r.r, 60*time.Second)
		}
		for _, p := range []*faults.Proxy{pA, pP, pB} {
			Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
		}
		Expect(isStreamingList(requests(pA, "watch", ns)[0])).To(BeTrue())
		startB := b.r.LastSyncResourceVersion()
		bookmarksAtSync, plainBookmarksAtSync := recA.Total(reasons.FamilyBookmark), recP.Total(reasons.FamilyBookmark)

		// Writes elsewhere move the resource's RV; ns stays quiet.
		other := populate(ctx, cs, "busy", 5)
		newer := suite.CreateConfigMap(ctx, cs, other, "last", nil).ResourceVersion
		lastWrite := time.Now()
		Eventually(func() bool { return rvAtLeast(a.r.LastSyncResourceVersion(), newer) }).
			WithTimeout(100*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(),
			"A's RV stayed at %s, want >= %s", a.r.LastSyncResourceVersion(), newer)
		suite.Timing("bookmark advanced a quiet watch's RV after the last write (watch of a streaming list)", time.Since(lastWrite))
		Expect(recA.Total(reasons.FamilyBookmark)).To(BeNumerically(">", bookmarksAtSync), "the advance came from a bookmark")
		Eventually(func() bool { return rvAtLeast(pl.r.LastSyncResourceVersion(), newer) }).
			WithTimeout(100*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(),
			"P's RV stayed at %s, want >= %s", pl.r.LastSyncResourceVersion(), newer)
		suite.Timing("bookmark advanced a quiet watch's RV after the last write (plain watch)", time.Since(lastWrite))
		Expect(recP.Total(reasons.FamilyBookmark)).To(BeNumerically(">", plainBookmarksAtSync), "the advance came from a bookmark")
		Expect(b.r.LastSyncResourceVersion()).To(Equal(startB), "without bookmarks a quiet watch's RV does not move")

		// A restarted watch resumes from the bookmark's RV, without a relist.
		pA.ResetRequests()
		Expect(pA.EndWatches()).To(Equal(1))
		Eventually(func() int { return len(plainWatches(pA, ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
		resumedAt := query(plainWatches(pA, ns)[0]).Get("resourceVersion")
		Expect(rvAtLeast(resumedAt, newer)).To(BeTrue(), "A's watch restarted at %s, want >= %s", resumedAt, newer)
		Expect(relists(pA, ns)).To(BeEmpty())
		pP.ResetRequests()
		Expect(pP.EndWatches()).To(Equal(1))
		Eventually(func() int { return len(plainWatches(pP, ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
		resumedAt = query(plainWatches(pP, ns)[0]).Get("resourceVersion")
		Expect(rvAtLeast(resumedAt, newer)).To(BeTrue(), "P's watch restarted at %s, want >= %s", resumedAt, newer)
		Expect(relists(pP, ns)).To(BeEmpty())

		// Push startB out of the watch cache: its events must be >75 s old
		// (eventFreshDuration) when >100 newer events arrive. This waits
		// for the server's clock window; nothing to poll for.
		time.Sleep(time.Until(lastWrite.Add(77 * time.Second)))
		populate(ctx, cs, "flush", 120)
		_, err = c.Etcd().Compact(ctx) // as the apiserver's compactor would have by then
		Expect(err).NotTo(HaveOccurred())

		expectRecovery(pB, b, ns, startB, pB.EndWatches, "recovery after a watch-cache 410 (end -> 410 -> relist -> watching)")
		reqs := requests(pB, "", ns)
		logRequests("B's requests after its watch ended", reqs)
		Expect(query(reqs[0]).Get("resourceVersion")).To(Equal(startB))
		Expect(recB.Labels(reasons.FamilyRelist)).To(Equal([]string{"watch-gone"}), "the resumed watch got a 410 from the watch cache")
		fills := relists(pB, ns)
		Expect(fills).To(HaveLen(1))
		Expect(fills[0].Verb).To(Equal("list"))
		Expect(fills[0].Status).To(Equal(200))
		q := query(fills[0])
		Expect(q.Get("resourceVersion")).To(Equal(startB), "NotOlderThan(last), not RV=\"\"")
		Expect(q.Get("resourceVersionMatch")).To(Equal("NotOlderThan"))
		Expect(q.Get("limit")).To(BeEmpty())

		suite.CreateConfigMap(ctx, cs, ns, "after", nil)
		fmt.Fprintf(GinkgoWriter, "bookmarks received in %v: streaming-list watch %d, plain watch %d, stripped %d\n",
			time.Since(lastWrite).Round(time.Second), recA.Total(reasons.FamilyBookmark), recP.Total(reasons.FamilyBookmark), recB.Total(reasons.FamilyBookmark))
		AddReportEntry("bookmarks received (streaming-list watch / plain watch)", fmt.Sprintf("%d / %d in %v", recA.Total(reasons.FamilyBookmark), recP.Total(reasons.FamilyBookmark), time.Since(lastWrite).Round(time.Second)))
		Expect(recB.Total(reasons.FamilyBookmark)).To(BeZero())
		for _, r := range []*running{a, pl, b} {
			expectStoreEqualsTruth(ctx, cs, r, ns)
			Expect(r.store.wentBack()).To(BeEmpty())
		}
	})
})

var _ = Describe("watch faults", Label("conformance", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	// Every spec drops, ends or stalls watches through a fault proxy.
	BeforeAll(func(ctx SpecContext) { c = suite.Start(ctx, harness.Options{Version: build.Current}).RequireFaults() })

	for _, fault := range []string{"dropped", "ended"} {
		It("resumes a "+fault+" watch from the last RV without a relist; the store equals the truth", func(ctx SpecContext) {
			cs := suite.Clientset(c.RESTConfig())
			ns := populate(ctx, cs, fault, 3)
			p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
			Expect(err).NotTo(HaveOccurred())
			rec := reasons.New()
			run := runReflector(pcfg, ns, reflector.Options{Lister: lister.Options{Name: fault, Metrics: rec}})
			waitSynced(run.r, 60*time.Second)
			Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
			suite.CreateConfigMap(ctx, cs, ns, "before", nil)
			Eventually(func() int { return len(run.store.ListKeys()) }).WithTimeout(30 * time.Second).Should(Equal(4))
			last := run.r.LastSyncResourceVersion()

			p.ResetRequests()
			if fault == "dropped" {
				Expect(p.DropWatches()).To(Equal(1))
			} else {
				Expect(p.EndWatches()).To(Equal(1))
			}
			suite.CreateConfigMap(ctx, cs, ns, "during", nil) // while the watch is being re-established
			Eventually(func() int { return len(plainWatches(p, ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
			Expect(query(plainWatches(p, ns)[0]).Get("resourceVersion")).To(Equal(last))
			suite.CreateConfigMap(ctx, cs, ns, "after", nil)
			expectStoreEqualsTruth(ctx, cs, run, ns)
			logRequests("requests after the fault", requests(p, "", ns))
			fmt.Fprintf(GinkgoWriter, "watch restarts: %v\n", rec.Labels(reasons.FamilyWatchRestart))
			Expect(relists(p, ns)).To(BeEmpty(), "a %s watch must not cause a relist", fault)
			Expect(rec.Labels(reasons.FamilyRelist)).To(BeEmpty())
			Expect(rec.Labels(reasons.FamilyWatchRestart)).NotTo(BeEmpty())
			Expect(run.store.wentBack()).To(BeEmpty())
		})
	}

	It("detects a stalled watch and restarts it from the last RV without a relist", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns := populate(ctx, cs, "stall", 3)
		p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		rec := reasons.New()
		run := runReflector(pcfg, ns, reflector.Options{Lister: lister.Options{Name: "stall", Metrics: rec, StallTimeout: 3 * time.Second}})
		waitSynced(run.r, 60*time.Second)
		Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
		last := run.r.LastSyncResourceVersion()

		p.ResetRequests()
		// The proxy would hold the stream (and any new one) for 2 minutes.
		p.StallWatches(2 * time.Minute)
		DeferCleanup(p.StallWatches, time.Duration(0))
		stalledAt := time.Now()
		suite.CreateConfigMap(ctx, cs, ns, "during-stall", nil)
		Eventually(func() []string { return rec.Labels(reasons.FamilyWatchRestart) }).WithTimeout(30 * time.Second).Should(ContainElement("stalled"))
		suite.Timing("stalled watch detected (StallTimeout 3s)", time.Since(stalledAt))
		Eventually(func() int { return len(plainWatches(p, ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
		Expect(query(plainWatches(p, ns)[0]).Get("resourceVersion")).To(Equal(last))
		Expect(run.store.state()).NotTo(HaveKey(ns+"/during-stall"), "nothing was forwarded during the stall")

		p.StallWatches(0) // the restarted watch now gets its response
		suite.CreateConfigMap(ctx, cs, ns, "after-stall", nil)
		expectStoreEqualsTruth(ctx, cs, run, ns)
		logRequests("requests after the stall", requests(p, "", ns))
		Expect(relists(p, ns)).To(BeEmpty(), "a stalled watch must not cause a relist")
		Expect(rec.Labels(reasons.FamilyRelist)).To(BeEmpty())
	})

	It("leaves no goroutine behind when stopped, also after a dropped watch", func(ctx SpecContext) {
		Eventually(goroutines).WithTimeout(10*time.Second).Should(BeEmpty(), "left over by earlier specs")
		cs := suite.Clientset(c.RESTConfig())
		ns := populate(ctx, cs, "leak", 2)
		p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		run := runReflector(pcfg, ns, reflector.Options{Lister: lister.Options{Name: "leak"}, ConsistencyCheckInterval: time.Second, ResyncPeriod: time.Second})
		waitSynced(run.r, 60*time.Second)
		Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
		Expect(p.DropWatches()).To(Equal(1))
		Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
		Expect(goroutines()).NotTo(BeEmpty())
		run.stop()
		Eventually(goroutines).WithTimeout(10 * time.Second).Should(BeEmpty())
		Expect(run.r.State().Phase).To(Equal(reflector.PhaseStopped))
		Eventually(p.Watches).WithTimeout(10*time.Second).Should(BeZero(), "the watch was closed")
	})
})

// watchOn reports whether a watch on ns is being served by backend i.
func watchOn(p *faults.Proxy, ns string, i int) bool {
	for _, r := range requests(p, "watch", ns) {
		if r.Backend == i && r.Status == 200 && !r.Done {
			return true
		}
	}
	return false
}

var _ = Describe("HA", Label("ha", "needs-faults"), Ordered, func() {
	It("never goes back in time when requests land on an apiserver whose watch cache really lags", func(ctx SpecContext) {
		c := suite.StartHarness(ctx, harness.Options{Version: build.Current, HA: true},
			"needs the harness's HA pair of "+build.Current+" (pausing and restarting one apiserver behind its balancer)")
		bal := c.Balancer()
		Expect(bal).NotTo(BeNil())
		a1 := c.APIServers()[1]
		cs0 := suite.Clientset(c.APIServers()[0].RESTConfig())
		cs1 := suite.Clientset(a1.RESTConfig())
		ns := populate(ctx, cs0, "ha", 10)
		bal.Pin(0)
		rec := reasons.New()
		run := runReflector(c.RESTConfig(), ns, reflector.Options{Lister: lister.Options{Name: "ha", Metrics: rec}})
		waitSynced(run.r, 60*time.Second)
		DeferCleanup(a1.Resume)

		lagged := 0
		const rounds = 4
		for round := 0; round < rounds; round++ {
			viaRelist := round%2 == 1
			// The reflector watches through apiserver-0.
			bal.Pin(0)
			bal.ResetRequests()
			bal.DropWatches()
			Eventually(func() bool { return watchOn(bal, ns, 0) }).WithTimeout(30 * time.Second).Should(BeTrue())

			// Freeze apiserver-1: its watch cache stops following etcd.
			Expect(a1.Pause()).To(Succeed())
			var lastWrite string
			for i := 0; i < 20; i++ {
				lastWrite = suite.CreateConfigMap(ctx, cs0, ns, fmt.Sprintf("r%d-%d", round, i), nil).ResourceVersion
			}
			Eventually(func() bool { return rvAtLeast(run.r.LastSyncResourceVersion(), lastWrite) }).WithTimeout(30 * time.Second).Should(BeTrue())

			// What a client-go informer starting now would get from
			// apiserver-1 (resourceVersion "0", served from its cache).
			probe := make(chan string, 1)
			go func() {
				defer GinkgoRecover()
				l, err := cs1.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
				if err != nil {
					probe <- "error: " + err.Error()
					return
				}
				probe <- l.ResourceVersion
			}()

			// The reflector's next requests go to the frozen apiserver-1:
			// a resumed watch, or (after an injected 410) a relist.
			bal.Pin(1)
			bal.ResetRequests()
			if viaRelist {
				bal.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true, Count: 1})
			}
			bal.DropWatches()
			if viaRelist {
				Eventually(func() int { return len(relists(bal, ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
			} else {
				Eventually(func() int { return len(plainWatches(bal, ns)) }).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
			}
			Expect(a1.Resume()).To(Succeed())
			var probeRV string
			Eventually(probe).WithTimeout(30 * time.Second).Should(Receive(&probeRV))
			if rvLess(probeRV, lastWrite) {
				lagged++
			}
			fmt.Fprintf(GinkgoWriter, "round %d (via relist=%v): apiserver-1 served RV=0 at %s right after resume; the reflector was at >= %s\n", round, viaRelist, probeRV, lastWrite)

			Eventually(func() bool {
				s := run.r.State()
				return s.Phase == reflector.PhaseWatching && rvAtLeast(s.ResourceVersion, lastWrite) && watchOn(bal, ns, 1)
			}).WithTimeout(60 * time.Second).Should(BeTrue())
			logRequests(fmt.Sprintf("round %d requests", round), requests(bal, "", ns))
			Expect(run.store.wentBack()).To(BeEmpty(), "the store went back in time")
		}
		AddReportEntry("HA rounds where the lagging apiserver served an RV=0 list older than the reflector's store", fmt.Sprintf("%d of %d", lagged, rounds))
		fmt.Fprintf(GinkgoWriter, "lag reproduced in %d of %d rounds\n", lagged, rounds)
		// The spec proves something only if apiserver-1 really lagged when
		// the reflector's requests reached it.
		Expect(lagged).To(BeNumerically(">=", 1), "apiserver-1's watch cache never lagged: the spec proved nothing")

		// Then alternate, with dropped watches and a restart of apiserver-1
		// (its watch cache is rebuilt).
		bal.Alternate()
		for i := 0; i < 10; i++ {
			suite.CreateConfigMap(ctx, cs0, ns, fmt.Sprintf("alt-%d", i), nil)
			if i == 5 {
				bal.DropWatches()
			}
		}
		Expect(a1.Restart(ctx)).To(Succeed())
		bal.DropWatches()
		final := suite.CreateConfigMap(ctx, cs0, ns, "final", nil).ResourceVersion
		Eventually(func() bool { return rvAtLeast(run.r.LastSyncResourceVersion(), final) }).WithTimeout(60 * time.Second).Should(BeTrue())
		expectStoreEqualsTruth(ctx, cs0, run, ns)
		Expect(run.store.wentBack()).To(BeEmpty(), "the store went back in time")
		fmt.Fprintf(GinkgoWriter, "relists: %v, watch restarts: %v\n", rec.Labels(reasons.FamilyRelist), rec.Labels(reasons.FamilyWatchRestart))
	})
})

var _ = Describe("paginated lists on a real server", Label("conformance", "needs-faults"), Ordered, func() {
	It("pages grow from 500 with small objects and stay at 500 with large ones (lister.Options.MaxPageBytes)", func(ctx SpecContext) {
		c := suite.Start(ctx, harness.Options{Version: build.Current}).RequireFaults()
		cs := suite.Clientset(c.RESTConfig())
		small := populate(ctx, cs, "pages-small", 1200)
		large := suite.NewNamespace(ctx, cs, "pages-large")
		blob := strings.Repeat("x", 16<<10)
		suite.CreateConfigMaps(ctx, cs, large, 1200, func(_ int, cm *corev1.ConfigMap) { cm.Data = map[string]string{"d": blob} })
		p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		o := reflector.Options{Lister: lister.Options{DisableStreamingList: true}, PaginateLists: true}
		knobs.ListerOf(&o.Lister).MaxPageBytes = 4 << 20 // 256 objects of 16 KiB, thousands of small ones
		for _, ns := range []string{small, large} {
			r := runReflector(pcfg, ns, o)
			waitSynced(r.r, 60*time.Second)
			Expect(r.store.ListKeys()).To(HaveLen(1200))
			r.stop()
		}
		limits := func(ns string) []string {
			var out []string
			for _, r := range relists(p, ns) {
				out = append(out, query(r).Get("limit"))
			}
			return out
		}
		Expect(limits(small)).To(Equal([]string{"500", "1000"}), "small objects: the second page doubles")
		Expect(limits(large)).To(Equal([]string{"500", "500", "500"}), "16 KiB objects: 1000 of them would be 16 MiB, over MaxPageBytes")
	})
})
