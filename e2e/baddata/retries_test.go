package baddata_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// A server's Retry-After is capped by Policy.MaxRetryAfter on a clientset
// built the usual way (kubernetes.NewForConfig(cfg), no
// fallback.NoHiddenRetries): the SDK's adapters send each request once, so
// client-go's REST client never sleeps the hour behind the lister's back.
var _ = Describe("server-asked waits on a clientset built the usual way", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startEnv(ctx, "needs the harness's fault proxy (injected 429 with Retry-After)")
	})
	AfterEach(func() { e.p.ClearRules(); e.p.ResetRequests() })

	It("a 429 with Retry-After: 3600: lister.List and NewSharedInformerFactory wait lister.Options.MaxRetryAfter, one request each time", func(ctx SpecContext) {
		const fault = "429 Retry-After 3600, plain clientset"
		const maxRetryAfter = 2 * time.Second

		// lister.List over FromClientset.
		ns := e.newNS(ctx, "ra-plain", 3)
		e.p.ResetRequests()
		e.p.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Namespace: ns, Status: 429, RetryAfterSeconds: 3600, Count: 1})
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		start := time.Now()
		obj, rec, err := lister.New(suite.ConfigMaps(e.pcs, ns), lister.Options{Name: "ra-plain", MaxRetryAfter: maxRetryAfter}).List(lctx, lister.MostRecent())
		took := time.Since(start)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.(*corev1.ConfigMapList).Items).To(HaveLen(3))
		Expect(took).To(BeNumerically("<", maxRetryAfter+3*time.Second), "waited the cap, not the hour")
		lists, _ := e.wire(ns, true)
		Expect(lists).To(Equal(2), "the 429 and the retry: no request of client-go's own")
		Expect(rec.Requests).To(HaveLen(2))
		for _, r := range rec.Requests {
			Expect(r.WireRequests).To(Equal(1))
		}
		record(result{Fault: fault, Path: "lister.List (FromClientset, MaxRetryAfter 2 s)", Lists: lists, Seconds: took.Seconds(), Outcome: "listed after one capped wait"})

		// The informer-factory adoption line (docs/adoption.md), on the same plain clientset:
		// its first request (a list or a streaming list) is answered 429.
		ns = e.newNS(ctx, "ra-factory", 3)
		e.p.ResetRequests()
		e.p.Inject(faults.Rule{Resource: "configmaps", Namespace: ns, Status: 429, RetryAfterSeconds: 3600, Count: 1})
		factory := reflector.NewSharedInformerFactoryWithOptions(e.pcs, 0, lister.Options{MaxRetryAfter: maxRetryAfter}, informers.WithNamespace(ns))
		inf := factory.Core().V1().ConfigMaps().Informer()
		fctx, fcancel := context.WithCancel(context.Background())
		DeferCleanup(func() { fcancel(); factory.Shutdown() })
		start = time.Now()
		factory.Start(fctx.Done())
		Eventually(inf.HasSynced).WithTimeout(maxRetryAfter + 8*time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
		took = time.Since(start)
		Expect(inf.GetStore().ListKeys()).To(HaveLen(3))
		lists, watches := e.wire(ns, false)
		Expect(lists+watches).To(BeNumerically("<=", 4), "no hidden retries: the 429, then what the informer itself sends")
		record(result{Fault: fault, Path: "reflector.NewSharedInformerFactoryWithOptions (MaxRetryAfter 2 s)", Lists: lists, Watches: watches, Seconds: took.Seconds(), Outcome: "synced"})
	})
})
