package baddata_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

type env struct {
	p    *faults.Proxy
	pcfg *rest.Config
	pcs  kubernetes.Interface // through the proxy
	cs   kubernetes.Interface // direct: set-up writes, not counted
}

// startEnv starts a current apiserver with a fault proxy in front of it
// (on an external cluster it Skips with reason).
func startEnv(ctx context.Context, reason string) *env {
	GinkgoHelper()
	c := suite.StartHarness(ctx, harness.Options{Version: build.Current}, reason)
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	e := &env{p: p, pcfg: pcfg, pcs: kubernetes.NewForConfigOrDie(pcfg), cs: kubernetes.NewForConfigOrDie(c.RESTConfig())}
	suite.WaitForDefaultNamespace(ctx, e.cs)
	return e
}

// newNS creates a namespace with n ConfigMaps cm-0.. (directly, not through
// the proxy).
func (e *env) newNS(ctx context.Context, prefix string, n int) string {
	ns := suite.NewNamespace(ctx, e.cs, prefix)
	suite.CreateConfigMaps(ctx, e.cs, ns, n, nil)
	return ns
}

// wire counts the requests on configmaps in ns the proxy saw: lists
// (without the streaming-list guard's limit=1 count probes unless
// withProbes) and watches (streaming lists included).
func (e *env) wire(ns string, withProbes bool) (lists, watches int) {
	for _, r := range e.p.Requests() {
		if r.Resource != "configmaps" || r.Namespace != ns {
			continue
		}
		switch r.Verb {
		case "list":
			q, _ := url.ParseQuery(r.RawQuery)
			if !withProbes && q.Get("limit") == "1" && q.Get("resourceVersion") == "" && q.Get("continue") == "" {
				continue
			}
			lists++
		case "watch":
			watches++
		}
	}
	return lists, watches
}

// update writes cm-<i> of ns with new data (directly) and returns its new
// resourceVersion.
func (e *env) update(ctx context.Context, ns string, i int, v string) string {
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-"+strconv.Itoa(i), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	cm.Data = map[string]string{"v": v}
	cm, err = e.cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return cm.ResourceVersion
}

func rvNum(rv string) uint64 { n, _ := strconv.ParseUint(rv, 10, 64); return n }

// watcher is one path that keeps a store of ns: the drop-in informer,
// reflector.New, or the stock informer. It records every object version it
// applied and whether any went back in time.
type watcher struct {
	name  string
	ns    string
	store cache.Store
	rec   *reasons.Counter

	mu       sync.Mutex
	newest   map[string]uint64
	backward []string
}

func (w *watcher) see(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := rvNum(cm.ResourceVersion)
	if n < w.newest[cm.Name] {
		w.backward = append(w.backward, fmt.Sprintf("%s: %d -> %d", cm.Name, w.newest[cm.Name], n))
	}
	w.newest[cm.Name] = max(n, w.newest[cm.Name])
}

func (w *watcher) wentBack() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.backward)
}

func (w *watcher) holds(name string) string {
	obj, ok, _ := w.store.GetByKey(w.ns + "/" + name)
	if !ok {
		return ""
	}
	return obj.(*corev1.ConfigMap).ResourceVersion
}

// seeingStore is a store that reports every object it is given.
type seeingStore struct {
	cache.Store
	w *watcher
}

func (s seeingStore) Add(obj any) error    { s.w.see(obj); return s.Store.Add(obj) }
func (s seeingStore) Update(obj any) error { s.w.see(obj); return s.Store.Update(obj) }
func (s seeingStore) Replace(items []any, rv string) error {
	for _, it := range items {
		s.w.see(it)
	}
	return s.Store.Replace(items, rv)
}

const (
	pathDropIn    = "drop-in informer"
	pathReflector = "reflector.New"
	pathStock     = "stock informer"
)

