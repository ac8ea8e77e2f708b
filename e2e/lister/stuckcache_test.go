package lister_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// A v1.18 apiserver has no watch progress notifications (KEP-1904,
// EfficientWatchResumption: beta and on by default from v1.21): its ConfigMap
// watch cache moves only when a ConfigMap is written. Once a write of
// another kind (here a Secret) moves the resourceVersion past the last
// ConfigMap write, a NotOlderThan list at the newest resourceVersion is
// answered "504 Too large resource version" until a ConfigMap is written.
// The lister learns from the version (compat watchCacheProgress=no) that
// waiting is futile: once a consistent read shows the version exists, it
// lists the most recent state at once. A lister that knows nothing of the
// server sees it in the answers: two 504s reporting the same current
// resourceVersion.
var _ = Describe("lister on a legacy "+build.Legacy+" apiserver whose ConfigMap watch cache cannot catch up", Label("legacy", "needs-faults"), Ordered, func() {
	var (
		e   *env
		srv compat.Server
	)
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Legacy}, "counts requests at the harness's fault proxy on "+build.Legacy)
		var err error
		srv, err = compat.NewDetector(compat.DetectorOptions{}).ForConfig(e.pcfg)
		Expect(err).NotTo(HaveOccurred())
		caps := srv.Capabilities(ctx)
		Expect(caps.Get(capability.WatchCacheProgress)).To(Equal(capability.No))
		Expect(caps.Basis[capability.WatchCacheProgress]).To(Equal(capability.BasisVersion))
	})

	// quiet writes n ConfigMaps labelled set=<set>, waits for the watch cache
	// to hold the last of them, then writes a Secret: it returns the Secret's
	// resourceVersion, which the ConfigMap watch cache cannot reach.
	quiet := func(ctx context.Context, set string, n int) string {
		e.create(ctx, set, n)
		l, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=" + set})
		Expect(err).NotTo(HaveOccurred())
		last := ""
		for _, cm := range l.Items {
			if last == "" || vocab.CompareRV(cm.ResourceVersion, last) == vocab.Newer {
				last = cm.ResourceVersion
			}
		}
		e.waitCache(ctx, last)
		s, err := e.cs.CoreV1().Secrets(e.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "after-" + set}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		cached, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(vocab.CompareRV(cached.ResourceVersion, s.ResourceVersion)).To(Equal(vocab.Older),
			"the ConfigMap watch cache (%s) is behind the Secret's write (%s)", cached.ResourceVersion, s.ResourceVersion)
		return s.ResourceVersion
	}

	It("a NotOlderThan list at the newest resourceVersion: the 504, one consistent read, then the most recent list, without Retry-After waits", func(ctx SpecContext) {
		rv := quiet(ctx, "stk", 3)
		e.proxy.ResetRequests()
		begin := time.Now()
		obj, rec, err := lister.New(e.client(true), lister.Options{Server: srv, LabelSelector: "set=stk"}).List(ctx, lister.NotOlderThan(rv))
		took := time.Since(begin)
		Expect(err).NotTo(HaveOccurred())
		summary := fmt.Sprintf("NotOlderThan(%s) on %s: %s, %d list request(s) on the wire, reasons %v", rv, build.Legacy, took.Round(100*time.Millisecond), len(e.requests("list")), fallbackReasons(rec))
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("NotOlderThan behind a stuck watch cache on "+build.Legacy, summary)

		Expect(fallbackReasons(rec)).To(HaveExactElements("too-large-rv-check-exists", "too-large-rv-cache-stuck-most-recent"))
		Expect(rec.Fallbacks[1].Detail).To(ContainSubstring("KEP-1904"))
		Expect(rec.Requests).To(HaveLen(3))
		first := rec.Requests[0]
		Expect(first.Class).To(Equal(vocab.TooLargeRV))
		var st apierrors.APIStatus
		Expect(errors.As(first.Err, &st)).To(BeTrue())
		Expect(st.Status().Code).To(Equal(int32(504)), "the real watch cache's answer: %v", first.Err)
		Expect(rec.Requests[1].Options.Limit).To(Equal(int64(1)), "the consistent read that shows %s exists", rv)
		Expect(rec.Requests[2].Options.ResourceVersion).To(BeEmpty(), "MostRecent")
		lists := e.requests("list")
		Expect(lists).To(HaveLen(3))
		Expect([]int{lists[0].Status, lists[1].Status, lists[2].Status}).To(Equal([]int{504, 200, 200}))
		for _, r := range lists {
			Expect(r.Fault).To(BeEmpty(), "every answer came from the real server")
		}
		rvAtLeast(rec.ServedResourceVersion, rv)
		Expect(countItems(obj)).To(Equal(3))
		// The watch cache's own 3 s, one read and one list; waiting Retry-After twice took about 11 s.
		Expect(took).To(BeNumerically("<", 6*time.Second))
	})

	It("without a version to go by, the answers show it: the same current resourceVersion twice, then the most recent list", func(ctx SpecContext) {
		rv := quiet(ctx, "stkunk", 2)
		e.proxy.ResetRequests()
		begin := time.Now()
		_, rec, err := lister.New(e.client(true), lister.Options{Server: capability.Static(capability.Capabilities{}), LabelSelector: "set=stkunk"}).List(ctx, lister.NotOlderThan(rv))
		took := time.Since(begin)
		Expect(err).NotTo(HaveOccurred())
		summary := fmt.Sprintf("NotOlderThan(%s) on %s, unknown server: %s, %d list request(s) on the wire, reasons %v", rv, build.Legacy, took.Round(100*time.Millisecond), len(e.requests("list")), fallbackReasons(rec))
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("NotOlderThan behind a stuck watch cache on "+build.Legacy+", unknown server", summary)

		Expect(fallbackReasons(rec)).To(HaveExactElements("too-large-rv-check-exists", "too-large-rv-wait-retry-after", "too-large-rv-cache-stuck-most-recent"))
		Expect(rec.Fallbacks[2].Detail).To(ContainSubstring("in two answers"))
		Expect(rec.Requests).To(HaveLen(4))
		Expect(rec.Requests[0].Err).To(MatchError(ContainSubstring("Too large resource version")))
		Expect(rec.Requests[2].Err).To(MatchError(ContainSubstring("Too large resource version")))
		Expect(e.requests("list")).To(HaveLen(4))
		rvAtLeast(rec.ServedResourceVersion, rv)
	})

	It("a reflector told the server syncs without meeting the stuck watch cache and holds what the server holds", func(ctx SpecContext) {
		quiet(ctx, "stksync", 4)
		e.proxy.ResetRequests()
		rec := reasons.New()
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := reflector.New(e.client(true), &corev1.ConfigMap{}, store, reflector.Options{
			Lister: lister.Options{Name: "stuck", Server: srv, Metrics: rec, LabelSelector: "set=stksync"},
		})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		begin := time.Now()
		go func() {
			defer GinkgoRecover()
			defer close(done)
			r.Run(rctx)
		}()
		DeferCleanup(func() { cancel(); <-done })
		Eventually(r.HasSynced).WithTimeout(60 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		took := time.Since(begin)
		lists := e.requests("list")
		summary := fmt.Sprintf("reflector sync on %s: %s, %d list request(s), fallbacks %v", build.Legacy, took.Round(100*time.Millisecond), len(lists), rec.Labels(reasons.FamilyFallback))
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("reflector sync behind a stuck watch cache on "+build.Legacy, summary)

		// Told the server reads consistent lists from etcd (before
		// v1.31), the first list is the newest, in pages: never at a
		// version the stuck cache must answer 504.
		Expect(lists).To(HaveLen(1), "one list, the newest")
		Expect(lists[0].Status).To(Equal(200))
		Expect(lists[0].RawQuery).NotTo(ContainSubstring("resourceVersion="))
		Expect(rec.Labels(reasons.FamilyFallback)).To(BeEmpty())
		Expect(took).To(BeNumerically("<", 8*time.Second))

		truth, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=stksync"})
		Expect(err).NotTo(HaveOccurred())
		want := map[string]string{}
		for _, cm := range truth.Items {
			want[cm.Name] = cm.ResourceVersion
		}
		got := map[string]string{}
		for _, o := range store.List() {
			cm := o.(*corev1.ConfigMap)
			got[cm.Name] = cm.ResourceVersion
		}
		Expect(got).To(Equal(want))
		Expect(got).To(HaveLen(4))
		last, err := strconv.ParseUint(r.LastSyncResourceVersion(), 10, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(last).To(BeNumerically(">", 0))
	})
})
