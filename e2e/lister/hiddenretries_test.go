package lister_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

var _ = Describe("every request on the wire is counted (no hidden client-go retries)", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current}, "counts requests at the harness's fault proxy")
	})

	It("an Exact list far in the future fails within 8 s and 2 requests with a typed error saying the RV is newer than the server's", func(ctx SpecContext) {
		e.create(ctx, "fut", 1)
		srv := detect(e.pcfg)
		cs := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(e.pcfg))
		e.proxy.ResetRequests()
		begin := time.Now()
		_, rec, err := lister.New(suite.ConfigMaps(cs, e.ns), lister.Options{Server: srv}).List(ctx, lister.Exact("999999999"))
		took := time.Since(begin)
		lists := e.requests("list")
		summary := fmt.Sprintf("%s, %d list request(s) on the wire, %d in the record: %v", took.Round(100*time.Millisecond), len(lists), len(rec.Requests), err)
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("Exact list at RV 999999999 (NoHiddenRetries client)", summary)

		var tl *lister.ResourceVersionTooLargeError
		Expect(errors.As(err, &tl)).To(BeTrue(), "err = %v", err)
		Expect(tl.Requested).To(Equal("999999999"))
		Expect(tl.Current).NotTo(BeEmpty(), "the server's current resourceVersion, from a consistent read")
		Expect(err.Error()).To(ContainSubstring("newer than the server's newest"))
		Expect(errors.Is(err, lister.ErrTooLargeResourceVersion)).To(BeTrue())
		Expect(errors.Is(err, lister.ErrExactUnavailable)).To(BeTrue())
		Expect(took).To(BeNumerically("<", 8*time.Second))
		Expect(lists).To(HaveLen(2), "the 504 and the consistent limit=1 read that proves the version was never handed out")
		Expect(lists).To(HaveLen(len(rec.Requests)), "the record is what went on the wire")
		Expect(lists[0].Status).To(Equal(504))
		Expect(lists[1].Status).To(Equal(200))
		for _, r := range lists {
			Expect(r.Fault).To(BeEmpty(), "the real server's own answer")
		}
	})
})
