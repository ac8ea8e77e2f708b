// Package examples_test builds the programs of the examples module
// (github.com/steadywatch/steadywatch/examples: informer, operator,
// listwatch, crd) and the stock twins of the first three
// (examples/stock/...: the same programs without the line that adopts
// steadywatch) with `go build`, and runs each one as a subprocess against
// real kube-apiservers started by the harness (current and v1.18.19),
// asserting what it prints and what it does to the cluster. On the current
// server the stock twins must work too; on v1.18.19 they must never sync.
// adoption_test.go asserts, with diff(1), that each steadywatch program is
// its stock twin plus one line and the imports of steadywatch packages, that
// docs/adoption.md shows that line, and that the README links the program. The crd program creates a CRD; it is
// deleted at cleanup unless it existed before.
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
