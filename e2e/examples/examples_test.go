package examples_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

// bin holds the example binaries built once for the suite.
var bin string

var _ = SynchronizedBeforeSuite(func() []byte {
	dir, err := os.MkdirTemp("", "steadywatch-examples-")
	Expect(err).NotTo(HaveOccurred())
	src, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	for _, b := range []struct{ out, pkg string }{
		{dir + string(filepath.Separator), "./informer ./operator ./listwatch ./crd ./readyourwrites/crloop"},
		// The stock programs, as informer-stock, operator-stock and listwatch-stock.
		{filepath.Join(dir, "informer-stock"), "./stock/informer"},
		{filepath.Join(dir, "operator-stock"), "./stock/operator"},
		{filepath.Join(dir, "listwatch-stock"), "./stock/listwatch"},
	} {
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", b.out}, strings.Fields(b.pkg)...)...)
		cmd.Dir = src
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build %s in %s:\n%s", b.pkg, src, out)
	}
	fmt.Fprintf(GinkgoWriter, "built examples in %v\n", time.Since(start).Round(time.Millisecond))
	return []byte(dir)
}, func(dir []byte) {
	bin = string(dir)
	DeferCleanup(func() { _ = os.RemoveAll(bin) })
})

// ---- helpers ----

// cluster is what the specs need of a cluster: a harness cluster or an
// extcluster.Target (which may be an external cluster).
type cluster interface {
	RESTConfig() *rest.Config
	KubeconfigPath() string
}

// lockedBuffer collects a subprocess's output for concurrent reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// program is one example running as a subprocess.
type program struct {
	name   string
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{}
	err    error // valid after done
}

// run starts bin/name with args and KUBECONFIG set; it is interrupted (then
// killed) at cleanup if still running.
func run(c cluster, name string, args ...string) *program {
	p := &program{name: name, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(bin, name), args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+c.KubeconfigPath())
	p.cmd.Stdout = io.MultiWriter(p.stdout, GinkgoWriter)
	p.cmd.Stderr = p.stderr
	Expect(p.cmd.Start()).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "started %s %s (pid %d)\n", name, strings.Join(args, " "), p.cmd.Process.Pid)
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	DeferCleanup(func() {
		select {
		case <-p.done:
		default:
			p.interrupt(15 * time.Second)
		}
	})
	return p
}

// waitOutput waits until stdout matches re and returns the submatches.
func (p *program) waitOutput(re string, d time.Duration) []string {
	rx := regexp.MustCompile(re)
	var m []string
	Eventually(func() bool {
		m = rx.FindStringSubmatch(p.stdout.String())
		return m != nil
	}).WithTimeout(d).WithPolling(50*time.Millisecond).Should(BeTrue(),
		"%s: no output matching %q within %v\nstdout:\n%s\nstderr (tail):\n%s", p.name, re, d, p.stdout, tail(p.stderr.String(), 2000))
	return m
}

// interrupt sends SIGINT and waits up to d for the exit (then kills); it
// returns the exit code.
func (p *program) interrupt(d time.Duration) int {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	return p.exitWithin(d, " of SIGINT")
}

// wait waits up to d for the program to exit by itself and returns its exit code.
func (p *program) wait(d time.Duration) int { return p.exitWithin(d, "") }

// exitWithin waits up to d for the exit (then kills the program and fails
// the spec, saying "did not exit within d" and after) and returns the exit
// code.
func (p *program) exitWithin(d time.Duration, after string) int {
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		Fail(fmt.Sprintf("%s did not exit within %v%s", p.name, d, after))
	}
	return p.exitCode()
}

