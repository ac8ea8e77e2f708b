package lister_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

var _ = Describe("a request the server accepts and never answers", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current}, "holds requests at the harness's fault proxy")
	})

	It("a list held by the proxy fails with a *fallback.NoAnswerError within lister.Options.ResponseTimeout, after one request; a reflector syncs once the fault is lifted", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		const bound = 2 * time.Second
		e.create(ctx, "na", 3)
		// Every ConfigMap request of the namespace is held: no status, no byte.
		e.proxy.Inject(faults.Rule{Resource: "configmaps", Namespace: e.ns, Stall: true})
		e.proxy.ResetRequests()

		once := policy.Policy{Backoff: policy.Backoff{MaxRetries: -1}} // no retry: one request
		begin := time.Now()
		_, rec, err := lister.New(suite.ConfigMaps(e.pcs, e.ns), knobs.WithLister(lister.Options{ResponseTimeout: bound}, knobs.Lister{Policy: once})).List(ctx, fallback.MostRecentQuery())
		took := time.Since(begin)
		lists := e.requests("list")
		summary := fmt.Sprintf("%s, %d list request(s) on the wire, %d in the record: %v", took.Round(100*time.Millisecond), len(lists), len(rec.Requests), err)
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("list held by the proxy (ResponseTimeout 2s, no retry)", summary)
		var na *fallback.NoAnswerError
		Expect(errors.As(err, &na)).To(BeTrue(), "err = %v", err)
		Expect(errors.Is(err, fallback.ErrNoAnswer)).To(BeTrue())
		Expect(na.Waiting).To(Equal("response headers"))
		Expect(na.Path).To(Equal("/api/v1/namespaces/" + e.ns + "/configmaps"))
		Expect(took).To(BeNumerically(">=", bound))
		Expect(took).To(BeNumerically("<", bound+5*time.Second))
		Expect(lists).To(HaveLen(1))
		Expect(rec.Requests).To(HaveLen(1))

		// A reflector under the same fault keeps sending, each request ended
		// by the bound, and syncs once the fault is lifted.
		e.proxy.ResetRequests()
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := reflector.New(suite.ConfigMaps(e.pcs, e.ns), &corev1.ConfigMap{}, store, reflector.Options{Lister: lister.Options{ResponseTimeout: bound}})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); r.Run(rctx) }()
		DeferCleanup(func() { cancel(); <-done })
		Eventually(func() int { return len(e.requests("")) }).WithTimeout(4*bound).WithPolling(50*time.Millisecond).
			Should(BeNumerically(">=", 2), "a second request while the fault holds: the first was ended by the bound")
		Expect(r.HasSynced()).To(BeFalse())

		e.proxy.ClearRules()
		e.proxy.ResetStalled()
		lifted := time.Now()
		Eventually(r.HasSynced).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		recovery := time.Since(lifted)
		AddReportEntry("reflector.New: sync after the fault was lifted", recovery.Round(time.Millisecond).String())
		fmt.Fprintln(GinkgoWriter, "reflector synced", recovery.Round(time.Millisecond), "after the lift")
		Expect(store.ListKeys()).To(HaveLen(3))
	})
})