// startWatcher runs one path on ns through the proxy until cleanup and
// waits for it to sync.
func (e *env) startWatcher(ctx context.Context, path, ns string) *watcher {
	w, synced := e.runWatcher(path, ns, e.pcs, policy.Policy{})
	Eventually(synced).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(5 * time.Millisecond).Should(BeTrue())
	return w
}

// runWatcher starts one path on ns through cs (steadywatch's paths with
// policy) until cleanup and returns it with its HasSynced.
func (e *env) runWatcher(path, ns string, cs kubernetes.Interface, policy policy.Policy) (*watcher, func() bool) {
	w := &watcher{name: path, ns: ns, rec: reasons.NewFallbacks(), newest: map[string]uint64{}}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var synced func() bool
	switch path {
	case pathReflector:
		srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(e.pcfg)
		Expect(err).NotTo(HaveOccurred())
		store := seeingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), w: w}
		w.store = store
		r := reflector.New(suite.ConfigMaps(cs, ns), &corev1.ConfigMap{}, store, reflector.Options{
			Lister: knobs.WithLister(lister.Options{Name: path, Server: srv, Metrics: w.rec}, knobs.Lister{Policy: policy})})
		go func() { defer GinkgoRecover(); defer close(done); r.Run(rctx) }()
		synced = r.HasSynced
	default:
		var lw cache.ListerWatcher
		if path == pathDropIn {
			lw = lister.NewListerWatcher(suite.ConfigMaps(cs, ns), knobs.WithLister(lister.Options{Name: path, Metrics: w.rec}, knobs.Lister{Policy: policy}))
		} else {
			lw = cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
		}
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    w.see,
			UpdateFunc: func(_, obj any) { w.see(obj) },
		})
		Expect(err).NotTo(HaveOccurred())
		w.store = inf.GetStore()
		go func() { defer GinkgoRecover(); defer close(done); inf.RunWithContext(rctx) }()
		synced = inf.HasSynced
	}
	DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed()) })
	return w, synced
}

