package lister_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/vocab"

	"github.com/steadywatch/steadywatch/internal/policy"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/lister"
)

// TestLister runs the lister's specs against real kube-apiservers (v1.37.2 = build.Current
// and v1.18.19) on a real etcd, or, with E2E_KUBECONFIG set, the specs that
// need no fault control against that external cluster (extcluster).
//
// Labels: conformance (server/SDK semantics), legacy (v1.18.19), needs-faults
// (the fault proxy, etcd compaction, the watch cache off or v1.18.19: only
// the harness provides them, so these skip on an external cluster).
func TestLister(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lister")
}

type env struct {
	t     *extcluster.Target
	c     *harness.Cluster // the harness cluster; nil unless started with startHarness
	cfg   *rest.Config
	cs    *kubernetes.Clientset
	ns    string                // a namespace of this container's own, deleted at cleanup
	proxy *faults.Proxy         // nil unless started with startHarness
	pcfg  *rest.Config          // admin config pointed at the proxy
	pcs   *kubernetes.Clientset // through the proxy
}

// start returns the cluster for an Ordered container: the harness's own
// servers started with o, or the external cluster named by E2E_KUBECONFIG.
// It has no fault controls (e.c and e.proxy are nil).
func start(ctx context.Context, o harness.Options) *env {
	t := suite.Start(ctx, o)
	e := &env{t: t, cfg: t.RESTConfig()}
	e.cs = kubernetes.NewForConfigOrDie(e.cfg)
	suite.WaitForDefaultNamespace(ctx, e.cs)
	// Deleted at cleanup, before t.Stop: an external cluster is left as found.
	e.ns = suite.NewNamespace(ctx, e.cs, "lister")
	return e
}

// startHarness is start for a container that needs what only the harness
// provides (reason says what): on an external cluster it Skips before
// anything is started; otherwise it also opens a fault proxy in front of the
// first apiserver.
func startHarness(ctx context.Context, o harness.Options, reason string) *env {
	suite.SkipIfExternal(reason)
	e := start(ctx, o)
	e.c = e.t.RequireFaults()
	p, pcfg, err := e.c.NewProxy(ctx, e.c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	e.proxy, e.pcfg, e.pcs = p, pcfg, kubernetes.NewForConfigOrDie(pcfg)
	return e
}

// detect returns what a compat.Detector reads from the server behind cfg.
func detect(cfg *rest.Config) compat.Server {
	GinkgoHelper()
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return srv
}

func (e *env) client(viaProxy bool) lister.Client {
	cs := e.cs
	if viaProxy {
		cs = e.pcs
	}
	return suite.ConfigMaps(cs, e.ns)
}

// recordingClient is a lister.Client that records the options of every list
// and watch the lister sends (what reaches client-go's REST client), so a
// spec can count requests without the harness's proxy.
type recordingClient struct {
	inner lister.Client

	mu      sync.Mutex
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
}

func (r *recordingClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	r.mu.Lock()
	r.lists = append(r.lists, o)
	r.mu.Unlock()
	return r.inner.List(ctx, o)
}

func (r *recordingClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	r.watches = append(r.watches, o)
	r.mu.Unlock()
	return r.inner.Watch(ctx, o)
}

// sent returns the recorded lists and watches.
func (r *recordingClient) sent() (lists, watches []metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metav1.ListOptions(nil), r.lists...), append([]metav1.ListOptions(nil), r.watches...)
}

// userClient lists and watches configmaps through the proxy with a client
// the SDK did not build (the typed client's functions, lister.FromFuncs):
// client-go's REST client retries inside its requests on its own
// (fallback.NoHiddenRetries lists how), which the lister counts
// (SentRequest.WireRequests). The SDK's adapters (e.client) send each
// request once.
func (e *env) userClient() lister.Client {
	cms := e.pcs.CoreV1().ConfigMaps(e.ns)
	return lister.FromFuncs(cms.List, cms.Watch)
}

// noRetryClient lists configmaps through the proxy with client-go's own
// Retry-After handling off (rest.Request.MaxRetries(0)). client-go's REST
// client retries every 429 and 5xx that carries a Retry-After header, up to
// 10 times (rest/with_retry.go checkWait; the 504 "Too large resource
// version" included), so with a default client the lister only sees such an
// answer once client-go has given up.
func (e *env) noRetryClient() lister.Client {
	rc := e.pcs.CoreV1().RESTClient()
	list := func(ctx context.Context, o metav1.ListOptions) (*corev1.ConfigMapList, error) {
		out := &corev1.ConfigMapList{}
		err := rc.Get().Namespace(e.ns).Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).MaxRetries(0).Do(ctx).Into(out)
		return out, err
	}
	return lister.FromFuncs(list, e.pcs.CoreV1().ConfigMaps(e.ns).Watch)
}

