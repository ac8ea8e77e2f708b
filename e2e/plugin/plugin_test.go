package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

const probeBound = 2 * time.Minute

// expectCleanedUp checks that the probe left nothing: its namespace is gone or
// terminating (no namespace controller runs in the harness) and it holds no
// ConfigMaps but the one a cluster's controllers add to every namespace.
func expectCleanedUp(ctx context.Context, cs kubernetes.Interface, ns string) {
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
		Expect(got.DeletionTimestamp).NotTo(BeNil(), "namespace %s is being deleted", ns)
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(ownConfigMaps(cms.Items)).To(BeEmpty(), "the probe's ConfigMaps are deleted")
}

// runProbeJSON runs `probe -o json` against kubeconfig and checks what holds
// on every server: exit 0, schema 1, 33 cells, a scratch namespace created and
// cleaned up.
func runProbeJSON(ctx context.Context, kubeconfig string, cs kubernetes.Interface, name string) probeJSON {
	r := runPlugin(ctx, probeBound, kubeconfig, "probe", "-o", "json")
	Expect(r.code).To(Equal(0), r.stderr)
	AddReportEntry("probe time "+name, r.took.String())
	fmt.Fprintf(GinkgoWriter, "TIMING probe %s: %s\n", name, r.took.Round(time.Millisecond))
	p := parseProbe(r.stdout)
	Expect(p.CreatedNamespace).To(BeTrue())
	Expect(p.Cells).To(HaveLen(33))
	expectCleanedUp(ctx, cs, p.Namespace)
	return p
}

// probeGolden runs the probe against a harness server, checks it against the
// golden file and that it cleaned up.
func probeGolden(ctx context.Context, kubeconfig string, cs kubernetes.Interface, name string) probeJSON {
	p := runProbeJSON(ctx, kubeconfig, cs, name)
	checkGolden(name, p)
	return p
}

// e2eLabel marks the ConfigMaps the specs create; list and sync select on it,
// so objects a real cluster's controllers add to a namespace do not count.
const (
	e2eLabelKey   = "steadywatch-e2e"
	e2eLabelValue = "plugin"
	e2eSelector   = e2eLabelKey + "=" + e2eLabelValue
)

// createCMs creates ConfigMaps cm-0..cm-<n-1> labelled e2eSelector.
func createCMs(ctx context.Context, cs kubernetes.Interface, ns string, n int) (firstRV string) {
	return suite.CreateConfigMaps(ctx, cs, ns, n, func(_ int, cm *corev1.ConfigMap) {
		cm.Labels = map[string]string{e2eLabelKey: e2eLabelValue}
	})
}

type listJSON struct {
	SchemaVersion         int    `json:"schemaVersion"`
	Requested             string `json:"requested"`
	Served                string `json:"served"`
	ServedResourceVersion string `json:"servedResourceVersion"`
	Items                 int    `json:"items"`
	Requests              []struct {
		Query string `json:"query"`
		Class string `json:"class"`
	} `json:"requests"`
	Fallbacks []struct {
		Reason string `json:"reason"`
		Action string `json:"action"`
	} `json:"fallbacks"`
	Capabilities string `json:"capabilities"`
	Error        string `json:"error"`
}

func parseList(stdout string) listJSON {
	var l listJSON
	Expect(json.Unmarshal([]byte(stdout), &l)).To(Succeed(), stdout)
	Expect(l.SchemaVersion).To(Equal(1))
	return l
}

type syncedJSON struct {
	Synced          bool    `json:"synced"`
	Items           int     `json:"items"`
	ResourceVersion string  `json:"resourceVersion"`
	Seconds         float64 `json:"seconds"`
}

// runSync starts `sync` and returns its stdout lines, its stderr lines and a
// wait function returning the exit code.
func runSync(ctx context.Context, kubeconfig string, args ...string) (stdout, stderr *lineWaiter, wait func() int) {
	cmd := pluginCmd(ctx, kubeconfig, append([]string{"sync"}, args...)...)
	// io.Pipe rather than StdoutPipe: Wait then waits until everything the
	// process wrote has been handed to the readers.
	sor, sow := io.Pipe()
	ser, sew := io.Pipe()
	cmd.Stdout, cmd.Stderr = sow, sew
	Expect(cmd.Start()).To(Succeed())
	stdout, stderr = newLineWaiter(sor), newLineWaiter(ser)
	done := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		_ = sow.Close()
		_ = sew.Close()
		code := 0
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- code
	}()
	var code *int
	wait = func() int {
		if code == nil {
			var c int
			Eventually(done).WithTimeout(time.Minute).Should(Receive(&c))
			code = &c
		}
		return *code
	}
	DeferCleanup(func() {
		if code == nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
			wait()
		}
	})
	return stdout, stderr, wait
}

