package smoke

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/internal/capability"
)

// populate creates a namespace (deleted at cleanup) with n ConfigMaps and returns
// the RV after the first one.
func populate(ctx context.Context, cs kubernetes.Interface, n int) (ns, firstRV string) {
	ns = suite.NewNamespace(ctx, cs, "smoke")
	return ns, suite.CreateConfigMaps(ctx, cs, ns, n, suite.IndexData)
}

// exactNoLimit lists at Exact(rv) without a limit and returns the served RV.
func exactNoLimit(ctx context.Context, cs kubernetes.Interface, ns, rv string) (string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		return "", err
	}
	return l.ResourceVersion, nil
}

// stockInformerSynced runs a stock client-go SharedInformerFactory ConfigMap informer (client-go's
// defaults: WatchListClient on in v0.37) and reports whether it synced within d.
func stockInformerSynced(cfg *rest.Config, ns string, d time.Duration) bool {
	cs := suite.Clientset(cfg)
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, d)
	defer syncCancel()
	return cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
}

var _ = Describe("current kube-apiserver", Label("conformance", "smoke"), Ordered, func() {
	var t *extcluster.Target
	BeforeAll(func(ctx SpecContext) { t = suite.Start(ctx, harness.Options{Version: build.Current}) })

	It("reports its real version on /version", func() {
		v, err := suite.Clientset(t.RESTConfig()).Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		if !t.External() {
			Expect(v.GitVersion).To(Equal(build.Current))
			return
		}
		// An external cluster runs whatever version it runs: what the SDK needs is a
		// gitVersion its capability detection can parse.
		parsed, err := capability.ParseVersion(v.GitVersion)
		Expect(err).NotTo(HaveOccurred())
		Expect(parsed.Compare(capability.Version{Major: 1, Minor: 19})).To(BeNumerically(">=", 0),
			"the current-server specs assume resourceVersionMatch (>= v1.19); got %s", v.GitVersion)
		AddReportEntry("external apiserver version", v.GitVersion)
	})

	It("honours resourceVersionMatch=Exact without a limit", func(ctx SpecContext) {
		cs := suite.Clientset(t.RESTConfig())
		ns, rv := populate(ctx, cs, 3)
		served, err := exactNoLimit(ctx, cs, ns, rv)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).To(Equal(rv))
	})

	It("lets a stock client-go informer (WatchListClient on) sync", func(ctx SpecContext) {
		ns, _ := populate(ctx, suite.Clientset(t.RESTConfig()), 5)
		Expect(stockInformerSynced(t.RESTConfig(), ns, 60*time.Second)).To(BeTrue())
	})

	Context("behind the fault proxy", Label("needs-faults"), func() {
		var (
			c   *harness.Cluster
			p   *faults.Proxy
			cfg *rest.Config
		)
		BeforeAll(func(ctx SpecContext) {
			c = t.RequireFaults()
			var err error
			p, cfg, err = c.NewProxy(ctx, c.APIServers()[0])
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
		})

		It("injects a 410 that client-go classifies like a real one", func(ctx SpecContext) {
			ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 1)
			id := p.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 410, Count: 1})
			defer p.Remove(id)
			_, err := suite.Clientset(cfg).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: "1", Limit: 1})
			Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "error: %v", err)
			Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReasonExpired))
			Expect(err.(apierrors.APIStatus).Status().Code).To(Equal(int32(410)))
			// The next request passes through untouched.
			_, err = suite.Clientset(cfg).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
		})

		It("injects a 410 as a watch ERROR event, like the watch cache does", func(ctx SpecContext) {
			ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 1)
			id := p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Status: 410, AsWatchEvent: true, Count: 1})
			defer p.Remove(id)
			w, err := suite.Clientset(cfg).CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
			Expect(err).NotTo(HaveOccurred())
			defer w.Stop()
			var ev watch.Event
			Eventually(w.ResultChan()).WithTimeout(30 * time.Second).Should(Receive(&ev))
			Expect(ev.Type).To(Equal(watch.Error))
			err = apierrors.FromObject(ev.Object)
			Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "error: %v", err)
		})

		It("strips resourceVersionMatch so the current server behaves like a legacy one", func(ctx SpecContext) {
			ns, rv := populate(ctx, suite.Clientset(c.RESTConfig()), 3)
			p.StripParams("resourceVersionMatch")
			defer p.StripParams()
			served, err := exactNoLimit(ctx, suite.Clientset(cfg), ns, rv)
			Expect(err).NotTo(HaveOccurred())
			Expect(served).NotTo(Equal(rv), "the server should have served NotOlderThan, i.e. newer data")
			var seen *faults.Request
			for _, r := range p.Requests() {
				if r.Verb == "list" && r.Resource == "configmaps" {
					r := r
					seen = &r
				}
			}
			Expect(seen).NotTo(BeNil())
			Expect(seen.RawQuery).To(ContainSubstring("resourceVersionMatch=Exact"))
			Expect(seen.ForwardedQuery).NotTo(ContainSubstring("resourceVersionMatch"))
		})

		It("cannot emulate a server that ignores sendInitialEvents by stripping that parameter alone", func(ctx SpecContext) {
			// A real finding on v1.36 (still so on v1.37.2): with WatchList on, the apiserver defaults a legacy watch (RV unset or
			// "0") to sendInitialEvents=true + NotOlderThan (apimachinery internalversion.SetListOptionsDefaults),
			// so it still ends the initial events with the k8s.io/initial-events-end bookmark.
			ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 2)
			p.StripParams("sendInitialEvents", "resourceVersionMatch")
			defer p.StripParams()
			Expect(streamingWatch(ctx, cfg, ns, 2)).To(BeTrue())
		})

		It("emulates a server that ignores sendInitialEvents when allowWatchBookmarks is stripped too", func(ctx SpecContext) {
			ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 2)
			p.StripParams("sendInitialEvents", "resourceVersionMatch", "allowWatchBookmarks")
			defer p.StripParams()
			Expect(streamingWatch(ctx, cfg, ns, 2)).To(BeFalse(), "like v1.18.19: ADDED events, then no initial-events-end bookmark")
			var fwd string
			for _, r := range p.Requests() {
				if r.Verb == "watch" {
					fwd = r.ForwardedQuery
				}
			}
			Expect(fwd).NotTo(ContainSubstring("sendInitialEvents"))
			Expect(fwd).NotTo(ContainSubstring("allowWatchBookmarks"))
		})
	})
})

