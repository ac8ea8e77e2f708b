package harness_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
)

// TestHarness runs the harness's own suite against real kube-apiservers and
// a real (embedded) etcd.
//
// Every spec tests the harness itself (its apiservers, etcd, restarts,
// compaction, pause, balancer), so the whole suite is labelled harness and
// needs-faults, and on an external cluster (E2E_KUBECONFIG) it skips in
// BeforeSuite with one reason. Label legacy marks the v1.18.19 container,
// ha the HA pair.
func TestHarness(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "harness", Label("harness", "needs-faults"))
}

var _ = BeforeSuite(func() {
	if path := extcluster.ExternalKubeconfig(); path != "" {
		Skip("the harness suite tests the harness's own apiservers, etcd and fault controls; " +
			"there is nothing of it to run on an external cluster (" + extcluster.EnvKubeconfig + " is set)")
	}
})
