package plugin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/steadywatch/steadywatch/e2e/harness/build"
)

// skipUnlessLegacyBuilt skips a legacy container until package build has
// produced the v1.18.19 binary.
func skipUnlessLegacyBuilt() {
	bin := build.BinaryPath(build.CacheDir(), build.Legacy)
	if _, err := os.Stat(bin); err != nil {
		Skip(fmt.Sprintf("SKIPPED: %s is not built yet (run `make build-apiservers`): %v", bin, err))
	}
}

// rootCAConfigMap is the ConfigMap a real cluster's controller manager
// (root-ca-cert-publisher) adds to every namespace; the harness runs no
// controllers, an external cluster (kind) does.
const rootCAConfigMap = "kube-root-ca.crt"

// ownConfigMaps drops the ConfigMaps controllers add to every namespace, so
// "nothing was created" means nothing the plugin or the test created.
func ownConfigMaps(items []corev1.ConfigMap) []string {
	var out []string
	for _, cm := range items {
		if cm.Name != rootCAConfigMap {
			out = append(out, cm.Name)
		}
	}
	return out
}

// result is one plugin run.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// pluginCmd prepares a plugin run with its own HOME (discovery cache) and the
// given kubeconfig.
func pluginCmd(ctx context.Context, kubeconfig string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, pluginBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+GinkgoT().TempDir())
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runPlugin runs the plugin to completion (bounded by ctx and d).
func runPlugin(ctx context.Context, d time.Duration, kubeconfig string, args ...string) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cmd := pluginCmd(ctx, kubeconfig, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	begin := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(begin)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		Fail(fmt.Sprintf("running the plugin: %v", err))
	}
	fmt.Fprintf(GinkgoWriter, "$ kubectl-steadywatch %s -> exit %d in %s\nstderr: %s\n", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond), r.stderr)
	return r
}

// probeJSON is the part of the probe's schemaVersion 1 output the tests read.
type probeJSON struct {
	SchemaVersion    int    `json:"schemaVersion"`
	Namespace        string `json:"namespace"`
	CreatedNamespace bool   `json:"createdNamespace"`
	Server           struct {
		GitVersion string `json:"gitVersion"`
	} `json:"server"`
	Cells []struct {
		ID                     string   `json:"id"`
		Expected               string   `json:"expected"`
		ExpectedIfMatchIgnored string   `json:"expectedIfMatchIgnored"`
		Observed               string   `json:"observed"`
		Verdict                string   `json:"verdict"`
		HTTPStatus             int      `json:"httpStatus"`
		ErrorEventStatus       int      `json:"errorEventStatus"`
		Relation               string   `json:"relation"`
		RelativeTo             string   `json:"relativeTo"`
		Message                string   `json:"message"`
		Result                 string   `json:"result"`
		Evidence               string   `json:"evidence"`
		Report                 string   `json:"report"`
		Steadywatch            string   `json:"steadywatch"`
		ExpectedInitialEvents  *int     `json:"expectedInitialEvents"`
		DecisionSeconds        *float64 `json:"decisionSeconds"`
	} `json:"cells"`
	Detected map[string]string `json:"detected"`
	Summary  map[string]int    `json:"summary"`
}

// goldenCell is the stable part of a cell: no resourceVersions, timings or
// messages; the relation only where it is deterministic (to the requested RV
// or the continue token's, not to "the newest RV seen", which a lagging cache
// may change).
type goldenCell struct {
	ID                     string `json:"id"`
	Expected               string `json:"expected"`
	ExpectedIfMatchIgnored string `json:"expectedIfMatchIgnored,omitempty"`
	Observed               string `json:"observed"`
	Verdict                string `json:"verdict"`
	HTTPStatus             int    `json:"httpStatus"`
	ErrorEventStatus       int    `json:"errorEventStatus,omitempty"`
	Relation               string `json:"relation,omitempty"`
	Result                 string `json:"result,omitempty"`
}

type golden struct {
	SchemaVersion int               `json:"schemaVersion"`
	GitVersion    string            `json:"gitVersion"`
	Detected      map[string]string `json:"detected"`
	Cells         []goldenCell      `json:"cells"`
}

