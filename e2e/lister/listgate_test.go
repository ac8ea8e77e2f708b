package lister_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/reflector"
)

var _ = Describe("listgate.Gate: informers that start together read their collections one at a time on a real apiserver", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	const set, objects = "gate", 300
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current}, "needs the harness's request log (arrival and end of every request)")
		// 300 ConfigMaps of 8 KiB: each list is a 2.4 MB response.
		payload := strings.Repeat("x", 8<<10)
		for i := range objects {
			_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", set, i), Labels: map[string]string{"set": set}},
				Data:       map[string]string{"v": payload},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
	})

	// collectionReads returns the proxy's list requests of the set (or of
	// the namespace, which holds only the set) that may return more than
	// one object (the guard's limit=1 count lists excluded).
	collectionReads := func() []faults.Request {
		var out []faults.Request
		for _, r := range e.requests("list") {
			q := query(r.RawQuery)
			if sel := q.Get("labelSelector"); (sel == "set="+set || sel == "") && q.Get("limit") != "1" {
				out = append(out, r)
			}
		}
		return out
	}

	It("six drop-in informers listing different selections (DisableStreamingList) with a gate of one slot: no two list responses overlap at the server", func(ctx SpecContext) {
		srv := detect(e.pcfg)
		gate := listgate.New(1)
		e.proxy.ResetRequests()
		var infs []cache.SharedIndexInformer
		for i := range 6 {
			// Six different requests (nothing to share): each leaves one object out.
			lw := lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=" + set,
				FieldSelector: fmt.Sprintf("metadata.name!=%s-%d", set, i), DisableStreamingList: true, ListGate: gate})
			infs = append(infs, startStockInformer(ctx, lw, &corev1.ConfigMap{}))
		}
		for _, inf := range infs {
			Eventually(inf.HasSynced).WithTimeout(60 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
			Expect(inf.GetStore().ListKeys()).To(HaveLen(objects - 1))
		}
		reads := collectionReads()
		Expect(reads).To(HaveLen(6), "one list per informer")
		for _, r := range reads {
			Expect(r.Done).To(BeTrue())
			Expect(r.Status).To(Equal(200))
		}
		// Arrival to end of response, at the proxy in front of the real
		// server: with one slot each list starts after the previous one's
		// response was read whole.
		for i := 1; i < len(reads); i++ {
			prevEnd := reads[i-1].Time.Add(reads[i-1].Duration)
			Expect(reads[i].Time).NotTo(BeTemporally("<", prevEnd), "list %d arrived %v before list %d's response ended", reads[i].Seq, prevEnd.Sub(reads[i].Time), reads[i-1].Seq)
		}
		st := gate.Stats()
		AddReportEntry("ListGate(1), 6 informers listing different selections", fmt.Sprintf("%+v", st))
		// Some informer found the slot taken: without the gate its list
		// would have overlapped another at the server.
		Expect(st.Waited).To(BeNumerically(">=", 1))
		Expect(st.MaxInFlight).To(Equal(1))
		Expect(st.Admitted).To(BeNumerically("==", 6))
		Expect(st.Shared).To(BeZero())
	})

	It("six drop-in informers and four reflector.New listing the same selection share answers: fewer requests, every cache complete with objects of its own", func(ctx SpecContext) {
		srv := detect(e.pcfg)
		client := e.client(true) // one clientset: one REST client, so its answers may be shared
		for _, tc := range []struct {
			what  string
			start func(gate *listgate.Gate) (synced func() bool, store cache.Store)
			n     int
		}{
			{"drop-in informers (client-go lists resourceVersion 0: identical requests in flight are shared too)", func(gate *listgate.Gate) (func() bool, cache.Store) {
				inf := startStockInformer(ctx, lister.NewListerWatcher(client, lister.Options{Server: srv, LabelSelector: "set=" + set, DisableStreamingList: true, ListGate: gate}), &corev1.ConfigMap{})
				return inf.HasSynced, inf.GetStore()
			}, 6},
			{"reflector.New (MostRecent: only requests queued together are shared)", func(gate *listgate.Gate) (func() bool, cache.Store) {
				// The namespace holds only the set: no selector needed.
				r, store := startReflector(ctx, client, &corev1.ConfigMap{}, reflector.Options{Lister: lister.Options{Server: srv, DisableStreamingList: true, ListGate: gate}})
				return r.HasSynced, store
			}, 4},
		} {
			By(tc.what)
			gate := listgate.New(1)
			e.proxy.ResetRequests()
			var synced []func() bool
			var stores []cache.Store
			for range tc.n {
				hs, store := tc.start(gate)
				synced, stores = append(synced, hs), append(stores, store)
			}
			for i := range synced {
				Eventually(synced[i]).WithTimeout(60 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
				Expect(stores[i].ListKeys()).To(HaveLen(objects))
			}
			st := gate.Stats()
			reads := collectionReads()
			AddReportEntry(fmt.Sprintf("ListGate(1), %d %s", tc.n, tc.what), fmt.Sprintf("%d requests at the server; %+v", len(reads), st))
			Expect(len(reads)).To(BeNumerically("==", int(st.Admitted)), "every admitted read is one request at the server")
			Expect(len(reads)+int(st.Shared)).To(Equal(tc.n), "every other read was answered by a shared request")
			Expect(st.Shared).To(BeNumerically(">=", 1))
			// Each cache holds objects of its own (a copy), not another's.
			a, _, _ := stores[0].GetByKey(e.ns + "/" + set + "-0")
			b, _, _ := stores[1].GetByKey(e.ns + "/" + set + "-0")
			Expect(a).NotTo(BeNil())
			Expect(a).To(Equal(b))
			Expect(a).NotTo(BeIdenticalTo(b))
		}
	})

	It("two reflector.New and two drop-in informers streaming their lists share a gate of one slot: one collection read at a time, every cache complete", func(ctx SpecContext) {
		srv := detect(e.pcfg)
		Expect(srv.Capabilities(ctx).Get(capability.StreamingList)).To(Equal(capability.Yes), "the server streams lists")
		gate := listgate.New(1)
		e.proxy.ResetRequests()
		var synced []func() bool
		var stores []cache.Store
		for i := range 2 {
			r, store := startReflector(ctx, configMapsWithSelector(e.pcs, e.ns, "set="+set), &corev1.ConfigMap{},
				reflector.Options{Lister: lister.Options{Server: srv, Name: fmt.Sprintf("gated-%d", i), ListGate: gate}})
			synced, stores = append(synced, r.HasSynced), append(stores, store)
			inf := startStockInformer(ctx, lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, LabelSelector: "set=" + set, ListGate: gate}), &corev1.ConfigMap{})
			synced, stores = append(synced, inf.HasSynced), append(stores, inf.GetStore())
		}
		for i := range synced {
			Eventually(synced[i]).WithTimeout(60 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
			Expect(stores[i].ListKeys()).To(HaveLen(objects))
		}
		Expect(e.streamingLists("configmaps", "set="+set)).To(HaveLen(4), "each cache streamed its list")
		Expect(collectionReads()).To(BeEmpty(), "no cache fell back to a list")
		st := gate.Stats()
		AddReportEntry("ListGate(1), 4 streaming caches", fmt.Sprintf("%+v", st))
		Expect(st.Admitted).To(BeNumerically("==", 4))
		Expect(st.MaxInFlight).To(Equal(1))
		Expect(st.Waited).To(BeNumerically(">=", 1))
		Expect(st.InFlight).To(BeZero(), "every stream freed its slot at its initial-events-end bookmark")
	})

	It("a list the proxy leaves without an answer holds the gate's slot only for its hold bound: the informer queued behind it syncs", func(ctx SpecContext) {
		srv := detect(e.pcfg)
		const hold = 2 * time.Second
		gate := listgate.New(1, listgate.WithMaxHold(hold))
		e.proxy.ResetRequests()
		// A proxy that accepts one informer's list and never answers it:
		// client-go's REST client has no request timeout by default, so
		// that list waits for ever.
		rule := e.proxy.Inject(faults.Rule{Verb: "list", Stall: true, Query: map[string]string{"labelSelector": "stuck=true"}})
		defer e.proxy.Remove(rule)
		sctx, stopStuck := context.WithCancel(ctx)
		defer stopStuck()
		stuck := startStockInformer(sctx, lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, Name: "stuck", LabelSelector: "stuck=true",
			DisableStreamingList: true, ListGate: gate}), &corev1.ConfigMap{})
		Eventually(func() int { return gate.Stats().InFlight }).WithTimeout(10*time.Second).Should(Equal(1), "the stuck list holds the slot")
		inf := startStockInformer(ctx, lister.NewListerWatcher(e.client(true), lister.Options{Server: srv, Name: "queued", LabelSelector: "set=" + set,
			DisableStreamingList: true, ListGate: gate}), &corev1.ConfigMap{})
		Eventually(inf.HasSynced).WithTimeout(60 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		Expect(inf.GetStore().ListKeys()).To(HaveLen(objects))
		Expect(stuck.HasSynced()).To(BeFalse())

		var stalled, queued []faults.Request
		for _, r := range e.requests("list") {
			switch query(r.RawQuery).Get("labelSelector") {
			case "stuck=true":
				stalled = append(stalled, r)
			case "set=" + set:
				if query(r.RawQuery).Get("limit") != "1" {
					queued = append(queued, r)
				}
			}
		}
		Expect(stalled).To(HaveLen(1))
		Expect(stalled[0].Done).To(BeFalse(), "the stuck list is still without an answer")
		Expect(queued).To(HaveLen(1))
		Expect(queued[0].Status).To(Equal(200))
		// The queued list reached the server only once the stuck one had
		// held the slot for the hold bound.
		Expect(queued[0].Time.Sub(stalled[0].Time)).To(BeNumerically(">=", hold-100*time.Millisecond))
		st := gate.Stats()
		AddReportEntry("ListGate(1, hold 2s), a stalled list and a queued informer", fmt.Sprintf("%+v", st))
		Expect(st.Overdue).To(BeNumerically("==", 1))
		Expect(st.OverdueInFlight).To(Equal(1))
		Expect(st.Waited).To(BeNumerically("==", 1))

		// The stuck informer stops: its request ends, and the gate forgets it.
		stopStuck()
		Eventually(func() bool {
			for _, r := range e.requests("list") {
				if r.Seq == stalled[0].Seq {
					return r.Done
				}
			}
			return false
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		Eventually(func() int { return gate.Stats().OverdueInFlight }).WithTimeout(30 * time.Second).Should(BeZero())
		Expect(gate.Stats().InFlight).To(BeZero())
	})

	It("a waiting informer whose context ends leaves the gate without sending a request", func(ctx SpecContext) {
		gate := listgate.New(1)
		release, err := gate.Acquire(ctx, "holder", nil)
		Expect(err).NotTo(HaveOccurred())
		defer release()
		e.proxy.ResetRequests()
		lctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		var lerr error
		go func() {
			defer wg.Done()
			_, _, lerr = lister.New(e.client(true), lister.Options{LabelSelector: "set=" + set, ListGate: gate}).List(lctx, lister.MostRecent())
		}()
		Eventually(func() int { return gate.Stats().Queued }).WithTimeout(10 * time.Second).Should(Equal(1))
		cancel()
		wg.Wait()
		Expect(lerr).To(MatchError(context.Canceled))
		Expect(collectionReads()).To(BeEmpty())
	})
})