var _ = Describe("bad server data on a current apiserver behind the fault proxy", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startEnv(ctx, "needs the harness's fault proxy (rewritten list and watch answers, injected 429 and 400)")
	})
	AfterEach(func() {
		e.p.SetListFaults(faults.ListFaults{})
		e.p.SetStreamFaults(faults.StreamFaults{})
		e.p.ClearRules()
	})

	It("1: a continue token repeated on every page ends steadywatch's list at once; stock pages to its deadline", func(ctx SpecContext) {
		const fault = "repeated continue token"
		ns := e.newNS(ctx, "cont", 3)
		e.p.SetListFaults(faults.ListFaults{RepeatContinueToken: true})

		// lister.ListPages: a typed error at the first repeat; the pages
		// before it were handed over, and the Record says how many.
		rec := reasons.NewFallbacks()
		l := lister.New(suite.ConfigMaps(e.pcs, ns), lister.Options{Name: "cont", Metrics: rec})
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		pages := 0
		start := time.Now()
		lrec, err := l.ListPages(lctx, lister.MostRecent().WithLimit(1), func(runtime.Object) error { pages++; return nil })
		took := time.Since(start)
		Expect(err).To(MatchError(lister.ErrBrokenPagination))
		Expect(lctx.Err()).NotTo(HaveOccurred(), "ended by the repeat, not by the deadline")
		Expect(lrec.Pages).To(Equal(pages), "the Record says how many pages were handed over")
		Expect(pages).To(BeNumerically(">=", 1))
		lists, _ := e.wire(ns, true)
		Expect(lists).To(Equal(pages+1), "one request per handed page, plus the one that repeated the token")
		record(result{Fault: fault, Path: "lister.ListPages (limit 1)", Lists: lists, Seconds: took.Seconds(),
			Outcome: fmt.Sprintf("ErrBrokenPagination after %d page(s): %v", pages, err), Counters: rec.String()})

		e.p.ResetRequests()
		start = time.Now()
		_, _, err = l.List(lctx, lister.MostRecent().WithLimit(1))
		took = time.Since(start)
		Expect(err).To(MatchError(lister.ErrBrokenPagination))
		lists, _ = e.wire(ns, true)
		Expect(lists).To(BeNumerically("<=", 3))
		record(result{Fault: fault, Path: "lister.List (limit 1)", Lists: lists, Seconds: took.Seconds(), Outcome: "ErrBrokenPagination", Counters: rec.String()})

		// Stock: client-go's pager, the way its reflector pages, with a
		// 5 s deadline (without one it pages without end, hundreds of
		// requests a minute).
		e.p.ResetRequests()
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		pg := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) {
			return e.pcs.CoreV1().ConfigMaps(ns).List(sctx, o)
		}))
		pg.PageSize = 1
		start = time.Now()
		_, _, err = pg.List(sctx, metav1.ListOptions{})
		took = time.Since(start)
		lists, _ = e.wire(ns, true)
		Expect(err).To(HaveOccurred())
		record(result{Fault: fault, Path: "stock pager (limit 1, 5 s deadline)", Lists: lists, Seconds: took.Seconds(), Outcome: err.Error()})
	})

	It("2: a 429 with Retry-After: 3600 is waited at most Policy.MaxRetryAfter; stock waits to its deadline", func(ctx SpecContext) {
		const fault = "429 Retry-After 3600"
		ns := e.newNS(ctx, "ra", 3)
		policy := policy.Policy{MaxRetryAfter: 2 * time.Second}
		rec := reasons.NewFallbacks()
		cs := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(e.pcfg))
		e.p.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Namespace: ns, Status: 429, RetryAfterSeconds: 3600, Count: 1})
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		start := time.Now()
		obj, _, err := lister.New(suite.ConfigMaps(cs, ns), knobs.WithLister(lister.Options{Name: "ra", Metrics: rec}, knobs.Lister{Policy: policy})).List(lctx, lister.MostRecent())
		took := time.Since(start)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.(*corev1.ConfigMapList).Items).To(HaveLen(3))
		Expect(took).To(BeNumerically("<", 2*time.Second+3*time.Second), "waited the cap, not the hour")
		Expect(rec.Get("throttled-backoff")).To(Equal(1), "the lister's own wait, capped")
		lists, _ := e.wire(ns, true)
		Expect(lists).To(Equal(2))
		record(result{Fault: fault, Path: "lister.List (NoHiddenRetries, MaxRetryAfter 2 s)", Lists: lists, Seconds: took.Seconds(), Outcome: "listed after one capped wait", Counters: rec.String()})

		e.p.ResetRequests()
		e.p.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Namespace: ns, Status: 429, RetryAfterSeconds: 3600, Count: 1})
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		start = time.Now()
		_, err = e.pcs.CoreV1().ConfigMaps(ns).List(sctx, metav1.ListOptions{})
		took = time.Since(start)
		lists, _ = e.wire(ns, true)
		Expect(err).To(HaveOccurred())
		record(result{Fault: fault, Path: "stock clientset List (5 s deadline)", Lists: lists, Seconds: took.Seconds(), Outcome: err.Error()})

		// The informers: the first request of each (a streaming list) is
		// answered 429 with Retry-After: 3600. steadywatch's paths run on a
		// clientset from NoHiddenRetries (the wait is theirs, capped); stock
		// on the plain one.
		const window = 8 * time.Second
		synced := map[string]func() bool{}
		ws := map[string]*watcher{}
		e.p.ResetRequests()
		start = time.Now()
		for _, path := range []string{pathDropIn, pathReflector, pathStock} {
			ns := e.newNS(ctx, "ra-inf", 3)
			e.p.Inject(faults.Rule{Resource: "configmaps", Namespace: ns, Status: 429, RetryAfterSeconds: 3600, Count: 1})
			var pcs kubernetes.Interface = cs
			if path == pathStock {
				pcs = e.pcs
			}
			ws[path], synced[path] = e.runWatcher(path, ns, pcs, policy)
		}
		syncedAt := map[string]time.Duration{}
		Eventually(func() bool {
			for path, ok := range synced {
				if _, done := syncedAt[path]; !done && ok() {
					syncedAt[path] = time.Since(start)
				}
			}
			return time.Since(start) >= window
		}).WithTimeout(window + 5*time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
		for _, path := range []string{pathDropIn, pathReflector, pathStock} {
			w := ws[path]
			lists, watches := e.wire(w.ns, false)
			took, ok := syncedAt[path]
			outcome := fmt.Sprintf("synced after %.2f s", took.Seconds())
			if !ok {
				took, outcome = window, fmt.Sprintf("not synced within %v", window)
			}
			if path != pathStock {
				Expect(ok).To(BeTrue(), "%s syncs after the capped wait", path)
				Expect(took).To(BeNumerically("<", policy.MaxRetryAfter+4*time.Second))
			}
			record(result{Fault: fault, Path: path + map[bool]string{true: "", false: " (NoHiddenRetries, MaxRetryAfter 2 s)"}[path == pathStock],
				Lists: lists, Watches: watches, Seconds: took.Seconds(), Outcome: outcome, Counters: w.rec.String()})
		}
	})

	It("3: an older MODIFIED re-delivered after a newer one is never applied by steadywatch's paths", func(ctx SpecContext) {
		const fault = "older event re-delivered"
		e.p.SetStreamFaults(faults.StreamFaults{RedeliverOlder: true})
		ws := map[string]*watcher{}
		for _, path := range []string{pathDropIn, pathReflector, pathStock} {
			ws[path] = e.startWatcher(ctx, path, e.newNS(ctx, "stale", 3))
		}
		e.p.ResetRequests()
		start := time.Now()
		final := map[string]string{}
		for path, w := range ws {
			e.update(ctx, w.ns, 0, "1")
			final[path] = e.update(ctx, w.ns, 0, "2") // its MODIFIED is followed by the first one again
		}
		took := map[string]time.Duration{}
		for _, path := range []string{pathDropIn, pathReflector} {
			w := ws[path]
			// Counted, still holding the newest, and synced again (a list or
			// streaming list NotOlderThan what it holds).
			Eventually(func() bool {
				lists, watches := e.wire(w.ns, false)
				return w.rec.Get("event-older-than-store") >= 1 && w.holds("cm-0") == final[path] && lists+watches >= 1
			}).WithTimeout(20*time.Second).WithPolling(10*time.Millisecond).Should(BeTrue(), "%s counts the stale event, holds cm-0 at %s and syncs again", path, final[path])
			took[path] = time.Since(start)
		}
		// Stock applies it: cm-0 goes back to the first update (observed
		// and recorded, not required).
		stock := ws[pathStock]
		Eventually(func() bool { return len(stock.wentBack()) > 0 || stock.holds("cm-0") == final[pathStock] }).WithTimeout(10 * time.Second).Should(BeTrue())
		took[pathStock] = time.Since(start)
		for _, path := range []string{pathDropIn, pathReflector, pathStock} {
			w := ws[path]
			lists, watches := e.wire(w.ns, false)
			outcome := "never went back in time; holds the newest"
			if b := w.wentBack(); len(b) > 0 {
				outcome = "went back in time: " + strings.Join(b, ", ") + "; holds cm-0 at " + w.holds("cm-0") + " (newest " + final[path] + ")"
			}
			if path != pathStock {
				Expect(w.wentBack()).To(BeEmpty(), "%s must never go back in time", path)
			}
			record(result{Fault: fault, Path: path, Lists: lists, Watches: watches, Seconds: took[path].Seconds(), Outcome: outcome, Counters: w.rec.String()})
		}
	})

	It("4: a bookmark at resourceVersion \"abc\" is not adopted by steadywatch's paths; none sends more requests than stock", func(ctx SpecContext) {
		const fault = "bookmark RV \"abc\", 400 from it"
		e.p.SetStreamFaults(faults.StreamFaults{BookmarkRV: "abc"})
		e.p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Query: map[string]string{"resourceVersion": "abc"}, Status: 400,
			Message: "invalid resource version: abc"})
		ws := map[string]*watcher{}
		for _, path := range []string{pathDropIn, pathReflector, pathStock} {
			ws[path] = e.startWatcher(ctx, path, e.newNS(ctx, "bm", 3))
		}
		// A write elsewhere makes the watch cache send each watch that began
		// as a streaming list a bookmark, usually within about a second; the
		// watch cache's periodic bookmark (every minute) bounds the wait when
		// it does not (seen once in CI: one path without one after 20 s).
		scratch := e.newNS(ctx, "bm-scratch", 0)
		rewritten := func(ns string) bool {
			for _, r := range e.p.Requests() {
				if r.Namespace == ns && r.Verb == "watch" && strings.Contains(r.Fault, "-> abc") {
					return true
				}
			}
			return false
		}
		i := 0
		Eventually(func() []string {
			i++
			suite.CreateConfigMap(ctx, e.cs, scratch, "w-"+strconv.Itoa(i), nil)
			var without []string // the paths whose watch has not had one yet
			for _, path := range []string{pathDropIn, pathReflector, pathStock} {
				if !rewritten(ws[path].ns) {
					without = append(without, path)
				}
			}
			return without
		}).WithTimeout(75*time.Second).WithPolling(500*time.Millisecond).Should(BeEmpty(), "every watch got a bookmark rewritten to abc")
		// Every path now resumes: the watches end as at their timeout.
		e.p.ResetRequests()
		start := time.Now()
		Expect(e.p.EndWatches()).To(BeNumerically(">=", 3))
		// Each path must watch again, and a later write must reach it.
		// Observed for a fixed window (stock may never recover: its relist
		// at "abc" is refused too), the same for every path.
		final := map[string]string{}
		for path, w := range ws {
			final[path] = e.update(ctx, w.ns, 1, "x")
		}
		const window = 10 * time.Second
		recovered := map[string]time.Duration{}
		Eventually(func() bool {
			for path, w := range ws {
				if _, ok := recovered[path]; !ok && w.holds("cm-1") == final[path] {
					recovered[path] = time.Since(start)
				}
			}
			return time.Since(start) >= window
		}).WithTimeout(window + 5*time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
		stockLists, stockWatches := e.wire(ws[pathStock].ns, false)
		for _, path := range []string{pathDropIn, pathReflector, pathStock} {
			w := ws[path]
			lists, watches := e.wire(w.ns, false)
			fromABC := 0
			for _, r := range e.p.Requests() {
				if r.Namespace == w.ns && strings.Contains(r.RawQuery, "resourceVersion=abc") {
					fromABC++
				}
			}
			took, ok := recovered[path]
			outcome := fmt.Sprintf("saw the next write after %.2f s; %d request(s) from abc", took.Seconds(), fromABC)
			if !ok {
				outcome = fmt.Sprintf("did not see the next write within %v; %d request(s) from abc", window, fromABC)
				took = window
			}
			if path != pathStock {
				Expect(ok).To(BeTrue(), "%s sees the write after the bad bookmark", path)
				Expect(fromABC).To(BeZero(), "%s must not resume from abc", path)
				Expect(lists+watches).To(BeNumerically("<=", stockLists+stockWatches), "%s sends no more requests than stock", path)
				Expect(w.wentBack()).To(BeEmpty())
			}
			for _, r := range e.p.Requests() {
				if r.Namespace == w.ns {
					fmt.Fprintf(GinkgoWriter, "  %s: +%.3fs %s ?%s -> %d %s\n", path, r.Time.Sub(start).Seconds(), r.Verb, r.RawQuery, r.Status, r.Fault)
				}
			}
			record(result{Fault: fault, Path: path, Lists: lists, Watches: watches, Seconds: took.Seconds(),
				Outcome: outcome + fmt.Sprintf(" (requests counted over %v)", window), Counters: w.rec.String()})
		}
	})
})