// create makes n configmaps with the given prefix and returns the list RV after them.
func (e *env) create(ctx context.Context, prefix string, n int) string {
	for i := 0; i < n; i++ {
		_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Labels: map[string]string{"set": prefix}},
			Data:       map[string]string{"v": "1"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	l, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=" + prefix})
	Expect(err).NotTo(HaveOccurred())
	return l.ResourceVersion
}

// bump writes one object (moving the RV on) and returns the new RV.
func (e *env) bump(ctx context.Context) string {
	name := fmt.Sprintf("bump-%d", time.Now().UnixNano())
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return cm.ResourceVersion
}

// waitCache polls until the apiserver's watch cache has reached rv (a
// resourceVersion="0" list is served from the cache, at its resourceVersion).
// Specs that need the server to answer "newer than N" wait for it: a cache
// still at exactly N would serve N by chance and prove nothing.
func (e *env) waitCache(ctx context.Context, rv string) {
	Eventually(func(g Gomega) {
		l, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(vocab.CompareRV(l.ResourceVersion, rv)).To(BeElementOf(vocab.Same, vocab.Newer))
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// bumpTo writes objects until etcd's revision (the apiservers' newest RV) is
// at least rv; bounded to 100 writes.
func (e *env) bumpTo(ctx context.Context, rv string) {
	want, err := strconv.ParseInt(rv, 10, 64)
	Expect(err).NotTo(HaveOccurred())
	for i := 0; i < 100; i++ {
		cur, err := e.c.Etcd().Revision(ctx)
		Expect(err).NotTo(HaveOccurred())
		if cur >= want {
			return
		}
		e.bump(ctx)
	}
	Fail("etcd revision did not reach " + rv + " within 100 writes")
}

// listAtFutureRV creates one object labelled set=prefix and runs list at a
// resourceVersion 20 past the server's newest (far enough ahead that the
// apiserver's own background writes, leases and endpoints, cannot reach it
// during the watch cache's 3 s wait). Once the proxy has seen a list
// answered status (polled every poll), it writes up to that version; it
// returns list's Record, which must come without error, and the version.
func (e *env) listAtFutureRV(ctx context.Context, prefix string, status int, poll time.Duration, list func(future string) (*lister.Record, error)) (*lister.Record, string) {
	GinkgoHelper()
	n, err := strconv.ParseUint(e.create(ctx, prefix, 1), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	future := strconv.FormatUint(n+20, 10)
	e.proxy.ResetRequests()
	type result struct {
		rec *lister.Record
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer GinkgoRecover()
		rec, err := list(future)
		done <- result{rec, err}
	}()
	Eventually(e.listStatuses).WithTimeout(30 * time.Second).WithPolling(poll).Should(ContainElement(status))
	e.bumpTo(ctx, future)
	var res result
	Eventually(done).WithTimeout(60 * time.Second).Should(Receive(&res))
	Expect(res.err).NotTo(HaveOccurred())
	return res.rec, future
}

// compactPast writes one object and compacts etcd at its revision: every
// resourceVersion before that write is gone (410).
func (e *env) compactPast(ctx context.Context) {
	GinkgoHelper()
	e.bump(ctx)
	_, err := e.c.Etcd().Compact(ctx)
	Expect(err).NotTo(HaveOccurred())
}

// requests returns the proxy's log of configmaps requests with the given verb ("" = any).
func (e *env) requests(verb string) []faults.Request {
	var out []faults.Request
	for _, r := range e.proxy.Requests() {
		if r.Resource == "configmaps" && (verb == "" || r.Verb == verb) {
			out = append(out, r)
		}
	}
	return out
}

// listStatuses returns the HTTP status of every ConfigMap list the proxy has seen, in order.
func (e *env) listStatuses() []int {
	var st []int
	for _, r := range e.requests("list") {
		st = append(st, r.Status)
	}
	return st
}

func query(raw string) url.Values {
	v, err := url.ParseQuery(raw)
	Expect(err).NotTo(HaveOccurred())
	return v
}

func rvAtLeast(got, floor string) {
	Expect(vocab.CompareRV(got, floor)).To(BeElementOf(vocab.Same, vocab.Newer), "served %s, floor %s", got, floor)
}

// fallbackReasons returns the reason codes of r's fallbacks, as the strings users
// compare them with.
func fallbackReasons(r *lister.Record) []string {
	var out []string
	for _, ev := range r.Fallbacks {
		out = append(out, string(ev.Reason))
	}
	return out
}

func countItems(obj runtime.Object) int { return len(obj.(*corev1.ConfigMapList).Items) }

// legacyMatch declares a server that ignores resourceVersionMatch, so the lister sends the legacy form.
func legacyMatch() compat.Server {
	return capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.ResourceVersionMatch: capability.No}})
}

// syncInformer runs a client-go shared informer (client-go v0.37 defaults:
// WatchListClient on, so the reflector first tries a streaming list) over lw
// until it has synced, and returns it with the time from Run to HasSynced.
func syncInformer(ctx context.Context, lw cache.ListerWatcher, timeout time.Duration) (cache.SharedIndexInformer, time.Duration) {
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	ictx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	begin := time.Now()
	go inf.RunWithContext(ictx)
	Eventually(inf.HasSynced).WithTimeout(timeout).WithPolling(20 * time.Millisecond).Should(BeTrue())
	took := time.Since(begin)
	AddReportEntry("informer sync time", took.Round(time.Millisecond).String())
	return inf, took
}

// isStreaming reports whether a proxied request asked for a streaming list.
func isStreaming(r faults.Request) bool { return query(r.RawQuery).Get("sendInitialEvents") == "true" }

var _ = Describe("lister on a current apiserver with the watch cache off", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current, DisableWatchCache: true},
			"needs the harness's "+build.Current+" server with the watch cache off (--watch-cache=false) and etcd compaction")
	})

	It("rule 1: a real 410 for legacy-form NotOlderThan+limit is retried at a newer RV, never older", func(ctx SpecContext) {
		rv0 := e.create(ctx, "r1", 5)
		e.compactPast(ctx)
		// Declaring the server legacy makes the lister send rv=N&limit (legacy Exact): a real 410 once compacted.
		l := lister.New(e.client(false), lister.Options{Server: legacyMatch(), LabelSelector: "set=r1"})
		obj, rec, err := l.List(ctx, lister.NotOlderThan(rv0).WithLimit(2))
		Expect(err).NotTo(HaveOccurred())
		first := rec.Requests[0]
		Expect(first.Options.ResourceVersion).To(Equal(rv0))
		Expect(first.Options.ResourceVersionMatch).To(BeEmpty(), "legacy form")
		Expect(first.Options.Limit).To(Equal(int64(2)))
		Expect(first.Class).To(Equal(vocab.Gone))
		Expect(apierrors.IsResourceExpired(first.Err)).To(BeTrue(), "a real 410 from the server: %v", first.Err)
		Expect(fallbackReasons(rec)).To(HaveExactElements("rule1-gone-retry-newer-rv"))
		Expect(rec.Requests[1].Purpose).To(Equal("newer-rv-probe"))
		Expect(rec.Served.Semantic).To(Equal(fallback.NotOlderThan))
		Expect(vocab.CompareRV(rec.Served.ResourceVersion, rv0)).To(Equal(vocab.Newer))
		rvAtLeast(rec.ServedResourceVersion, rv0)
		Expect(countItems(obj)).To(Equal(5))
	})

	It("rule 1 with the match honoured: NotOlderThan+limit needs no fallback and proves support", func(ctx SpecContext) {
		rv0 := e.create(ctx, "r1b", 3)
		e.compactPast(ctx)
		srv := capability.Static(capability.Capabilities{})
		_, rec, err := lister.New(e.client(false), lister.Options{Server: srv, LabelSelector: "set=r1b"}).List(ctx, lister.NotOlderThan(rv0).WithLimit(2))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Fallbacks).To(BeEmpty())
		Expect(rec.Requests[0].Options.ResourceVersionMatch).To(Equal(metav1.ResourceVersionMatchNotOlderThan))
		Expect(vocab.CompareRV(rec.ServedResourceVersion, rv0)).To(Equal(vocab.Newer))
		Expect(srv.Capabilities(ctx).Get(capability.ResourceVersionMatch)).To(Equal(capability.Yes))
	})

	It("rule 2 on current: Exact without a limit is served exactly, no fallback", func(ctx SpecContext) {
		rv0 := e.create(ctx, "r2", 3)
		e.create(ctx, "r2later", 2)
		l := lister.New(e.client(false), lister.Options{LabelSelector: "set in (r2,r2later)"})
		obj, rec, err := l.List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Fallbacks).To(BeEmpty())
		Expect(rec.Requests).To(HaveLen(1))
		Expect(rec.Requests[0].Options.ResourceVersionMatch).To(Equal(metav1.ResourceVersionMatchExact))
		Expect(rec.Requests[0].Options.Limit).To(BeZero())
		Expect(rec.ServedResourceVersion).To(Equal(rv0))
		Expect(countItems(obj)).To(Equal(3))
	})

	It("continue-token expiry mid-list restarts the whole list and never stitches", func(ctx SpecContext) {
		e.create(ctx, "ce", 6)
		l := lister.New(e.client(false), lister.Options{LabelSelector: "set=ce"})
		var pages []string
		restarts := 0
		first := true
		rec, err := l.ListPages(ctx, lister.MostRecent().WithLimit(2), func(p runtime.Object) error {
			lm := p.(*corev1.ConfigMapList)
			pages = append(pages, lm.ResourceVersion)
			if first {
				first = false
				e.compactPast(ctx)
			}
			return nil
		}, lister.OnRestart(func(ev fallback.Event) error {
			restarts++
			Expect(string(ev.Reason)).To(Equal("continue-expired-restart-newer-rv"))
			pages = nil
			return nil
		}))
		Expect(err).NotTo(HaveOccurred())
		Expect(restarts).To(Equal(1))
		Expect(rec.Restarts).To(Equal(1))
		Expect(rec.Items).To(Equal(6))
		// Real server behaviour: with a label selector the last page can be empty (etcd had more keys
		// after the last match), so 6 items may take 3 or 4 pages of limit 2.
		Expect(rec.Pages).To(Equal(len(pages)))
		Expect(rec.Pages).To(BeNumerically(">=", 3))
		// The restart was caused by the server's own 410 on the continue page.
		Expect(rec.Requests[1].Options.Continue).NotTo(BeEmpty())
		Expect(rec.Requests[1].Class).To(Equal(vocab.ContinueExpired))
		Expect(apierrors.IsResourceExpired(rec.Requests[1].Err)).To(BeTrue(), "a real 410: %v", rec.Requests[1].Err)
		Expect(vocab.CompareRV(rec.ServedResourceVersion, rec.Requests[0].ServedResourceVersion)).To(Equal(vocab.Newer))
		for _, rv := range pages {
			Expect(rv).To(Equal(rec.ServedResourceVersion), "a page from another snapshot")
		}
	})

	It("continue-token expiry without OnRestart fails with ErrContinueExpired instead of mixing snapshots", func(ctx SpecContext) {
		e.create(ctx, "cf", 4)
		l := lister.New(e.client(false), lister.Options{LabelSelector: "set=cf"})
		n := 0
		_, err := l.ListPages(ctx, lister.MostRecent().WithLimit(2), func(p runtime.Object) error {
			n++
			if n == 1 {
				e.compactPast(ctx)
			}
			return nil
		})
		Expect(errors.Is(err, lister.ErrContinueExpired)).To(BeTrue(), "%v", err)
		Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "keeps the server's 410: %v", err)
		Expect(n).To(Equal(1))
	})

	It("GetExact returns the object as it was at the RV", func(ctx SpecContext) {
		e.create(ctx, "ge", 1)
		cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(ctx, "ge-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		old := cm.ResourceVersion
		cm.Data["v"] = "2"
		_, err = e.cs.CoreV1().ConfigMaps(e.ns).Update(ctx, cm, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		obj, rec, err := lister.New(e.client(false), lister.Options{}).GetExact(ctx, "ge-0", old)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.(*corev1.ConfigMap).Data["v"]).To(Equal("1"))
		Expect(rec.ServedResourceVersion).To(Equal(old))
	})

	It("rule 1 on Exact: a compacted Exact RV is ErrExactUnavailable with 410 semantics, never another RV", func(ctx SpecContext) {
		rv0 := e.create(ctx, "eg", 2)
		e.compactPast(ctx)
		_, rec, err := lister.New(e.client(false), lister.Options{LabelSelector: "set=eg"}).List(ctx, lister.Exact(rv0))
		Expect(errors.Is(err, lister.ErrExactUnavailable)).To(BeTrue(), "%v", err)
		Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "%v", err)
		Expect(fallbackReasons(rec)).To(HaveExactElements("exact-gone"))
		Expect(rec.ServedResourceVersion).To(BeEmpty())
	})

	It("an informer over the ListerWatcher syncs with the watch cache off: the current server streams the list from etcd, StreamingList observed Yes", func(ctx SpecContext) {
		e.create(ctx, "infoff", 3)
		srv := detect(e.cfg)
		lw := lister.NewListerWatcher(e.client(false), lister.Options{Server: srv, LabelSelector: "set=infoff", InitialEventsTimeout: 2 * time.Second})
		inf, _ := syncInformer(ctx, lw, 60*time.Second)
		Expect(inf.GetStore().List()).To(HaveLen(3))
		caps := srv.Capabilities(ctx)
		AddReportEntry("streamingList with the watch cache off", caps.Get(capability.StreamingList).String()+": "+caps.Reasons[capability.StreamingList])
		// Real v1.36 and v1.37 behaviour: with --watch-cache=false the streaming list is served from etcd and
		// still ends with the initial-events-end bookmark, so the guard confirms the gate default.
		Expect(caps.Get(capability.StreamingList)).To(Equal(capability.Yes))
		Expect(caps.Basis[capability.StreamingList]).To(Equal(capability.BasisObserved), "the guard verified the gate-default belief")
	})

	It("lister.Options.DisableStreamingList: an informer lists (no sendInitialEvents) where the server would stream from etcd", func(ctx SpecContext) {
		e.create(ctx, "nostream", 3)
		srv := detect(e.pcfg)
		Expect(srv.Capabilities(ctx).Get(capability.StreamingList)).To(Equal(capability.Yes), "the server streams lists")
		e.proxy.ResetRequests()
		lw := lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=nostream", DisableStreamingList: true})
		inf, _ := syncInformer(ctx, lw, 60*time.Second)
		Expect(inf.GetStore().List()).To(HaveLen(3))
		Expect(e.requests("list")).NotTo(BeEmpty(), "synced from a list")
		Eventually(func() []faults.Request { return e.requests("watch") }).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "then watched")
		for _, r := range e.requests("watch") {
			Expect(isStreaming(r)).To(BeFalse(), "a streaming list was sent: %s", r.RawQuery)
		}
	})
})