func parseSynced(line string) syncedJSON {
	var s syncedJSON
	Expect(json.Unmarshal([]byte(line), &s)).To(Succeed(), line)
	return s
}

// ---- current server, watch cache on: the probe, list, sync, detection, rights, signals, exit codes ----
// On an external cluster (E2E_KUBECONFIG) everything here runs but the
// detection flip (a fault proxy); the probe is checked against the KEP-2523
// tables there instead of the harness's golden files.

var _ = Describe("kubectl-steadywatch against "+build.Current+" (watch cache on)", Label("conformance"), Ordered, func() {
	var t *extcluster.Target
	var cs kubernetes.Interface
	var kubeconfig string
	BeforeAll(func(ctx SpecContext) {
		t = suite.Start(ctx, harness.Options{Version: build.Current})
		cs = suite.Clientset(t.RESTConfig())
		kubeconfig = t.KubeconfigPath()
	})

	It("probe -o json: the list and watch cells are as specified (golden cells on the harness) and it deletes its scratch namespace", func(ctx SpecContext) {
		if !t.External() {
			p := probeGolden(ctx, kubeconfig, cs, "probe-"+build.Current+"-watchcache")
			Expect(p.Summary["differs"]).To(Equal(0))
			Expect(p.Detected["resourceVersionMatch"]).To(Equal("honoured"))
			Expect(p.Detected["endBookmark"]).To(Equal("ok"))
			for id, c := range proxyCells(p) {
				Expect(c.Result).To(Equal("ok"), "%s: %+v", id, c)
				Expect(c.ExpectedInitialEvents).NotTo(BeNil(), "%s: the count of initial events is known (limit=1 list)", id)
			}
			return
		}
		// Any server >= v1.19 honours resourceVersionMatch, so every cell of
		// the list table (API Concepts, "Semantics for get and list") and the watch table must be as
		// specified. Streaming lists, bookmarks and far-future answers
		// differ by version and configuration: reported, not asserted.
		p := runProbeJSON(ctx, kubeconfig, cs, "external "+t.Version())
		Expect(p.Server.GitVersion).To(Equal(t.Version()))
		Expect(p.Detected["resourceVersionMatch"]).To(Equal("honoured"), "external server %s", t.Version())
		tables := 0
		for _, c := range p.Cells {
			if strings.HasPrefix(c.ID, "list/") || strings.HasPrefix(c.ID, "watch/") {
				tables++
				Expect(c.Verdict).To(Equal("as-specified"), "cell %s on %s: %+v", c.ID, t.Version(), c)
			} else {
				AddReportEntry("probe cell "+c.ID+" on "+t.Version(), c.Observed+" ("+c.Verdict+")")
			}
		}
		Expect(tables).To(Equal(24), "21 list cells and 3 watch cells")
		AddReportEntry("probe detected on "+t.Version(), fmt.Sprint(p.Detected))
	})

	It("probe prints a readable table by default", func(ctx SpecContext) {
		r := runPlugin(ctx, probeBound, kubeconfig, "probe")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(ContainSubstring("CELL"))
		Expect(r.stdout).To(MatchRegexp(`list/match=Exact/paging=none/rv=N\s+Exact \[NotOlderThan\]\s+Exact\s+200\s+exact \(requested\)\s+as-specified`))
		if t.External() {
			// Which of the version-dependent cells are as specified depends on the server.
			Expect(r.stdout).To(MatchRegexp(`33 cells: \d+ as specified`))
		} else {
			Expect(r.stdout).To(ContainSubstring("33 cells: 33 as specified"))
			Expect(r.stdout).To(MatchRegexp(`proxy/bookmarks-filtered: OK\n\s+evidence: a BOOKMARK arrived after \d+ of \d+ expected initial event\(s\)`))
		}
	})

	It("list prints the served RV and no fallback for an Exact list the server honours", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, cs, "list")
		rv := createCMs(ctx, cs, ns, 3)
		r := runPlugin(ctx, time.Minute, kubeconfig, "list", "-n", ns, "-l", e2eSelector, "--match", "Exact", "--rv", rv, "-o", "json")
		Expect(r.code).To(Equal(0), r.stderr)
		l := parseList(r.stdout)
		Expect(l.ServedResourceVersion).To(Equal(rv))
		Expect(l.Items).To(Equal(1), "only cm-0 existed at its own creation RV")
		Expect(l.Fallbacks).To(BeEmpty())
		Expect(l.Requests).To(HaveLen(1))
		Expect(l.Requests[0].Query).To(Equal("labelSelector=" + e2eSelector + "&resourceVersion=" + rv + "&resourceVersionMatch=Exact"))

		r = runPlugin(ctx, time.Minute, kubeconfig, "list", "-n", ns, "-l", e2eSelector, "--resource", "cm", "--limit", "2")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`items:\s+3 in 2 page\(s\)`))
	})

	It("detection of resourceVersionMatch flips when a proxy starts and stops stripping it", Label("needs-faults"), func(ctx SpecContext) {
		c := t.RequireFaults() // a StripParams proxy
		ns := suite.NewNamespace(ctx, cs, "flip")
		rv := createCMs(ctx, cs, ns, 3)
		p, pcfg, err := c.NewProxy(ctx)
		Expect(err).NotTo(HaveOccurred())
		pk := suite.WriteKubeconfig(pcfg, "c", "u")
		list := func() listJSON {
			r := runPlugin(ctx, time.Minute, pk, "list", "-n", ns, "--match", "Exact", "--rv", rv, "-o", "json")
			Expect(r.code).To(Equal(0), r.stderr)
			return parseList(r.stdout)
		}
		honoured := func(l listJSON) {
			Expect(l.Capabilities).To(ContainSubstring("resourceVersionMatch=yes"))
			Expect(l.Fallbacks).To(BeEmpty())
			Expect(l.ServedResourceVersion).To(Equal(rv))
		}
		honoured(list())

		p.StripParams("resourceVersionMatch")
		l := list()
		Expect(l.Capabilities).To(ContainSubstring("resourceVersionMatch=no(observed)"))
		Expect(l.Fallbacks).NotTo(BeEmpty())
		Expect(l.Fallbacks[0].Reason).To(Equal("rule2-exact-mismatch-retry-with-limit"))
		Expect(l.ServedResourceVersion).To(Equal(rv), "rule 2: retried with a limit, served at exactly rv")
		Expect(l.Items).To(Equal(1))

		r := runPlugin(ctx, probeBound, pk, "probe", "-o", "json")
		Expect(r.code).To(Equal(0), r.stderr)
		pr := parseProbe(r.stdout)
		Expect(pr.Detected["resourceVersionMatch"]).To(Equal("ignored"))
		for _, cell := range pr.Cells {
			if cell.ID == "list/match=Exact/paging=none/rv=N" {
				Expect(cell.Observed).To(Equal("NotOlderThan"))
				Expect(cell.Verdict).To(Equal("match-ignored"))
			}
		}

		p.StripParams()
		honoured(list())
	})

	// Each fault of the proxy chain, reproduced by the harness's fault proxy
	// in front of the real server: the probe's matching cell reports it,
	// with the public report and what steadywatch does, and the others do not
	// claim a fault that is not there.
	DescribeTable("probe's proxy-chain cells report the fault of a proxy between the operator and the apiserver", Label("needs-faults"),
		func(ctx SpecContext, f faults.StreamFaults, faulty, report, detected string, others map[string]string) {
			c := t.RequireFaults()
			p, pcfg, err := c.NewProxy(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			p.SetStreamFaults(f)
			pr := runProbeJSON(ctx, suite.WriteKubeconfig(pcfg, "c", "u"), cs, "behind "+detected)
			Expect(pr.Detected["endBookmark"]).To(Equal(detected))
			cells := proxyCells(pr)
			Expect(cells).To(HaveLen(3))
			got := cells[faulty]
			fmt.Fprintf(GinkgoWriter, "%s behind the proxy: %+v\n", faulty, got)
			Expect(got.Result).To(Equal("fault"), "%+v", got)
			Expect(got.Report).To(Equal(report))
			Expect(got.Steadywatch).NotTo(BeEmpty())
			Expect(got.Evidence).NotTo(BeEmpty())
			Expect(got.ExpectedInitialEvents).NotTo(BeNil(), "counted from the limit=1 list")
			Expect(got.DecisionSeconds).NotTo(BeNil())
			// Known count: the guard decides 1.5s after the last initial event,
			// not after the 3s quiet bound (a cut is decided at once).
			Expect(*got.DecisionSeconds).To(BeNumerically("<", 2.0), "%+v", got)
			for id, want := range others {
				Expect(cells[id].Result).To(Equal(want), "%s: %+v", id, cells[id])
			}
			AddReportEntry("probe "+faulty+" behind the proxy", got.Evidence)

			// The table output names the fault, the report and steadywatch's answer.
			r := runPlugin(ctx, probeBound, suite.WriteKubeconfig(pcfg, "c", "u"), "probe")
			Expect(r.code).To(Equal(0), r.stderr)
			Expect(r.stdout).To(ContainSubstring(faulty + ": FAULT"))
			Expect(r.stdout).To(ContainSubstring("reported: " + report))
			Expect(r.stdout).To(ContainSubstring("endBookmark=" + detected))
			fmt.Fprintf(GinkgoWriter, "probe table behind the proxy:\n%s\n", r.stdout)
		},
		Entry("bookmarks filtered", faults.StreamFaults{DropBookmarks: true}, cellBookmarksFiltered, "gravitational/teleport#64188", "bookmarks-filtered",
			map[string]string{cellAnnotationMissing: "inconclusive", cellCutBeforeEnd: "ok"}),
		Entry("initial-events-end annotation stripped", faults.StreamFaults{StripInitialEventsEnd: true}, cellAnnotationMissing, "antrea-io/antrea#8123", "annotation-missing",
			map[string]string{cellBookmarksFiltered: "ok", cellCutBeforeEnd: "ok"}),
		Entry("stream cut before the end bookmark", faults.StreamFaults{CutBeforeInitialEventsEnd: true}, cellCutBeforeEnd, "kubernetes/kubernetes#140890", "cut-before-end",
			map[string]string{cellBookmarksFiltered: "inconclusive", cellAnnotationMissing: "inconclusive"}),
	)

	It("sync prints one synced line, then one line per event, and exits 0 at --timeout", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, cs, "sync")
		createCMs(ctx, cs, ns, 5)
		out, _, wait := runSync(ctx, kubeconfig, "--resource", "configmaps", "-n", ns, "-l", e2eSelector, "--timeout", "20s")
		s := parseSynced(out.waitFor(`"synced":true`, 20*time.Second))
		Expect(s.Items).To(Equal(5))
		Expect(s.ResourceVersion).NotTo(BeEmpty())
		AddReportEntry("sync seconds "+t.Version(), s.Seconds)
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "late", Labels: map[string]string{e2eLabelKey: e2eLabelValue}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		line := out.waitFor(`"name":"late"`, 10*time.Second)
		Expect(line).To(ContainSubstring(`"type":"ADDED"`))
		Expect(wait()).To(Equal(0))
	})

	It("a missing right is a clear error naming it, before anything is created", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, cs, "rights")
		_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "probe-partial"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "list", "watch"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "probe-partial"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "probe-partial"},
			Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "limited"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		r := runPlugin(ctx, time.Minute, kubeconfig, "probe", "--as", "limited", "-n", ns)
		Expect(r.code).To(Equal(1))
		Expect(strings.Split(strings.TrimSpace(r.stderr), "\n")).To(HaveLen(1))
		Expect(r.stderr).To(ContainSubstring("missing right: deletecollection configmaps in namespace " + ns))
		cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ownConfigMaps(cms.Items)).To(BeEmpty(), "nothing was created")

		r = runPlugin(ctx, time.Minute, kubeconfig, "probe", "--as", "limited")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("missing right: create namespaces"))
	})

	It("deletes its scratch namespace when interrupted (SIGINT)", func(ctx SpecContext) {
		cmd := pluginCmd(ctx, kubeconfig, "probe")
		ser, sew := io.Pipe()
		cmd.Stderr = sew
		Expect(cmd.Start()).To(Succeed())
		stderr := newLineWaiter(ser)
		line := stderr.waitFor("probe: created namespace ", 30*time.Second)
		ns := strings.TrimSpace(strings.TrimPrefix(line, "probe: created namespace "))
		Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
		done := make(chan error, 1)
		go func() { err := cmd.Wait(); _ = sew.Close(); done <- err }()
		Eventually(done).WithTimeout(40 * time.Second).Should(Receive())
		Expect(cmd.ProcessState.ExitCode()).To(Equal(1))
		stderr.waitFor("probe: deleted namespace "+ns, 5*time.Second)
		stderr.waitFor("kubectl-steadywatch: error: interrupted", 5*time.Second)
		expectCleanedUp(ctx, cs, ns)
	})

	It("bad flags exit 2 and an unreachable server exits 1, each with one clear line", func(ctx SpecContext) {
		for _, args := range [][]string{
			{"list", "--bogus"},
			{"list", "--match", "Sometimes"},
			{"list", "--match", "Exact"},
			{"list", "--match", "MostRecent", "--rv", "5"},
			{"probe", "-o", "yaml"},
			{"sync", "--timeout", "soon"},
			{"frobnicate"},
		} {
			r := runPlugin(ctx, 30*time.Second, kubeconfig, args...)
			Expect(r.code).To(Equal(2), "%v: %s", args, r.stderr)
			Expect(strings.Split(strings.TrimSpace(r.stderr), "\n")).To(HaveLen(1), "%v", args)
			Expect(r.stderr).To(HavePrefix("kubectl-steadywatch: error: "))
		}
		r := runPlugin(ctx, 30*time.Second, kubeconfig, "list", "--resource", "nosuchthings")
		Expect(r.code).To(Equal(2), r.stderr)
		Expect(r.stderr).To(ContainSubstring(`unknown resource "nosuchthings"`))

		dead := rest.CopyConfig(t.RESTConfig())
		dead.Host = "https://127.0.0.1:1"
		for _, args := range [][]string{{"list"}, {"probe"}, {"sync", "--timeout", "10s"}} {
			r := runPlugin(ctx, 30*time.Second, suite.WriteKubeconfig(dead, "c", "u"), args...)
			Expect(r.code).To(Equal(1), "%v", args)
			Expect(strings.Split(strings.TrimSpace(r.stderr), "\n")).To(HaveLen(1), "%v", args)
			Expect(r.stderr).To(ContainSubstring("apiserver unreachable: GET https://127.0.0.1:1/version"))
			if tok := t.RESTConfig().BearerToken; tok != "" { // an external kubeconfig may use client certificates
				Expect(r.stderr).NotTo(ContainSubstring(tok))
			}
		}
	})
})