func parseProbe(stdout string) probeJSON {
	var p probeJSON
	Expect(json.Unmarshal([]byte(stdout), &p)).To(Succeed(), "probe -o json output:\n%s", stdout)
	Expect(p.SchemaVersion).To(Equal(1))
	return p
}

func goldenOf(p probeJSON) golden {
	g := golden{SchemaVersion: p.SchemaVersion, GitVersion: p.Server.GitVersion, Detected: p.Detected}
	for _, c := range p.Cells {
		gc := goldenCell{ID: c.ID, Expected: c.Expected, ExpectedIfMatchIgnored: c.ExpectedIfMatchIgnored, Observed: c.Observed,
			Verdict: c.Verdict, HTTPStatus: c.HTTPStatus, ErrorEventStatus: c.ErrorEventStatus, Result: c.Result}
		if c.RelativeTo == "requested" || c.RelativeTo == "continue-token" {
			gc.Relation = c.Relation
		}
		g.Cells = append(g.Cells, gc)
	}
	return g
}

// checkGolden compares the probe's semantic cells with testdata/<name>.json
// (UPDATE_GOLDEN=1 rewrites it).
func checkGolden(name string, p probeJSON) {
	got := goldenOf(p)
	path := filepath.Join("testdata", name+".json")
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		b, err := json.MarshalIndent(got, "", "  ")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(path, append(b, '\n'), 0o644)).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "golden %s rewritten\n", path)
		return
	}
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "golden file missing; run with UPDATE_GOLDEN=1 against the server to create it")
	var want golden
	Expect(json.Unmarshal(b, &want)).To(Succeed())
	Expect(got.SchemaVersion).To(Equal(want.SchemaVersion))
	Expect(got.GitVersion).To(Equal(want.GitVersion))
	Expect(got.Detected).To(Equal(want.Detected))
	Expect(got.Cells).To(HaveLen(len(want.Cells)))
	for i := range want.Cells {
		Expect(got.Cells[i]).To(Equal(want.Cells[i]), "cell %s (full cell: %+v)", want.Cells[i].ID, p.Cells[i])
	}
}

// proxyCells returns the probe's proxy-chain cells by id.
func proxyCells(p probeJSON) map[string]proxyCell {
	out := map[string]proxyCell{}
	for _, c := range p.Cells {
		if strings.HasPrefix(c.ID, "proxy/") {
			out[c.ID] = proxyCell{Result: c.Result, Observed: c.Observed, Evidence: c.Evidence, Report: c.Report, Steadywatch: c.Steadywatch,
				ExpectedInitialEvents: c.ExpectedInitialEvents, DecisionSeconds: c.DecisionSeconds}
		}
	}
	return out
}

type proxyCell struct {
	Result, Observed, Evidence, Report, Steadywatch string
	ExpectedInitialEvents                           *int
	DecisionSeconds                                 *float64
}

// The probe's proxy-chain cells.
const (
	cellBookmarksFiltered = "proxy/bookmarks-filtered"
	cellAnnotationMissing = "proxy/initial-events-end-missing"
	cellCutBeforeEnd      = "proxy/cut-before-end-bookmark"
)

// lineWaiter collects a stream's lines and lets a test wait for one.
type lineWaiter struct {
	mu    sync.Mutex
	lines []string
	cond  chan struct{}
}

func newLineWaiter(r io.Reader) *lineWaiter {
	w := &lineWaiter{cond: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			select {
			case w.cond <- struct{}{}:
			default:
			}
		}
	}()
	return w
}

func (w *lineWaiter) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// waitFor returns the first line containing s, polling until d.
func (w *lineWaiter) waitFor(s string, d time.Duration) string {
	var found string
	Eventually(func() bool {
		for _, l := range w.all() {
			if strings.Contains(l, s) {
				found = l
				return true
			}
		}
		return false
	}).WithTimeout(d).WithPolling(20*time.Millisecond).Should(BeTrue(), "a line containing %q; got %q", s, w.all())
	return found
}