var _ = Describe("lister on a current apiserver behind a fault proxy", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current},
			"needs the harness's fault proxy (injected 429/5xx/504, stripped parameters, request log) and etcd revisions")
	})
	tooLarge := []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}

	It("a 504 with Retry-After is retried by client-go's REST client inside a user's client, and counted; the SDK's adapter sends it once", func(ctx SpecContext) {
		rv := e.create(ctx, "ra", 2)
		e.proxy.ResetRequests()
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, RetryAfterSeconds: 1, Count: 1, Causes: tooLarge})
		_, rec, err := lister.New(e.userClient(), lister.Options{LabelSelector: "set=ra"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		lists := e.requests("list")
		Expect(lists).To(HaveLen(2))
		Expect(lists[0].Status).To(Equal(504))
		Expect(lists[1].Status).To(Equal(200))
		Expect(lists[1].Time.Sub(lists[0].Time)).To(BeNumerically(">=", time.Second))
		Expect(rec.Requests).To(HaveLen(1)) // client-go's rest client retried inside one call
		Expect(rec.Requests[0].WireRequests).To(Equal(2), "and the lister counted both")
		Expect(rec.Fallbacks).To(BeEmpty())

		// lister.FromClientset: one request per request; the wait is the lister's
		// (after the consistent limit=1 read that shows rv exists).
		e.proxy.ResetRequests()
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, RetryAfterSeconds: 1, Count: 1, Causes: tooLarge})
		_, rec, err = lister.New(e.client(true), lister.Options{LabelSelector: "set=ra"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		Expect(e.requests("list")).To(HaveLen(3))
		Expect(rec.Requests).To(HaveLen(3))
		for _, r := range rec.Requests {
			Expect(r.WireRequests).To(Equal(1), "each request once on the wire")
		}
		Expect(fallbackReasons(rec)).To(HaveExactElements("too-large-rv-check-exists", "too-large-rv-wait-retry-after"))
	})

	It("Retry-After that client-go does not absorb is honoured by the lister (504 too-large, client-go retries off)", func(ctx SpecContext) {
		rv := e.create(ctx, "ra2", 2)
		e.proxy.ResetRequests()
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, RetryAfterSeconds: 2, Count: 1, Causes: tooLarge})
		_, rec, err := lister.New(e.noRetryClient(), lister.Options{LabelSelector: "set=ra2"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		// The 504, the consistent limit=1 read that shows rv exists, then the same list after Retry-After.
		Expect(rec.Requests).To(HaveLen(3))
		Expect(rec.Requests[0].Class).To(Equal(vocab.TooLargeRV))
		Expect(fallbackReasons(rec)).To(HaveExactElements("too-large-rv-check-exists", "too-large-rv-wait-retry-after"))
		Expect(rec.Fallbacks[1].Detail).To(ContainSubstring("Retry-After 2s honoured"))
		lists := e.requests("list")
		Expect(lists).To(HaveLen(3))
		Expect(lists[0].Status).To(Equal(504))
		Expect(lists[0].Fault).NotTo(BeEmpty())
		Expect(lists[1].Status).To(Equal(200))
		Expect(query(lists[1].RawQuery).Get("limit")).To(Equal("1"))
		Expect(lists[2].Status).To(Equal(200))
		Expect(lists[2].Time.Sub(lists[0].Time)).To(BeNumerically(">=", 2*time.Second), "the lister waited the server's Retry-After")
		rvAtLeast(rec.ServedResourceVersion, rv)
	})

	It("a user's client's 10 hidden retries are counted and charged to the lister's too-large budget: no wait on top, MostRecent fallback, never older", func(ctx SpecContext) {
		rv := e.create(ctx, "ra3", 1)
		e.proxy.ResetRequests()
		// client-go sends 1 + 10 retries, each after the 1 s Retry-After; the 11th 504 reaches the lister
		// after about 10 s; the lister counts 11 requests on the wire and charges the 10 retries to its 2
		// too-large retries: it does not wait again but lists MostRecent, verified not older than rv.
		// The SDK's adapters and fallback.NoHiddenRetries clients send no hidden request.
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, RetryAfterSeconds: 1, Count: 11, Causes: tooLarge})
		_, rec, err := lister.New(e.userClient(), lister.Options{LabelSelector: "set=ra3"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests).To(HaveLen(2))
		Expect(rec.Requests[0].WireRequests).To(Equal(11))
		Expect(rec.Requests[0].Class).To(Equal(vocab.TooLargeRV))
		Expect(fallbackReasons(rec)).To(HaveExactElements("too-large-rv-fallback-most-recent"))
		lists := e.requests("list")
		Expect(lists).To(HaveLen(12))
		for i := 0; i < 11; i++ {
			Expect(lists[i].Status).To(Equal(504))
		}
		Expect(lists[11].Status).To(Equal(200))
		Expect(query(lists[11].RawQuery).Get("resourceVersion")).To(BeEmpty(), "MostRecent")
		rvAtLeast(rec.ServedResourceVersion, rv)
	})

	It("429 with Retry-After and a 500 without are backed off by the lister (client-go retries off)", func(ctx SpecContext) {
		rv := e.create(ctx, "thr", 2)
		e.proxy.ResetRequests()
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 429, RetryAfterSeconds: 2, Count: 1})
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 500, Count: 1})
		_, rec, err := lister.New(e.noRetryClient(), lister.Options{LabelSelector: "set=thr"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		Expect(fallbackReasons(rec)).To(HaveExactElements("throttled-backoff", "server-error-backoff"))
		Expect(rec.Requests[0].Class).To(Equal(vocab.Throttled))
		Expect(rec.Requests[1].Class).To(Equal(vocab.ServerError))
		lists := e.requests("list")
		Expect(lists).To(HaveLen(3))
		Expect([]int{lists[0].Status, lists[1].Status, lists[2].Status}).To(Equal([]int{429, 500, 200}))
		Expect(lists[1].Time.Sub(lists[0].Time)).To(BeNumerically(">=", 2*time.Second), "429's Retry-After honoured")
		Expect(lists[2].Time.Sub(lists[1].Time)).To(BeNumerically(">", 0))
	})

	It("a 504 too-large without Retry-After is retried by the lister with backoff, then served", func(ctx SpecContext) {
		rv := e.create(ctx, "tl", 2)
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, Count: 2, Causes: tooLarge})
		_, rec, err := lister.New(e.client(true), lister.Options{LabelSelector: "set=tl"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		// The two injected 504s answer the list and the consistent read that checks rv exists; that read is
		// retried with backoff, then the list is sent again.
		Expect(fallbackReasons(rec)).To(HaveExactElements("too-large-rv-check-exists", "newer-rv-probe-retry", "too-large-rv-wait-retry-after"))
		rvAtLeast(rec.ServedResourceVersion, rv)
	})

	It("too-large RV, real: NotOlderThan a future RV gets the watch cache's own 504; the lister waits and is served once the RV exists", func(ctx SpecContext) {
		// The cacher blocks up to 3 s for the RV, then answers 504 ResourceVersionTooLarge.
		rec, future := e.listAtFutureRV(ctx, "tlr", 504, 50*time.Millisecond, func(future string) (*lister.Record, error) {
			_, rec, err := lister.New(e.noRetryClient(), lister.Options{LabelSelector: "set=tlr"}).List(ctx, lister.NotOlderThan(future))
			return rec, err
		})
		first := rec.Requests[0]
		Expect(first.Class).To(Equal(vocab.TooLargeRV))
		var st apierrors.APIStatus
		Expect(errors.As(first.Err, &st)).To(BeTrue())
		Expect(st.Status().Code).To(Equal(int32(504)))
		Expect(st.Status().Details.Causes).To(ContainElement(HaveField("Type", metav1.CauseTypeResourceVersionTooLarge)))
		ra, ok := engine.RetryAfter(first.Err)
		Expect(ok).To(BeTrue())
		Expect(ra).To(Equal(time.Second), "the watch cache's retryAfterSeconds")
		// One consistent read shows the RV within reach (20 ahead), then the lister waits it out.
		Expect(fallbackReasons(rec)[0]).To(Equal("too-large-rv-check-exists"))
		Expect(fallbackReasons(rec)[1:]).To(HaveEach("too-large-rv-wait-retry-after"))
		rvAtLeast(rec.ServedResourceVersion, future)
		for _, r := range e.requests("list") {
			Expect(r.Fault).To(BeEmpty(), "every answer came from the real server")
		}
	})

	It("an informer with a compat.Detector on the current server streams its list: one watch, no list, StreamingList observed Yes", func(ctx SpecContext) {
		e.create(ctx, "st", 3)
		srv := detect(e.pcfg)
		e.proxy.ResetRequests()
		lw := lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=st", InitialEventsTimeout: 10 * time.Minute})
		inf, _ := syncInformer(ctx, lw, 60*time.Second)
		Expect(inf.GetStore().List()).To(HaveLen(3))
		caps := srv.Capabilities(ctx)
		Expect(caps.Get(capability.StreamingList)).To(Equal(capability.Yes))
		Expect(caps.Basis[capability.StreamingList]).To(Equal(capability.BasisObserved))
		Expect(e.requests("list")).To(BeEmpty(), "synced from the stream alone")
		watches := e.requests("watch")
		Expect(watches).To(HaveLen(1))
		Expect(isStreaming(watches[0])).To(BeTrue())
	})

	It("streaming guard: through a proxy that strips sendInitialEvents, resourceVersionMatch and allowWatchBookmarks, an informer syncs and StreamingList=No is observed", func(ctx SpecContext) {
		e.create(ctx, "sg", 3)
		srv := detect(e.pcfg)
		caps := srv.Capabilities(ctx)
		Expect(caps.Get(capability.StreamingList)).To(Equal(capability.Yes))
		Expect(caps.Tentative(capability.StreamingList)).To(BeTrue(), "current server: WatchList gate default, verified by behaviour")

		// A real v1.36 or v1.37 defaults a legacy watch to sendInitialEvents (see e2e/smoke), so all three
		// parameters must go for the server to behave like one that ignores sendInitialEvents.
		e.proxy.StripParams("sendInitialEvents", "resourceVersionMatch", "allowWatchBookmarks")
		DeferCleanup(func() { e.proxy.StripParams() })
		e.proxy.ResetRequests()
		const quiet = 2 * time.Second
		lw := lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=sg", InitialEventsTimeout: quiet})
		inf, took := syncInformer(ctx, lw, 60*time.Second)
		Expect(inf.GetStore().List()).To(HaveLen(3))
		Expect(took).To(BeNumerically(">=", quiet), "the guard waited InitialEventsTimeout of quiet before giving up")

		caps = srv.Capabilities(ctx)
		Expect(caps.Get(capability.StreamingList)).To(Equal(capability.No))
		Expect(caps.Basis[capability.StreamingList]).To(Equal(capability.BasisObserved))
		Expect(caps.Reasons[capability.StreamingList]).To(ContainSubstring(metav1.InitialEventsAnnotationKey))

		reqs := e.requests("")
		Expect(len(reqs)).To(BeNumerically(">=", 2))
		Expect(reqs[0].Verb).To(Equal("watch"))
		Expect(isStreaming(reqs[0])).To(BeTrue(), "the reflector tried a streaming list first")
		Expect(reqs[0].ForwardedQuery).NotTo(ContainSubstring("sendInitialEvents"))
		Expect(reqs[1].Verb).To(Equal("list"), "then fell back to a list")
	})
	It("compat: a Detector (ForConfig) reads "+build.Current+"; behaviour outranks the version and is relearned", func(ctx SpecContext) {
		clk := clocktesting.NewFakePassiveClock(time.Now())
		det := capability.NewDetector(capability.DetectorOptions{Clock: clk, ObservationTTL: time.Minute})
		srv, err := det.ForConfig(e.pcfg)
		Expect(err).NotTo(HaveOccurred())
		caps := srv.Capabilities(ctx)
		current, err := capability.ParseVersion(build.Current)
		Expect(err).NotTo(HaveOccurred())
		Expect(caps.Version.Major).To(Equal(1))
		Expect(caps.Version.Minor).To(Equal(current.Minor))
		Expect(caps.Get(capability.ResourceVersionMatch)).To(Equal(capability.Yes))
		Expect(caps.Basis[capability.ResourceVersionMatch]).To(Equal(capability.BasisVersion))

		rv0 := e.create(ctx, "cb", 2)
		e.waitCache(ctx, e.bump(ctx))
		l := lister.New(e.client(true), lister.Options{Server: srv, LabelSelector: "set=cb"})

		// The proxy makes the current server ignore resourceVersionMatch: Exact(rv0) without a limit
		// is served at the newest RV; the lister notices (rule 2), retries with a limit, and the
		// observation overrides the version.
		e.proxy.StripParams("resourceVersionMatch")
		DeferCleanup(func() { e.proxy.StripParams() })
		obj, rec, err := l.List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests[0].Class).To(Equal(vocab.ServedNewerThanExact))
		Expect(fallbackReasons(rec)).To(HaveExactElements("rule2-exact-mismatch-retry-with-limit"))
		Expect(rec.ServedResourceVersion).To(Equal(rv0))
		Expect(countItems(obj)).To(Equal(2))
		caps = srv.Capabilities(ctx)
		Expect(caps.Get(capability.ResourceVersionMatch)).To(Equal(capability.No))
		Expect(caps.Basis[capability.ResourceVersionMatch]).To(Equal(capability.BasisObserved))
		Expect(caps.Reasons[capability.ResourceVersionMatch]).To(ContainSubstring("overrides yes"))
		other, err := det.ForConfig(e.pcfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(other.Capabilities(ctx).Get(capability.ResourceVersionMatch)).To(Equal(capability.No), "shared per host")

		// The server is fixed. While the observation is fresh the lister keeps the legacy form,
		// which is correct on any server (legacy Exact: rv=N&limit) but proves nothing either way.
		e.proxy.StripParams()
		_, rec, err = l.List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests).To(HaveLen(1))
		Expect(rec.Requests[0].Form).To(Equal(vocab.Legacy))
		Expect(rec.ServedResourceVersion).To(Equal(rv0))
		Expect(srv.Capabilities(ctx).Get(capability.ResourceVersionMatch)).To(Equal(capability.No))

		// Once the observation expires (ObservationTTL) the version's belief is back, the match is
		// sent again and the server's behaviour proves it: relearned as observed Yes.
		clk.SetTime(clk.Now().Add(time.Minute + time.Second))
		Expect(srv.Capabilities(ctx).Get(capability.ResourceVersionMatch)).To(Equal(capability.Yes))
		_, rec, err = l.List(ctx, lister.NotOlderThan(rv0).WithLimit(1))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests[0].Form).To(Equal(vocab.Match))
		Expect(rec.Requests[0].Options.ResourceVersionMatch).To(Equal(metav1.ResourceVersionMatchNotOlderThan))
		Expect(vocab.CompareRV(rec.ServedResourceVersion, rv0)).To(Equal(vocab.Newer))
		caps = srv.Capabilities(ctx)
		Expect(caps.Get(capability.ResourceVersionMatch)).To(Equal(capability.Yes))
		Expect(caps.Basis[capability.ResourceVersionMatch]).To(Equal(capability.BasisObserved))
	})
})

