package examples_test

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

// proxied is a cluster seen through a fault proxy: its config and a
// kubeconfig file for it, for the example programs.
type proxied struct {
	cfg  *rest.Config
	path string
}

func (p proxied) RESTConfig() *rest.Config { return p.cfg }
func (p proxied) KubeconfigPath() string   { return p.path }

// crloopResult is crloop's closing line.
type crloopResult struct {
	cycles, plainStale, crclientStale, fallbacks int
	p50, p99                                     time.Duration
}

func runCrloop(c cluster, ns, name string, cycles int, d time.Duration) crloopResult {
	p := run(c, "crloop", "-namespace", ns, "-name", name, "-cycles", strconv.Itoa(cycles))
	DeferCleanup(func() { fmt.Fprintf(GinkgoWriter, "crloop stderr (tail):\n%s\n", tail(p.stderr.String(), 2000)) })
	Expect(p.wait(d)).To(BeZero(), "crloop exits 0; stderr (tail):\n%s", tail(p.stderr.String(), 2000))
	m := regexp.MustCompile(`crloop: cycles=(\d+) plain-stale=(\d+) crclient-stale=(\d+) fallbacks=(\d+) wait-p50=(\S+) wait-p99=(\S+)`).FindStringSubmatch(p.stdout.String())
	Expect(m).NotTo(BeNil(), "crloop prints its closing line; stdout:\n%s", p.stdout)
	var r crloopResult
	for i, dst := range []*int{&r.cycles, &r.plainStale, &r.crclientStale, &r.fallbacks} {
		n, err := strconv.Atoi(m[i+1])
		Expect(err).NotTo(HaveOccurred())
		*dst = n
	}
	var err error
	r.p50, err = time.ParseDuration(m[5])
	Expect(err).NotTo(HaveOccurred())
	r.p99, err = time.ParseDuration(m[6])
	Expect(err).NotTo(HaveOccurred())
	return r
}

func (r crloopResult) String() string {
	return fmt.Sprintf("%d cycles: plain cached client stale %d, crclient stale %d, crclient fell back to the server %d, crclient's added wait p50 %s p99 %s",
		r.cycles, r.plainStale, r.crclientStale, r.fallbacks, r.p50, r.p99)
}

// The lag is shorter than crclient's default bound (5s): its reads wait
// for the held-back event instead of falling back.
const (
	crloopCycles    = 200
	crloopLagCycles = 10
	crloopLag       = 2 * time.Second
)

func crclientSpecs(version string) {
	var (
		pc proxied
		p  *faults.Proxy
		ns string
	)
	BeforeAll(func(ctx SpecContext) {
		c := suite.StartHarness(ctx, harness.Options{Version: version}, "needs the harness's "+version+" server and its fault proxy")
		ns = suite.NewNamespace(ctx, suite.Clientset(c.RESTConfig()), "crryw")
		var pcfg *rest.Config
		var err error
		p, pcfg, err = c.NewProxy(ctx, c.APIServers()[0])
		Expect(err).NotTo(HaveOccurred())
		pc = proxied{cfg: pcfg, path: suite.WriteKubeconfig(pcfg, "proxy", "admin")}
	})

	It("crclient over a manager on steadywatch's informers never reads older than its own write, where the manager's cached client does", func() {
		r := runCrloop(pc, ns, "loop", crloopCycles, 3*time.Minute)
		line := fmt.Sprintf("crclient read-your-writes %s, no fault: %s", version, r)
		fmt.Fprintln(GinkgoWriter, line)
		AddReportEntry(line)
		Expect(r.cycles).To(Equal(crloopCycles))
		Expect(r.crclientStale).To(BeZero())
	})

	It("crclient waits about the lag when the watch holds every event back, where the manager's cached client reads stale", func() {
		p.SetStreamFaults(faults.StreamFaults{DelayEvents: crloopLag})
		DeferCleanup(func() { p.SetStreamFaults(faults.StreamFaults{}) })
		r := runCrloop(pc, ns, "lag", crloopLagCycles, 3*time.Minute)
		line := fmt.Sprintf("crclient read-your-writes %s, watch events held back %s: %s", version, crloopLag, r)
		fmt.Fprintln(GinkgoWriter, line)
		AddReportEntry(line)
		Expect(r.cycles).To(Equal(crloopLagCycles))
		Expect(r.crclientStale).To(BeZero())
		Expect(r.plainStale).To(BeNumerically(">=", 1), "the held-back watch makes the manager's cached client read its own write stale")
		Expect(r.fallbacks).To(BeZero(), "the lag is shorter than the default bound: the cache catches up")
		Expect(r.p50).To(BeNumerically(">=", crloopLag/2), "crclient waits for the held-back event")
	})
}

var _ = Describe("crclient, controller-runtime's read-your-writes client", func() {
	Context(build.Current, Label("examples", "conformance", "needs-faults"), Ordered, func() { crclientSpecs(build.Current) })
	Context(build.Legacy, Label("examples", "legacy", "needs-faults"), Ordered, func() { crclientSpecs(build.Legacy) })
})
