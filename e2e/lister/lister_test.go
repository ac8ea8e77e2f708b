package lister_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// TestLister runs the lister's specs against real kube-apiservers (v1.36.3
// and v1.18.19) on a real etcd.
func TestLister(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lister")
}

const ns = "default"

type env struct {
	c     *harness.Cluster
	cfg   *rest.Config
	cs    *kubernetes.Clientset
	proxy *faults.Proxy
	pcs   *kubernetes.Clientset // through the proxy
}

func start(ctx context.Context, o harness.Options) *env {
	c, err := harness.Start(ctx, o)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Stop)
	e := &env{c: c, cfg: c.RESTConfig()}
	e.cs = kubernetes.NewForConfigOrDie(e.cfg)
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	e.proxy, e.pcs = p, kubernetes.NewForConfigOrDie(pcfg)
	return e
}

func (e *env) client(viaProxy bool) lister.Client {
	cs := e.cs
	if viaProxy {
		cs = e.pcs
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	return lister.FromFuncs(cms.List, cms.Watch)
}

// create makes n configmaps with the given prefix and returns the list RV after them.
func (e *env) create(ctx context.Context, prefix string, n int) string {
	for i := 0; i < n; i++ {
		_, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Labels: map[string]string{"set": prefix}},
			Data:       map[string]string{"v": "1"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	l, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "set=" + prefix})
	Expect(err).NotTo(HaveOccurred())
	return l.ResourceVersion
}

// bump writes one object (moving the RV on) and returns the new RV.
func (e *env) bump(ctx context.Context) string {
	name := fmt.Sprintf("bump-%d", time.Now().UnixNano())
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return cm.ResourceVersion
}

func rvAtLeast(got, floor string) {
	Expect(fallback.CompareRV(got, floor)).To(BeElementOf(fallback.Same, fallback.Newer), "served %s, floor %s", got, floor)
}

func reasons(r *lister.Record) []fallback.ReasonCode {
	var out []fallback.ReasonCode
	for _, ev := range r.Fallbacks {
		out = append(out, ev.Reason)
	}
	return out
}

func countItems(obj runtime.Object) int { return len(obj.(*corev1.ConfigMapList).Items) }

// legacyMatch declares a server that ignores resourceVersionMatch, so the lister sends the legacy form.
func legacyMatch() compat.Server {
	return compat.Static(compat.Capabilities{Support: map[compat.Capability]compat.Support{compat.ResourceVersionMatch: compat.No}})
}

var _ = Describe("lister on a current apiserver with the watch cache off", Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = start(ctx, harness.Options{Version: build.Current, DisableWatchCache: true})
	})

	It("rule 1: a real 410 for legacy-form NotOlderThan+limit is retried at a newer RV, never older", func(ctx SpecContext) {
		rv0 := e.create(ctx, "r1", 5)
		e.bump(ctx)
		_, err := e.c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		// Declaring the server legacy makes the lister send rv=N&limit (legacy Exact): a real 410 once compacted.
		l := lister.New(e.client(false), lister.Options{Server: legacyMatch(), LabelSelector: "set=r1"})
		obj, rec, err := l.List(ctx, lister.NotOlderThan(rv0).WithLimit(2))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests[0].Class).To(Equal(fallback.Gone))
		Expect(reasons(rec)).To(HaveExactElements(fallback.ReasonRule1RetryNewerRV))
		Expect(rec.Requests[1].Purpose).To(Equal(lister.PurposeNewerRVProbe))
		rvAtLeast(rec.ServedResourceVersion, rv0)
		Expect(countItems(obj)).To(Equal(5))
	})

	It("rule 1 with the match honoured: NotOlderThan+limit needs no fallback and proves support", func(ctx SpecContext) {
		rv0 := e.create(ctx, "r1b", 3)
		e.bump(ctx)
		_, err := e.c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		srv := compat.Static(compat.Capabilities{})
		_, rec, err := lister.New(e.client(false), lister.Options{Server: srv, LabelSelector: "set=r1b"}).List(ctx, lister.NotOlderThan(rv0).WithLimit(2))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Fallbacks).To(BeEmpty())
		rvAtLeast(rec.ServedResourceVersion, rv0)
		Expect(srv.Capabilities(ctx).Get(compat.ResourceVersionMatch)).To(Equal(compat.Yes))
	})

	It("rule 2: Exact without a limit is served exactly, no fallback", func(ctx SpecContext) {
		rv0 := e.create(ctx, "r2", 3)
		e.create(ctx, "r2later", 2)
		l := lister.New(e.client(false), lister.Options{LabelSelector: "set in (r2,r2later)"})
		obj, rec, err := l.List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Fallbacks).To(BeEmpty())
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
				e.bump(ctx)
				_, err := e.c.Etcd().Compact(ctx)
				Expect(err).NotTo(HaveOccurred())
			}
			return nil
		}, lister.OnRestart(func(ev fallback.Event) error {
			restarts++
			Expect(ev.Reason).To(Equal(fallback.ReasonContinueExpiredRestart))
			pages = nil
			return nil
		}))
		Expect(err).NotTo(HaveOccurred())
		Expect(restarts).To(Equal(1))
		Expect(rec.Restarts).To(Equal(1))
		Expect(rec.Items).To(Equal(6))
		for _, rv := range pages {
			Expect(rv).To(Equal(rec.ServedResourceVersion), "a page from another snapshot")
		}
	})

	It("GetExact returns the object as it was at the RV", func(ctx SpecContext) {
		e.create(ctx, "ge", 1)
		cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "ge-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		old := cm.ResourceVersion
		cm.Data["v"] = "2"
		_, err = e.cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		obj, rec, err := lister.New(e.client(false), lister.Options{}).GetExact(ctx, "ge-0", old)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.(*corev1.ConfigMap).Data["v"]).To(Equal("1"))
		Expect(rec.ServedResourceVersion).To(Equal(old))
	})
})