// ---- current server, the shardSelector cell ----

// KEP-5866's shardSelector is applied only with the ShardedListAndWatch gate
// on; otherwise the server ignores it silently. The probe's cell tells the
// two apart from one list's ListMeta.shardInfo.
var _ = Describe("kubectl-steadywatch probe: the shardSelector cell on "+build.Current, Label("conformance", "shard"), func() {
	DescribeTable("reports whether the server applies a shardSelector",
		func(ctx SpecContext, gates []string, want, observed string) {
			c := suite.StartHarness(ctx, harness.Options{Version: build.Current, ExtraArgs: gates},
				"needs the harness's "+build.Current+" server with its feature gates set")
			p := runProbeJSON(ctx, c.KubeconfigPath(), suite.Clientset(c.RESTConfig()), "shardSelector "+want)
			Expect(p.Detected["shardSelector"]).To(Equal(want))
			var found bool
			for _, cell := range p.Cells {
				if cell.ID == "shard/selector-honoured" {
					found = true
					Expect(cell.Result).To(Equal(want), "%+v", cell)
					Expect(cell.Observed).To(Equal(observed), "%+v", cell)
					Expect(cell.Verdict).To(Equal("as-specified"), "%+v", cell)
					Expect(cell.HTTPStatus).To(Equal(200))
				}
			}
			Expect(found).To(BeTrue(), "the probe has a shard/selector-honoured cell")
		},
		Entry("gate off: ignored", []string(nil), "no", "ShardSelectorIgnored"),
		Entry("ShardedListAndWatch on: shardInfo echoed", []string{"--feature-gates=ShardedListAndWatch=true"}, "yes", "ShardInfoEchoed"),
	)
})

