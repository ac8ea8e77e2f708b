// Package examples_test builds the programs of the examples module
// (github.com/steadywatch/steadywatch/examples: informer, operator, crd) with
// `go build` and runs each one as a subprocess against real kube-apiservers
// started by the harness (current and v1.18.19), asserting what it prints and
// what it does to the cluster. On v1.18.19 it also runs informer and operator
// in their -stock mode (without steadywatch's line) and asserts that they
// never sync. The crd program creates a CRD; it is deleted at cleanup unless
// it existed before.
//
// With E2E_KUBECONFIG set (e2e/internal/extcluster) the current-server specs
// run against that external cluster; the v1.18.19 specs (needs-faults) skip
// there. Namespaces the specs create are deleted at cleanup.
package examples_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestExamples(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "examples e2e")
}