var _ = Describe("current kube-apiserver with the watch cache off", Label("conformance", "smoke", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: build.Current, DisableWatchCache: true},
			"needs the harness's "+build.Current+" server with the watch cache off (--watch-cache=false) and etcd compaction")
	})

	It("answers an Exact list at a compacted RV with a real 410", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 3)
		_, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = exactNoLimit(ctx, cs, ns, rv)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "error: %v", err)
		// A legacy-Exact paginated list too.
		_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 1})
		Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "error: %v", err)
	})
})

var _ = Describe("legacy kube-apiserver v1.18.19", Label("legacy", "smoke", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: build.Legacy}, "needs the harness's "+build.Legacy+" server")
	})

	It("reports its real version on /version", func() {
		v, err := suite.Clientset(c.RESTConfig()).Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(Equal(build.Legacy))
	})

	It("ignores resourceVersionMatch: Exact without a limit comes back at a newer RV", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 3)
		served, err := exactNoLimit(ctx, cs, ns, rv)
		Expect(err).NotTo(HaveOccurred())
		Expect(served).NotTo(Equal(rv))
		// ...while the legacy paginated form is served at exactly that RV.
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 500})
		Expect(err).NotTo(HaveOccurred())
		Expect(l.ResourceVersion).To(Equal(rv))
	})

	It("silently ignores sendInitialEvents: ADDED events, never the initial-events-end bookmark", func(ctx SpecContext) {
		ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 2)
		Expect(streamingWatch(ctx, c.RESTConfig(), ns, 2)).To(BeFalse())
	})

	It("never lets a stock client-go informer (WatchListClient on) sync: the anchor fact", func(ctx SpecContext) {
		ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 5)
		// 45 s is many times what the same informer needs against the current server (under a second);
		// client-go keeps waiting for an initial-events-end bookmark that v1.18.19 never sends.
		Expect(stockInformerSynced(c.RESTConfig(), ns, 45*time.Second)).To(BeFalse())
	})
})

func metaAnnotations(o interface{}) (map[string]string, error) {
	type annotated interface{ GetAnnotations() map[string]string }
	a, ok := o.(annotated)
	if !ok {
		return nil, fmt.Errorf("%T has no annotations", o)
	}
	return a.GetAnnotations(), nil
}

// streamingWatch opens a client-go style streaming list (watch + sendInitialEvents) with cfg
// and reports how many ADDED events arrived and whether the initial-events-end bookmark came.
func streamingWatch(ctx context.Context, cfg *rest.Config, ns string, want int) (endBookmark bool) {
	w, err := suite.Clientset(cfg).CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks: true,
	})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	added := 0
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			Expect(ok).To(BeTrue(), "watch ended early")
			switch ev.Type {
			case watch.Added:
				added++
			case watch.Bookmark:
				m, err := metaAnnotations(ev.Object)
				Expect(err).NotTo(HaveOccurred())
				if m["k8s.io/initial-events-end"] == "true" {
					Expect(added).To(Equal(want))
					return true
				}
			}
		case <-deadline:
			// No end bookmark within 10 s after the initial events: the server ignored the request.
			Expect(added).To(Equal(want))
			return false
		}
	}
}