// ---- current server, watch cache off ----

var _ = Describe("kubectl-steadywatch against "+build.Current+" (watch cache off)", Label("conformance", "needs-faults"), Ordered, func() {
	It("probe -o json matches the golden cells", func(ctx SpecContext) {
		c := suite.StartHarness(ctx, harness.Options{Version: build.Current, DisableWatchCache: true},
			"needs the harness's "+build.Current+" server with the watch cache off (--watch-cache=false)")
		probeGolden(ctx, c.KubeconfigPath(), suite.Clientset(c.RESTConfig()), "probe-"+build.Current+"-nowatchcache")
	})
})

// ---- legacy server ----

var _ = Describe("kubectl-steadywatch against "+build.Legacy, Label("legacy", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	var cs kubernetes.Interface
	BeforeAll(func(ctx SpecContext) {
		suite.SkipIfExternal("needs the harness's " + build.Legacy + " server")
		skipUnlessLegacyBuilt()
		c = suite.StartHarness(ctx, harness.Options{Version: build.Legacy}, "needs the harness's "+build.Legacy+" server")
		cs = suite.Clientset(c.RESTConfig())
	})

	It("probe -o json matches the golden cells", func(ctx SpecContext) {
		p := probeGolden(ctx, c.KubeconfigPath(), cs, "probe-"+build.Legacy)
		Expect(p.Detected["resourceVersionMatch"]).To(Equal("ignored"))
		Expect(p.Detected["streamingList"]).To(Equal("no"))
		// v1.18 cannot stream lists: the proxy-chain cells are not
		// applicable, not failures.
		Expect(p.Detected["endBookmark"]).To(Equal("not-applicable"))
		cells := proxyCells(p)
		Expect(cells).To(HaveLen(3))
		for id, c := range cells {
			Expect(c.Result).To(Equal("not-applicable"), "%s: %+v", id, c)
			Expect(c.Evidence).To(ContainSubstring("cannot stream lists"))
		}
		Expect(p.Summary["notApplicable"]).To(Equal(3))
	})

	It("sync syncs, where a stock client-go informer does not", func(ctx SpecContext) {
		ns := suite.NewNamespace(ctx, cs, "legacy-sync")
		createCMs(ctx, cs, ns, 10)
		out, _, wait := runSync(ctx, c.KubeconfigPath(), "--resource", "cm", "-n", ns, "--timeout", "40s")
		s := parseSynced(out.waitFor(`"synced":true`, 40*time.Second))
		Expect(s.Items).To(Equal(10))
		AddReportEntry("sync seconds "+build.Legacy, s.Seconds)
		fmt.Fprintf(GinkgoWriter, "TIMING plugin sync on %s: %.3fs\n", build.Legacy, s.Seconds)
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		out.waitFor(`"name":"late"`, 10*time.Second)

		// Stock client-go (v0.37, WatchListClient on by default) asks for a
		// streaming list; v1.18 ignores sendInitialEvents and never sends the
		// initial-events-end bookmark, so the informer never syncs.
		dyn, err := dynamic.NewForConfig(c.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
		inf := f.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Informer()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go inf.RunWithContext(sctx)
		Consistently(inf.HasSynced).WithTimeout(20*time.Second).WithPolling(200*time.Millisecond).Should(BeFalse(), "stock client-go informer on %s", build.Legacy)
		Expect(wait()).To(Equal(0))
	})
})

// ---- HA pair behind the harness's balancer ----

var _ = Describe("kubectl-steadywatch against an HA pair of "+build.Current, Label("ha", "needs-faults"), Ordered, func() {
	It("sync syncs through the balancer and streams events", func(ctx SpecContext) {
		c := suite.StartHarness(ctx, harness.Options{Version: build.Current, HA: true},
			"needs the harness's HA pair of "+build.Current+" behind its balancer")
		cs := suite.Clientset(c.RESTConfig())
		ns := suite.NewNamespace(ctx, cs, "ha-sync")
		createCMs(ctx, cs, ns, 20)
		c.Balancer().ResetRequests()
		out, _, wait := runSync(ctx, c.KubeconfigPath(), "-n", ns, "--timeout", "20s")
		s := parseSynced(out.waitFor(`"synced":true`, 20*time.Second))
		Expect(s.Items).To(Equal(20))
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		out.waitFor(`"name":"late"`, 15*time.Second)
		Expect(wait()).To(Equal(0))
		backends := map[int]bool{}
		for _, r := range c.Balancer().Requests() {
			if r.Backend >= 0 {
				backends[r.Backend] = true
			}
		}
		Expect(backends).To(HaveLen(2), "the balancer alternated the plugin's requests over both apiservers")
	})
})