var _ = Describe("lister on a current apiserver behind a fault proxy", Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) { e = start(ctx, harness.Options{Version: build.Current}) })

	It("a 504 with Retry-After is honoured (client-go's transport waits, then the retry succeeds)", func(ctx SpecContext) {
		rv := e.create(ctx, "ra", 2)
		e.proxy.ResetRequests()
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, RetryAfterSeconds: 1, Count: 1,
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}})
		_, rec, err := lister.New(e.client(true), lister.Options{LabelSelector: "set=ra"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		var lists []faults.Request
		for _, r := range e.proxy.Requests() {
			if r.Verb == "list" {
				lists = append(lists, r)
			}
		}
		Expect(lists).To(HaveLen(2))
		Expect(lists[0].Status).To(Equal(504))
		Expect(lists[1].Time.Sub(lists[0].Time)).To(BeNumerically(">=", 900*time.Millisecond))
		Expect(rec.Requests).To(HaveLen(1)) // client-go's rest client retried inside one call
	})

	It("a 504 too-large without Retry-After is retried by the lister with backoff, then served", func(ctx SpecContext) {
		rv := e.create(ctx, "tl", 2)
		e.proxy.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 504, Count: 2,
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}})
		_, rec, err := lister.New(e.client(true), lister.Options{LabelSelector: "set=tl"}).List(ctx, lister.NotOlderThan(rv))
		Expect(err).NotTo(HaveOccurred())
		Expect(reasons(rec)).To(HaveExactElements(fallback.ReasonTooLargeWait, fallback.ReasonTooLargeWait))
		rvAtLeast(rec.ServedResourceVersion, rv)
	})

	It("invalid queries never reach the server", func(ctx SpecContext) {
		e.proxy.ResetRequests()
		for _, o := range []metav1.ListOptions{
			{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			{ResourceVersion: "5", Limit: 2, Continue: "x"},
		} {
			_, err := lister.NewListerWatcher(e.client(true), lister.Options{}).ListWithContext(ctx, o)
			Expect(errors.Is(err, fallback.ErrInvalidQuery)).To(BeTrue(), "%+v: %v", o, err)
		}
		Expect(e.proxy.Requests()).To(BeEmpty())
	})
})