var _ = Describe("lister on a legacy v1.18.19 apiserver", Label("legacy", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Legacy}, "needs the harness's "+build.Legacy+" server")
	})

	It("rule 2: Exact without a limit is answered newer; the paginated retry is served at exactly the RV", func(ctx SpecContext) {
		rv0 := e.create(ctx, "l2", 3)
		e.waitCache(ctx, e.create(ctx, "l2later", 2))
		srv := capability.Static(capability.Capabilities{})
		obj, rec, err := lister.New(e.client(false), lister.Options{Server: srv, LabelSelector: "set in (l2,l2later)", PageSize: 2}).List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests[0].Options.ResourceVersionMatch).To(Equal(metav1.ResourceVersionMatchExact))
		Expect(rec.Requests[0].Options.Limit).To(BeZero())
		Expect(rec.Requests[0].Class).To(Equal(vocab.ServedNewerThanExact))
		Expect(vocab.CompareRV(rec.Requests[0].ServedResourceVersion, rv0)).To(Equal(vocab.Newer), "v1.18 ignored the match")
		Expect(fallbackReasons(rec)).To(HaveExactElements("rule2-exact-mismatch-retry-with-limit"))
		// The retry: legacy form (the server is now known to ignore the match), limit = PageSize, two pages at rv0.
		Expect(rec.Requests).To(HaveLen(3))
		retry := rec.Requests[1]
		Expect(retry.Options.ResourceVersion).To(Equal(rv0))
		Expect(retry.Options.ResourceVersionMatch).To(BeEmpty())
		Expect(retry.Options.Limit).To(Equal(int64(2)))
		Expect(retry.ServedResourceVersion).To(Equal(rv0))
		Expect(retry.MoreAfter).To(BeTrue())
		Expect(rec.Requests[2].Options.Continue).NotTo(BeEmpty())
		Expect(rec.Requests[2].ServedResourceVersion).To(Equal(rv0))
		Expect(rec.Pages).To(Equal(2))
		Expect(rec.ServedResourceVersion).To(Equal(rv0))
		Expect(countItems(obj)).To(Equal(3))
		Expect(srv.Capabilities(ctx).Get(capability.ResourceVersionMatch)).To(Equal(capability.No))
	})

	It("rule 1: NotOlderThan+limit at a compacted RV is a real 410 (legacy Exact); retried at a newer RV", func(ctx SpecContext) {
		rv0 := e.create(ctx, "l1", 4)
		e.compactPast(ctx)
		srv := capability.Static(capability.Capabilities{})
		obj, rec, err := lister.New(e.client(false), lister.Options{Server: srv, LabelSelector: "set=l1"}).List(ctx, lister.NotOlderThan(rv0).WithLimit(2))
		Expect(err).NotTo(HaveOccurred())
		first := rec.Requests[0]
		Expect(first.Options.ResourceVersionMatch).To(Equal(metav1.ResourceVersionMatchNotOlderThan), "sent with the match: v1.18 ignores it")
		Expect(first.Class).To(Equal(vocab.Gone))
		Expect(apierrors.IsResourceExpired(first.Err)).To(BeTrue(), "a real 410: %v", first.Err)
		Expect(fallbackReasons(rec)).To(HaveExactElements("rule1-gone-retry-newer-rv"))
		Expect(rec.Requests[1].Purpose).To(Equal("newer-rv-probe"))
		Expect(rec.Requests[2].Options.ResourceVersionMatch).To(BeEmpty(), "the 410 proved the match ignored: legacy form from then on")
		Expect(vocab.CompareRV(rec.Served.ResourceVersion, rv0)).To(Equal(vocab.Newer))
		rvAtLeast(rec.ServedResourceVersion, rv0)
		Expect(countItems(obj)).To(Equal(4))
		Expect(srv.Capabilities(ctx).Get(capability.ResourceVersionMatch)).To(Equal(capability.No))
	})

	It("too-large RV, real: v1.18 answers a future legacy-Exact RV from etcd with a raw 500 'future revision', classified too-large and waited out", func(ctx SpecContext) {
		rec, future := e.listAtFutureRV(ctx, "ltl", 500, 20*time.Millisecond, func(future string) (*lister.Record, error) {
			// No Retry-After on a raw 500: the lister backs off; 1 s, 2 s, 4 s leaves time to write up to the RV.
			p := policy.Policy{Backoff: policy.Backoff{Initial: time.Second, Jitter: -1}}
			_, rec, err := lister.New(e.client(true), knobs.WithLister(lister.Options{Server: legacyMatch(), LabelSelector: "set=ltl"}, knobs.Lister{Policy: p})).List(ctx, lister.NotOlderThan(future).WithLimit(5))
			return rec, err
		})
		first := rec.Requests[0]
		Expect(first.Class).To(Equal(vocab.TooLargeRV))
		Expect(first.Err).To(MatchError(ContainSubstring("future revision")))
		// One consistent read shows the RV within reach (20 ahead), then the lister waits it out.
		Expect(fallbackReasons(rec)[0]).To(Equal("too-large-rv-check-exists"))
		Expect(fallbackReasons(rec)[1:]).To(HaveEach("too-large-rv-wait-retry-after"))
		rvAtLeast(rec.ServedResourceVersion, future)
	})

	// Real v1.18 behaviour (found here): a list with fieldSelector=metadata.name=X is answered from X's
	// newest revision whatever resourceVersion and limit say (registry Store.List -> storage GetToList),
	// so rule 2's retry with a limit is served newer too; GetExact then scans the collection at the RV.
	It("GetExact on v1.18 (Impact on get calls): the single-name list is never exact there; the collection scan at the RV is", func(ctx SpecContext) {
		e.create(ctx, "lge", 1)
		cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(ctx, "lge-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		old := cm.ResourceVersion
		cm.Data["v"] = "2"
		updated, err := e.cs.CoreV1().ConfigMaps(e.ns).Update(ctx, cm, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		e.waitCache(ctx, updated.ResourceVersion)
		obj, rec, err := lister.New(e.client(false), lister.Options{}).GetExact(ctx, "lge-0", old)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.(*corev1.ConfigMap).Data["v"]).To(Equal("1"))
		Expect(rec.ServedResourceVersion).To(Equal(old))
		Expect(fallbackReasons(rec)).To(HaveExactElements("rule2-exact-mismatch-retry-with-limit", "rule2-exact-mismatch-with-limit", "get-exact-name-list-not-exact-scan-collection"))
		Expect(rec.Requests[1].Options.FieldSelector).To(Equal("metadata.name=lge-0"))
		Expect(rec.Requests[1].Options.Limit).To(BeNumerically(">", 0))
		Expect(vocab.CompareRV(rec.Requests[1].ServedResourceVersion, old)).To(Equal(vocab.Newer), "v1.18 ignored the RV even with a limit")
		Expect(rec.Requests[2].Options.FieldSelector).To(BeEmpty())
		Expect(rec.Requests[2].ServedResourceVersion).To(Equal(old))
	})

	It("an informer (unknown server) syncs although v1.18 ignores sendInitialEvents: the guard gives up after InitialEventsTimeout", func(ctx SpecContext) {
		e.create(ctx, "inf", 3)
		srv := capability.Static(capability.Capabilities{})
		e.proxy.ResetRequests()
		const quiet = 2 * time.Second
		lw := lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=inf", InitialEventsTimeout: quiet})
		inf, took := syncInformer(ctx, lw, 60*time.Second)
		Expect(inf.GetStore().List()).To(HaveLen(3))
		Expect(took).To(BeNumerically(">=", quiet), "sync waited for the guard's InitialEventsTimeout")
		caps := srv.Capabilities(ctx)
		Expect(caps.Get(capability.StreamingList)).To(Equal(capability.No))
		Expect(caps.Reasons[capability.StreamingList]).To(ContainSubstring("after 3 initial event(s)"))
		reqs := e.requests("")
		Expect(len(reqs)).To(BeNumerically(">=", 2))
		Expect(reqs[0].Verb).To(Equal("watch"))
		Expect(isStreaming(reqs[0])).To(BeTrue(), "client-go v0.37 tries a streaming list first")
		Expect(reqs[1].Verb).To(Equal("list"))
	})

	It("an informer with a compat.Detector (ForConfig) refuses streaming at once: no streaming request, no wait", func(ctx SpecContext) {
		e.create(ctx, "infd", 3)
		srv := detect(e.pcfg)
		e.proxy.ResetRequests()
		// A guard timeout far longer than the Eventually below: syncing at all proves nothing waited on it.
		lw := lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=infd", InitialEventsTimeout: 10 * time.Minute})
		inf, _ := syncInformer(ctx, lw, 60*time.Second)
		Expect(inf.GetStore().List()).To(HaveLen(3))
		reqs := e.requests("")
		Expect(reqs).NotTo(BeEmpty())
		Expect(reqs[0].Verb).To(Equal("list"), "the reflector listed first")
		for _, r := range reqs {
			Expect(isStreaming(r)).To(BeFalse(), "no streaming list was sent: %s %s", r.Verb, r.RawQuery)
		}
		// The adapter also refuses a streaming watch itself, without a request.
		e.proxy.ResetRequests()
		_, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		Expect(errors.Is(err, lister.ErrStreamingListUnsupported)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("v1.18.19"))
		Expect(e.requests("watch")).To(BeEmpty())
	})

	It("compat: a Detector (ForConfig) reads v1.18.19: resourceVersionMatch no, streaming list no; the lister sends the legacy form at once", func(ctx SpecContext) {
		srv := detect(e.pcfg)
		caps := srv.Capabilities(ctx)
		Expect(caps.Version.Major).To(Equal(1))
		Expect(caps.Version.Minor).To(Equal(18))
		Expect(caps.Version.Patch).To(Equal(19))
		Expect(caps.Get(capability.ResourceVersionMatch)).To(Equal(capability.No))
		Expect(caps.Get(capability.StreamingList)).To(Equal(capability.No))
		Expect(caps.Basis[capability.ResourceVersionMatch]).To(Equal(capability.BasisVersion))

		rv0 := e.create(ctx, "cl", 2)
		e.bump(ctx)
		_, rec, err := lister.New(e.client(true), lister.Options{Server: srv, LabelSelector: "set=cl"}).List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Fallbacks).To(BeEmpty(), "no rule-2 round trip: the version already says legacy")
		Expect(rec.Requests).To(HaveLen(1))
		Expect(rec.Requests[0].Form).To(Equal(vocab.Legacy))
		Expect(rec.Requests[0].Options.ResourceVersionMatch).To(BeEmpty())
		Expect(rec.Requests[0].Options.Limit).To(Equal(int64(500)))
		Expect(rec.ServedResourceVersion).To(Equal(rv0))
	})
})

