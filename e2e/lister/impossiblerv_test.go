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

// Bad input fails fast on every semantic: a resourceVersion far beyond the
// server's is answered "too large" (v1.37: the watch cache's 504 after ~3 s;
// v1.18: the same 504, or etcd's raw 500 "future revision" for the legacy
// Exact form), and one consistent limit=1 read proves the version was never
// handed out. The list then ends with its typed error: no fallback, no retry.
var _ = DescribeTableSubtree("a list at a resourceVersion far in the future fails after the answer that proves it",
	func(version string) {
		var e *env
		BeforeAll(func(ctx SpecContext) {
			e = startHarness(ctx, harness.Options{Version: version}, "counts requests at the harness's fault proxy")
			e.create(ctx, "fut", 1)
		})
		DescribeTable("on "+version, func(ctx SpecContext, q fallback.Query, exact bool) {
			srv := detect(e.pcfg)
			cs := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(e.pcfg))
			e.proxy.ResetRequests()
			begin := time.Now()
			_, rec, err := lister.New(suite.ConfigMaps(cs, e.ns), lister.Options{Server: srv}).List(ctx, q)
			took := time.Since(begin)
			lists := e.requests("list")
			summary := fmt.Sprintf("%s on %s: %s, %d list request(s) on the wire, %d in the record: %v", q, version, took.Round(100*time.Millisecond), len(lists), len(rec.Requests), err)
			fmt.Fprintln(GinkgoWriter, summary)
			AddReportEntry(fmt.Sprintf("%s on %s", q, version), summary)

			var tl *lister.ResourceVersionTooLargeError
			Expect(errors.As(err, &tl)).To(BeTrue(), "err = %v", err)
			Expect(tl.Requested).To(Equal("999999999"))
			Expect(tl.Current).NotTo(BeEmpty(), "the server's current resourceVersion, from its consistent read")
			Expect(errors.Is(err, lister.ErrTooLargeResourceVersion)).To(BeTrue())
			Expect(errors.Is(err, lister.ErrExactUnavailable)).To(Equal(exact))
			Expect(lists).To(HaveLen(2), "the too-large answer and the consistent read that proves it")
			Expect(lists).To(HaveLen(len(rec.Requests)), "the record is what went on the wire")
			Expect(lists[0].Status).To(BeNumerically(">=", 500), "the real server's own too-large answer")
			Expect(lists[1].Status).To(Equal(200))
			Expect(query(lists[1].RawQuery).Get("limit")).To(Equal("1"))
			Expect(query(lists[1].RawQuery).Get("resourceVersion")).To(BeEmpty())
			for _, r := range lists {
				Expect(r.Fault).To(BeEmpty(), "no fault injected")
			}
			Expect(took).To(BeNumerically("<", 8*time.Second), "at most the watch cache's own wait, then one read")
		},
			Entry("NotOlderThan", lister.NotOlderThan("999999999"), false),
			Entry("NotOlderThan with a limit", lister.NotOlderThan("999999999").WithLimit(500), false),
			Entry("Exact", lister.Exact("999999999"), true),
			Entry("Exact with a limit", lister.Exact("999999999").WithLimit(500), true),
		)
	},
	Entry(nil, build.Current),
	Entry(nil, build.Legacy),
	Label("conformance", "needs-faults"), Ordered,
)