var _ = Describe("lister on a legacy v1.18.19 apiserver", Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) { e = start(ctx, harness.Options{Version: build.Legacy}) })

	It("rule 2: Exact without a limit is answered newer; the paginated retry is served at exactly the RV", func(ctx SpecContext) {
		rv0 := e.create(ctx, "l2", 3)
		e.create(ctx, "l2later", 2)
		srv := compat.Static(compat.Capabilities{})
		obj, rec, err := lister.New(e.client(false), lister.Options{Server: srv, LabelSelector: "set in (l2,l2later)", PageSize: 2}).List(ctx, lister.Exact(rv0))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Requests[0].Class).To(Equal(fallback.ServedNewerThanExact))
		Expect(reasons(rec)).To(HaveExactElements(fallback.ReasonRule2RetryWithLimit))
		Expect(rec.ServedResourceVersion).To(Equal(rv0))
		Expect(countItems(obj)).To(Equal(3))
		Expect(srv.Capabilities(ctx).Get(compat.ResourceVersionMatch)).To(Equal(compat.No))
	})

	It("rule 1: NotOlderThan+limit at a compacted RV is a real 410; retried at a newer RV", func(ctx SpecContext) {
		rv0 := e.create(ctx, "l1", 4)
		e.bump(ctx)
		_, err := e.c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		obj, rec, err := lister.New(e.client(false), lister.Options{LabelSelector: "set=l1"}).List(ctx, lister.NotOlderThan(rv0).WithLimit(2))
		Expect(err).NotTo(HaveOccurred())
		Expect(reasons(rec)).To(ContainElement(fallback.ReasonRule1RetryNewerRV))
		rvAtLeast(rec.ServedResourceVersion, rv0)
		Expect(countItems(obj)).To(Equal(4))
	})

	It("an informer on the ListerWatcher syncs although v1.18 ignores sendInitialEvents (never hangs)", func(ctx SpecContext) {
		e.create(ctx, "inf", 3)
		srv := compat.Static(compat.Capabilities{})
		lw := lister.NewListerWatcher(e.client(false), lister.Options{Server: srv, LabelSelector: "set=inf", InitialEventsTimeout: 2 * time.Second})
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		go inf.RunWithContext(ictx)
		Eventually(inf.HasSynced).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(inf.GetStore().List()).To(HaveLen(3))
		Expect(srv.Capabilities(ctx).Get(compat.StreamingList)).To(Equal(compat.No))
	})
})

// The seeds' list table (seed 004), cell by cell, on both servers: what the
// lister accepts, what it rejects before sending, and the served RV's relation
// to the requested one.
var _ = Describe("the seeds' list table on real servers", func() {
	for _, version := range []string{build.Current, build.Legacy} {
		Context(version, Ordered, func() {
			var e *env
			var rvN string
			BeforeAll(func(ctx SpecContext) {
				e = start(ctx, harness.Options{Version: version})
				rvN = e.create(ctx, "tbl", 3)
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
							q, qerr := fallback.FromListOptions(o)
							e.proxy.ResetRequests()
							obj, err := lister.NewListerWatcher(e.client(true), lister.Options{}).ListWithContext(ctx, o)
							if qerr != nil {
								Expect(errors.Is(err, fallback.ErrInvalidQuery)).To(BeTrue())
								Expect(e.proxy.Requests()).To(BeEmpty())
								return
							}
							Expect(err).NotTo(HaveOccurred())
							served := obj.(*corev1.ConfigMapList).ResourceVersion
							switch q.Semantic {
							case fallback.Exact:
								Expect(served).To(Equal(rvN))
							case fallback.NotOlderThan, fallback.MostRecent:
								rvAtLeast(served, rvN)
							}
							Expect(obj.(*corev1.ConfigMapList).Continue).To(BeEmpty())
							Expect(countItems(obj)).To(Equal(3))
						})
					}
				}
			}
			It("continue rows: RV or match with continue are rejected; a bare continue is followed", func(ctx SpecContext) {
				first, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "set=tbl", Limit: 1})
				Expect(err).NotTo(HaveOccurred())
				Expect(first.Continue).NotTo(BeEmpty())
				lw := lister.NewListerWatcher(e.client(true), lister.Options{})
				for _, rv := range []string{"0", rvN} {
					_, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 1, Continue: first.Continue, LabelSelector: "set=tbl"})
					Expect(errors.Is(err, fallback.ErrInvalidQuery)).To(BeTrue())
				}
				rest, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 1, Continue: first.Continue, LabelSelector: "set=tbl"})
				Expect(err).NotTo(HaveOccurred())
				Expect(countItems(rest)).To(Equal(2))
				Expect(rest.(*corev1.ConfigMapList).ResourceVersion).To(Equal(first.ResourceVersion))
			})
		})
	}
})
