// Package plugin_test proves the kubectl-steadywatch plugin against real
// kube-apiservers started by the harness: it builds the plugin binary once and
// runs it as a subprocess, the way kubectl runs a plugin. The probe's JSON
// (semantic cells only) is checked against golden files per server
// (testdata/), sync is shown to sync on v1.18.19 (where stock client-go does
// not) and through an HA balancer, and resourceVersionMatch detection is shown
// to follow a proxy that starts and stops stripping the parameter.
//
// Labels: conformance (current server), legacy (v1.18.19), ha (HA pair),
// needs-faults (fault proxy, watch cache off, a legacy server or an HA pair).
// With E2E_KUBECONFIG set (e2e/internal/extcluster) the conformance specs
// without needs-faults run against that external cluster, the probe checked
// against the KEP-2523 list and watch tables instead of the golden files; the
// others skip there with the reason, before starting anything. Namespaces the
// specs create are deleted at cleanup; list and sync select the specs' own
// ConfigMaps by label, so what a cluster's controllers add does not count.
//
// Set UPDATE_GOLDEN=1 to rewrite the golden files from the servers' answers.
package plugin_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl-steadywatch e2e")
}

// pluginBin is the plugin binary built once for the suite.
var pluginBin string

var _ = BeforeSuite(func() {
	dir := GinkgoT().TempDir()
	pluginBin = filepath.Join(dir, "kubectl-steadywatch")
	src, err := filepath.Abs(filepath.Join("..", "..", "cmd", "kubectl-steadywatch"))
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	begin := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", pluginBin, ".")
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build of the plugin:\n%s", out)
	fmt.Fprintf(GinkgoWriter, "TIMING plugin build: %s\n", time.Since(begin).Round(time.Millisecond))
	_, err = os.Stat(pluginBin)
	Expect(err).NotTo(HaveOccurred())
})