func (p *program) exitCode() int {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	Expect(p.err).NotTo(HaveOccurred())
	return 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func scrape(url string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// statusData reads the operator's status ConfigMap ("" map if absent).
func statusData(ctx context.Context, cs kubernetes.Interface, ns string) map[string]string {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "label-index", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

// ---- specs ----

// informerSpec runs the informer program name ("informer" or
// "informer-stock") against c with a namespace and a label selector (the
// factory's WithNamespace and WithTweakListOptions) and checks sync, events
// (a ConfigMap outside the selector never appears), metrics and a clean exit.
// wantMetric must match the /metrics page; "" asserts that it has no
// steadywatch_ metric (the stock program).
func informerSpec(ctx context.Context, c cluster, name, wantMetric string) {
	cs := suite.Clientset(c.RESTConfig())
	ns := suite.NewNamespace(ctx, cs, "informer")
	suite.CreateConfigMaps(ctx, cs, ns, 3, func(_ int, cm *corev1.ConfigMap) { cm.Labels = map[string]string{"team": "blue"} })
	suite.CreateConfigMap(ctx, cs, ns, "red", map[string]string{"team": "red"})
	p := run(c, name, "-namespace", ns, "-selector", "team=blue", "-metrics-addr", "127.0.0.1:0", "-sync-timeout", "45s")
	metricsURL := p.waitOutput(`metrics: (http://127\.0\.0\.1:\d+/metrics)`, 10*time.Second)[1]
	p.waitOutput(`synced 3 ConfigMaps in `, 30*time.Second)
	for i := 0; i < 3; i++ {
		Expect(p.stdout.String()).To(ContainSubstring(fmt.Sprintf("event ADD    %s/cm-%d\n", ns, i)))
	}
	suite.CreateConfigMap(ctx, cs, ns, "red-after-sync", map[string]string{"team": "red"})
	suite.CreateConfigMap(ctx, cs, ns, "after-sync", map[string]string{"team": "blue"})
	p.waitOutput(`event ADD    `+regexp.QuoteMeta(ns)+`/after-sync\n`, 15*time.Second)
	// Events arrive in resourceVersion order: red-after-sync, written first,
	// would have been printed by now.
	Expect(p.stdout.String()).NotTo(ContainSubstring("/red"), "a ConfigMap outside the selector reached the informer")

	m := scrape(metricsURL)
	if wantMetric == "" {
		Expect(m).NotTo(ContainSubstring("steadywatch_"), "metrics:\n%s", m)
	} else {
		Expect(m).To(MatchRegexp(wantMetric), "metrics:\n%s", m)
	}

	Expect(p.interrupt(15*time.Second)).To(Equal(0), "stderr:\n%s", p.stderr)
	Expect(p.stdout.String()).To(HaveSuffix("stopping\n"))
}

// listwatchSpec runs the listwatch program name ("listwatch" or
// "listwatch-stock") against c and checks sync, an event after sync and a
// clean exit.
func listwatchSpec(ctx context.Context, c cluster, name string) {
	cs := suite.Clientset(c.RESTConfig())
	ns := suite.NewNamespace(ctx, cs, "listwatch")
	suite.CreateConfigMaps(ctx, cs, ns, 2, nil)
	p := run(c, name, "-namespace", ns, "-sync-timeout", "45s")
	p.waitOutput(`synced 2 ConfigMaps in `, 30*time.Second)
	suite.CreateConfigMap(ctx, cs, ns, "after-sync", nil)
	p.waitOutput(`event ADD    `+regexp.QuoteMeta(ns)+`/after-sync\n`, 15*time.Second)
	Expect(p.interrupt(15*time.Second)).To(Equal(0), "stderr:\n%s", p.stderr)
	Expect(p.stdout.String()).To(HaveSuffix("stopping\n"))
}

// operatorSpec runs the operator program name ("operator" or
// "operator-stock") against c and checks that the status
// ConfigMap follows labels being added, changed and removed.
func operatorSpec(ctx context.Context, c cluster, name string) {
	cs := suite.Clientset(c.RESTConfig())
	ns := suite.NewNamespace(ctx, cs, "operator")
	suite.CreateConfigMap(ctx, cs, ns, "before-start", map[string]string{"team": "blue"})
	p := run(c, name, "-namespace", ns, "-sync-timeout", "45s")
	p.waitOutput(`caches synced in `, 45*time.Second)
	poll := func(want map[string]string) {
		Eventually(func() map[string]string { return statusData(ctx, cs, ns) }).
			WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Equal(want), "stdout:\n%s", p.stdout)
	}
	poll(map[string]string{"before-start": "blue"})

	suite.CreateConfigMap(ctx, cs, ns, "a", map[string]string{"team": "red"})
	suite.CreateConfigMap(ctx, cs, ns, "unlabelled", nil)
	poll(map[string]string{"before-start": "blue", "a": "red"})

	a, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	a.Labels["team"] = "green"
	_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, a, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(cs.CoreV1().ConfigMaps(ns).Delete(ctx, "before-start", metav1.DeleteOptions{})).To(Succeed())
	poll(map[string]string{"a": "green"})
	p.waitOutput(`reconciled `+regexp.QuoteMeta(ns)+`/label-index: 1 entries \(updated\) \[a=green\]`, 10*time.Second)

	Expect(p.interrupt(45*time.Second)).To(Equal(0), "stderr:\n%s", tail(p.stderr.String(), 2000))
	Expect(p.stdout.String()).To(HaveSuffix("stopped\n"))
}

// The CRD examples/crd installs with -setup (its group, resource and name).
const (
	crdGroup    = "gateway.steadywatch.example"
	crdResource = "backendtlspolicies"
	crdName     = crdResource + "." + crdGroup
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func policyGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crdGroup, Version: version, Resource: crdResource}
}

// deleteCRDAtCleanupIfNew registers the deletion of examples/crd's CRD at
// cleanup (waiting, bounded, until it is gone) unless it already exists: -setup
// creates it if absent and never removes it, and a CRD that was there before
// the spec is left as found.
func deleteCRDAtCleanupIfNew(ctx context.Context, dyn dynamic.Interface) {
	crds := dyn.Resource(crdGVR)
	_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
	if err == nil {
		fmt.Fprintf(GinkgoWriter, "CRD %s exists before the spec: left as found\n", crdName)
		return
	}
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get CRD %s: %v", crdName, err)
	DeferCleanup(func(ctx SpecContext) {
		err := crds.Delete(ctx, crdName, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred(), "deleting CRD %s", crdName)
		}
		Eventually(func(ctx context.Context) bool {
			_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "CRD %s still there", crdName)
	}, NodeTimeout(90*time.Second))
}

// storeLines returns the lines examples/crd printed under "store (listed and
// watched through <version>):", without their indentation.
func storeLines(out, version string) []string {
	header := "store (listed and watched through " + version + "):\n"
	i := strings.Index(out, header)
	Expect(i).To(BeNumerically(">=", 0), "no %q in:\n%s", header, out)
	var lines []string
	for _, l := range strings.Split(out[i+len(header):], "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	return lines
}

// crdSpec runs examples/crd against c: -setup installs the CRD and writes one
// object through v1alpha1 (spec.tls), one through v1alpha2 (spec.validation)
// and one with a field no shape knows. Read through either version, the store
// holds the first two in the v1alpha2 shape and leaves the third out with its
// reason; in -watch mode an object written through v1alpha1 arrives
// canonicalized and one from the future is left out. The CRD is deleted at
// cleanup if the spec created it, the namespace always.
//
// skippedIn is where the skipped object is reported before the store is
// printed: the example's lister is not told the server's capabilities, so it
// always tries a streaming list first; a server that streams delivers the
// object as an ADDED event of that stream (["ADDED"]), one that ignores
// sendInitialEvents sends ADDED events but no end bookmark, so the stream is
// abandoned after the lister's InitialEventsTimeout and a LIST fills the store
// (["ADDED", "LIST"]). nil (an external cluster) accepts either.
func crdSpec(ctx context.Context, c cluster, skippedIn []string) {
	cs := suite.Clientset(c.RESTConfig())
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	Expect(err).NotTo(HaveOccurred())
	deleteCRDAtCleanupIfNew(ctx, dyn)
	// -setup creates the namespace only if absent: creating it here (deleted at
	// cleanup) keeps the example's fixed default name off shared clusters.
	ns := suite.NewNamespace(ctx, cs, "crd")

	// checkSkipped asserts the "left out" lines for from-the-future: one per
	// kind in skippedIn (and none for the other kind); nil accepts either kind.
	checkSkipped := func(out string) {
		GinkgoHelper()
		for _, kind := range []string{"ADDED", "LIST"} {
			m := MatchRegexp(`(?m)^left out  ` + kind + `\s+` + regexp.QuoteMeta(ns) + `/from-the-future: unrecognized \(skip\)$`)
			switch {
			case skippedIn == nil:
				Expect(out).To(MatchRegexp(`(?m)^left out  (ADDED|LIST)\s+` + regexp.QuoteMeta(ns) + `/from-the-future: unrecognized \(skip\)$`))
			case slices.Contains(skippedIn, kind):
				Expect(out).To(m, "stdout:\n%s", out)
			default:
				Expect(out).NotTo(m, "stdout:\n%s", out)
			}
		}
	}
	want := func(version string) []string {
		line := func(name, host string) string {
			return fmt.Sprintf("%s/%s apiVersion=%s/%s shape=spec.validation hostname=%q", ns, name, crdGroup, version, host)
		}
		return []string{line("written-as-v1alpha1", "old.example"), line("written-as-v1alpha2", "new.example")}
	}

	setup := run(c, "crd", "-setup", "-namespace", ns, "-version", "v1alpha1")
	Expect(setup.wait(90*time.Second)).To(Equal(0), "stdout:\n%s\nstderr:\n%s", setup.stdout, tail(setup.stderr.String(), 2000))
	out := setup.stdout.String()
	Expect(storeLines(out, "v1alpha1")).To(Equal(want("v1alpha1")), "stdout:\n%s", out)
	checkSkipped(out)
	Expect(out).NotTo(ContainSubstring("NOT canonical"))

	// The canonical shape is the decorator's work, not the server's: the API
	// server still serves the object written through v1alpha1 with spec.tls
	// (conversion strategy None only rewrites apiVersion).
	raw, err := dyn.Resource(policyGVR("v1alpha2")).Namespace(ns).Get(ctx, "written-as-v1alpha1", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, hasTLS, _ := unstructured.NestedFieldNoCopy(raw.Object, "spec", "tls")
	_, hasValidation, _ := unstructured.NestedFieldNoCopy(raw.Object, "spec", "validation")
	Expect([]bool{hasTLS, hasValidation}).To(Equal([]bool{true, false}), "served as stored: %v", raw.Object["spec"])
	_, err = dyn.Resource(policyGVR("v1alpha2")).Namespace(ns).Get(ctx, "from-the-future", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred(), "the skipped object exists on the server")

	// Read through the other version, without -setup (no writes): same shape.
	read := run(c, "crd", "-namespace", ns, "-version", "v1alpha2")
	Expect(read.wait(90*time.Second)).To(Equal(0), "stdout:\n%s\nstderr:\n%s", read.stdout, tail(read.stderr.String(), 2000))
	Expect(storeLines(read.stdout.String(), "v1alpha2")).To(Equal(want("v1alpha2")), "stdout:\n%s", read.stdout)
	checkSkipped(read.stdout.String())

	// -watch: objects written while it watches go through the same decorator.
	w := run(c, "crd", "-namespace", ns, "-version", "v1alpha2", "-watch", "2m")
	w.waitOutput(`synced; watching for 2m0s`, 60*time.Second)
	create := func(version, name string, spec map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crdGroup + "/" + version, "kind": "BackendTLSPolicy",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		_, err := dyn.Resource(policyGVR(version)).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	create("v1alpha1", "watched-v1alpha1", map[string]any{"tls": map[string]any{"hostname": "watched.example"}})
	w.waitOutput(`(?m)^event     ADD     `+regexp.QuoteMeta(ns)+`/watched-v1alpha1 apiVersion=`+regexp.QuoteMeta(crdGroup)+`/v1alpha2 shape=spec\.validation hostname="watched\.example"$`, 30*time.Second)
	create("v1alpha2", "watched-future", map[string]any{"validation": map[string]any{"hostname": "f.example"}, "sessionPersistence": map[string]any{"mode": "cookie"}})
	w.waitOutput(`(?m)^left out  ADDED\s+`+regexp.QuoteMeta(ns)+`/watched-future: unrecognized \(skip\)$`, 30*time.Second)
	Expect(w.interrupt(30*time.Second)).To(Equal(0), "stderr:\n%s", tail(w.stderr.String(), 2000))
	// The store is printed sorted: watched-... before written-as-....
	Expect(storeLines(w.stdout.String(), "v1alpha2")).To(Equal(append([]string{
		fmt.Sprintf("%s/watched-v1alpha1 apiVersion=%s/v1alpha2 shape=spec.validation hostname=%q", ns, crdGroup, "watched.example"),
	}, want("v1alpha2")...)), "stdout:\n%s", w.stdout)
	Expect(w.stdout.String()).NotTo(ContainSubstring("NOT canonical"))
}

var _ = Describe("examples on the current kube-apiserver", Label("examples", "conformance"), Ordered, func() {
	var c *extcluster.Target
	BeforeAll(func(ctx SpecContext) { c = suite.Start(ctx, harness.Options{Version: build.Current}) })

	It("informer: syncs through the factory in its namespace and selector, prints events and exports steadywatch metrics", func(ctx SpecContext) {
		// The informer's watch delivered after-sync: the lister recorded its
		// resourceVersion advancing, under the resource's name.
		informerSpec(ctx, c, "informer", `steadywatch_resource_version_last_advance_timestamp_seconds\{name="v1/configmaps"\} [1-9]`)
	})

	It("informer-stock: the same program without steadywatch's line syncs too", func(ctx SpecContext) {
		informerSpec(ctx, c, "informer-stock", "")
	})

	It("operator: keeps the status ConfigMap in step with the labels", func(ctx SpecContext) {
		operatorSpec(ctx, c, "operator")
	})

	It("operator-stock: the same program without steadywatch's line does too", func(ctx SpecContext) {
		operatorSpec(ctx, c, "operator-stock")
	})

	It("listwatch: an informer over lister.Wrap(cache.NewListWatchFromClient(...)) syncs and follows events", func(ctx SpecContext) {
		listwatchSpec(ctx, c, "listwatch")
	})

	It("listwatch-stock: the same program without steadywatch's line does too", func(ctx SpecContext) {
		listwatchSpec(ctx, c, "listwatch-stock")
	})

	It("crd: every object of a CRD served in two versions in the canonical shape, the unrecognized one left out", func(ctx SpecContext) {
		skippedIn := []string{"ADDED"} // the harness's current server streams the initial list
		if c.External() {
			skippedIn = nil
		}
		crdSpec(ctx, c, skippedIn)
	}, SpecTimeout(6*time.Minute))
})

var _ = Describe("examples on the legacy kube-apiserver", Label("examples", "legacy", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: build.Legacy}, "needs the harness's "+build.Legacy+" server")
	})

	It("informer: syncs where the stock factory informer does not", func(ctx SpecContext) {
		// The informer's reflector lists (the server cannot stream): one
		// list call through steadywatch, counted.
		informerSpec(ctx, c, "informer", `steadywatch_lists_total\{name="v1/configmaps",outcome="ok",semantic="[A-Za-z]+"\} [1-9]`)

		ns := suite.NewNamespace(ctx, suite.Clientset(c.RESTConfig()), "informer-stock")
		stock := run(c, "informer-stock", "-namespace", ns, "-metrics-addr", "127.0.0.1:0", "-sync-timeout", "15s")
		Expect(stock.wait(60 * time.Second)).To(Equal(1))
		Expect(stock.stderr.String()).To(ContainSubstring("not synced within 15s"))
	})

	It("operator: reconciles where stock controller-runtime informers never sync", func(ctx SpecContext) {
		operatorSpec(ctx, c, "operator")

		ns := suite.NewNamespace(ctx, suite.Clientset(c.RESTConfig()), "operator-stock")
		stock := run(c, "operator-stock", "-namespace", ns, "-sync-timeout", "15s")
		Expect(stock.wait(60 * time.Second)).To(Equal(1))
		Expect(stock.stderr.String()).To(ContainSubstring("caches not synced within 15s"))
		Expect(statusData(ctx, suite.Clientset(c.RESTConfig()), ns)).To(BeNil(), "the stock operator must not have reconciled")
	})

	It("listwatch: syncs where the same program without steadywatch's line does not", func(ctx SpecContext) {
		listwatchSpec(ctx, c, "listwatch")

		ns := suite.NewNamespace(ctx, suite.Clientset(c.RESTConfig()), "listwatch-stock")
		stock := run(c, "listwatch-stock", "-namespace", ns, "-sync-timeout", "15s")
		Expect(stock.wait(60 * time.Second)).To(Equal(1))
		Expect(stock.stderr.String()).To(ContainSubstring("not synced within 15s"))
	})

	It("crd: the same canonical store where the initial list cannot stream (the skipped object is left out of the LIST)", func(ctx SpecContext) {
		crdSpec(ctx, c, []string{"ADDED", "LIST"})
	}, SpecTimeout(6*time.Minute))
})
