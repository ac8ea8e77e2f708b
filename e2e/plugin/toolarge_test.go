package plugin_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

// Bad input fails fast and clearly: an Exact list at a resourceVersion far
// beyond the server's used to take 175 s and 44 requests on the wire against
// v1.37.2 (client-go's REST client retried each 504-with-Retry-After 10
// times inside every one of the lister's 4 attempts). The plugin's clients
// now never retry on their own (fallback.NoHiddenRetries), so the lister's
// record is what went on the wire.
var _ = Describe("kubectl-steadywatch list at a resourceVersion far in the future on "+build.Current, Label("conformance", "needs-faults"), Ordered, func() {
	It("fails within 15 s and 2 requests on the wire, saying the resourceVersion is newer than the server's", func(ctx SpecContext) {
		suite.SkipIfExternal("counts requests at the harness's fault proxy")
		t := suite.Start(ctx, harness.Options{Version: build.Current})
		c := t.RequireFaults()
		var cs kubernetes.Interface = suite.Clientset(t.RESTConfig())
		ns := suite.NewNamespace(ctx, cs, "future")
		createCMs(ctx, cs, ns, 1)
		p, pcfg, err := c.NewProxy(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		pk := suite.WriteKubeconfig(pcfg, "c", "u")
		p.ResetRequests()

		r := runPlugin(ctx, time.Minute, pk, "list", "-n", ns, "--resource", "configmaps", "--match", "Exact", "--rv", "999999999", "-o", "json")
		var statuses []int
		for _, req := range p.Requests() {
			if req.Resource == "configmaps" && req.Verb == "list" {
				statuses = append(statuses, req.Status)
			}
		}
		lists := len(statuses)
		l := parseList(r.stdout)
		summary := fmt.Sprintf("exit %d after %s, %d list request(s) on the wire, %d in the plugin's record: %s",
			r.code, r.took.Round(100*time.Millisecond), lists, len(l.Requests), l.Error)
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("Exact list at RV 999999999 on "+build.Current, summary)
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.took).To(BeNumerically("<", 15*time.Second))
		Expect(statuses).To(Equal([]int{504, 200}), "the watch cache's own 504, then the consistent limit=1 read that proves the version was never handed out")
		Expect(lists).To(Equal(len(l.Requests)), "no hidden retries: the record is what went on the wire")
		Expect(l.Error).To(ContainSubstring("resourceVersion 999999999 is newer than the server's newest"))
		Expect(strings.Count(r.stderr, "\n")).To(BeNumerically("<=", 2), "one clear error line")
	})
})