// The API Concepts list table ("resourceVersionMatch and paging parameters
// for list", https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions), cell by cell, on both servers, through
// the ListerWatcher (wire options in, as client-go sends them): what the
// lister rejects before sending, the served RV's relation to the requested
// one, and how many first-page requests it took (on v1.18 only the
// Exact-without-limit cell needs a second one: rule 2). Requests are counted
// at the lister's Client (recordingClient), so the current-server table runs
// on an external cluster too.
//
// The table runs on v1.37.2 and v1.18.19 with the watch cache on, and on
// v1.37.2 with the watch cache off (--watch-cache=false: every list is served
// from etcd). Every cell behaves the same with the cache off except one the
// table can see: an Any list (rv="0") is then served from etcd at the newest
// RV, where the cache may serve any RV it holds; that cell asserts the newest
// on the cache-off server only.
var _ = Describe("the API Concepts list table on real servers", func() {
	type server struct {
		name    string // the Context's name
		version string
		labels  Labels
		reason  string // non-empty: only the harness provides this server
		// watchCacheOff starts the server with --watch-cache=false.
		watchCacheOff bool
	}
	for _, srv := range []server{
		{build.Current, build.Current, Label("conformance"), "", false},
		{build.Legacy, build.Legacy, Label("legacy", "needs-faults"), "needs the harness's " + build.Legacy + " server", false},
		{build.Current + " with the watch cache off", build.Current, Label("conformance", "needs-faults"),
			"needs the harness's " + build.Current + " server with the watch cache off (--watch-cache=false)", true},
	} {
		version := srv.version
		Context(srv.name, srv.labels, Ordered, func() {
			var e *env
			var rvN, rvNewest string
			BeforeAll(func(ctx SpecContext) {
				o := harness.Options{Version: version, DisableWatchCache: srv.watchCacheOff}
				if srv.reason != "" {
					e = startHarness(ctx, o, srv.reason)
				} else {
					e = start(ctx, o)
				}
				if srv.watchCacheOff {
					Expect(e.c.APIServers()[0].Args()).To(ContainElement("--watch-cache=false"))
				}
				rvN = e.create(ctx, "tbl", 3)
				rvNewest = e.bump(ctx)
				e.waitCache(ctx, rvNewest) // so that "newest" (also from the watch cache) and "exactly N" differ
			})
			for _, match := range []metav1.ResourceVersionMatch{"", metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan} {
				for _, limit := range []int64{0, 2} {
					for _, rvKind := range []string{"unset", "0", "N"} {
						It(fmt.Sprintf("match=%q limit=%d rv=%s", match, limit, rvKind), func(ctx SpecContext) {
							o := metav1.ListOptions{ResourceVersionMatch: match, Limit: limit, LabelSelector: "set=tbl"}
							switch rvKind {
							case "0":
								o.ResourceVersion = "0"
							case "N":
								o.ResourceVersion = rvN
							}
							q, qerr := engine.FromListOptions(o)
							rc := &recordingClient{inner: e.client(false)}
							obj, err := lister.NewListerWatcher(rc, lister.Options{}).ListWithContext(ctx, o)
							lists, watches := rc.sent()
							if qerr != nil {
								// API Concepts: Exact with rv unset or "0", NotOlderThan with rv unset: Invalid.
								Expect(match).NotTo(BeEmpty())
								Expect(errors.Is(err, fallback.ErrInvalidQuery)).To(BeTrue())
								Expect(lists).To(BeEmpty(), "an invalid query reached the server")
								Expect(watches).To(BeEmpty())
								return
							}
							Expect(err).NotTo(HaveOccurred())
							served := obj.(*corev1.ConfigMapList).ResourceVersion
							Expect(served).NotTo(BeEmpty())
							switch q.Semantic {
							case fallback.Exact:
								Expect(served).To(Equal(rvN))
							case fallback.NotOlderThan, fallback.MostRecent:
								rvAtLeast(served, rvN)
							case fallback.Any:
								if srv.watchCacheOff {
									// From etcd: the newest RV, never an older one (the
									// cache on may serve any RV it holds: not asserted).
									rvAtLeast(served, rvNewest)
								}
							}
							Expect(obj.(*corev1.ConfigMapList).Continue).To(BeEmpty())
							Expect(countItems(obj)).To(Equal(3))
							firstPages := 0
							for _, l := range lists {
								if l.Continue == "" {
									firstPages++
								}
							}
							want := 1
							if version == build.Legacy && q.Semantic == fallback.Exact && limit == 0 {
								want = 2 // rule 2: v1.18 served Exact-without-limit newer; retried with a limit
							}
							Expect(firstPages).To(Equal(want), "first-page lists sent: %+v", lists)
						})
					}
				}
			}
			It("invalid queries never reach the server", func(ctx SpecContext) {
				rc := &recordingClient{inner: e.client(false)}
				for _, o := range []metav1.ListOptions{
					{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
					{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
					{ResourceVersion: "5", Limit: 2, Continue: "x"},
					{ResourceVersionMatch: metav1.ResourceVersionMatchExact, ResourceVersion: "5", Limit: 2, Continue: "x"},
					{ResourceVersionMatch: "Newest", ResourceVersion: "5"},
					{Limit: -1},
				} {
					_, err := lister.NewListerWatcher(rc, lister.Options{}).ListWithContext(ctx, o)
					Expect(errors.Is(err, fallback.ErrInvalidQuery)).To(BeTrue(), "%+v: %v", o, err)
					var iq *fallback.InvalidQueryError
					Expect(errors.As(err, &iq)).To(BeTrue())
				}
				lists, watches := rc.sent()
				Expect(lists).To(BeEmpty())
				Expect(watches).To(BeEmpty())
			})
			It("continue rows: RV or match with continue are rejected; a bare continue is followed", func(ctx SpecContext) {
				first, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=tbl", Limit: 1})
				Expect(err).NotTo(HaveOccurred())
				Expect(first.Continue).NotTo(BeEmpty())
				rc := &recordingClient{inner: e.client(false)}
				lw := lister.NewListerWatcher(rc, lister.Options{})
				for _, o := range []metav1.ListOptions{
					{ResourceVersion: "0", Limit: 1, Continue: first.Continue},
					{ResourceVersion: rvN, Limit: 1, Continue: first.Continue},
					{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ResourceVersion: rvN, Limit: 1, Continue: first.Continue},
					{ResourceVersionMatch: metav1.ResourceVersionMatchExact, ResourceVersion: rvN, Limit: 1, Continue: first.Continue},
				} {
					o.LabelSelector = "set=tbl"
					_, err := lw.ListWithContext(ctx, o)
					Expect(errors.Is(err, fallback.ErrInvalidQuery)).To(BeTrue(), "%+v", o)
				}
				lists, watches := rc.sent()
				Expect(lists).To(BeEmpty(), "a rejected continue row reached the server")
				Expect(watches).To(BeEmpty())
				rest, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 1, Continue: first.Continue, LabelSelector: "set=tbl"})
				Expect(err).NotTo(HaveOccurred())
				Expect(countItems(rest)).To(Equal(2))
				Expect(rest.(*corev1.ConfigMapList).ResourceVersion).To(Equal(first.ResourceVersion))
				lists, _ = rc.sent()
				Expect(lists).NotTo(BeEmpty())
				Expect(lists[0].Continue).To(Equal(first.Continue), "the bare continue was sent as given")
			})
		})
	}
})
