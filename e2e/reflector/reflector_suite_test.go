// Package reflector_test proves steadywatch's reflector against real
// kube-apiservers (current and v1.18.19) started by the harness: sync on a
// server that ignores streaming lists, 410 recovery with NotOlderThan,
// bookmarks on a quiet resource, dropped and stalled watches, HA, and no
// goroutine left behind.
//
// Labels: conformance (current server), legacy (v1.18.19), ha (HA pair),
// needs-faults (fault proxy, compaction, watch cache off, a legacy server or
// an HA pair). With E2E_KUBECONFIG set (e2e/internal/extcluster) the
// conformance specs without needs-faults run against that external cluster;
// the others skip there with the reason, before starting anything. Namespaces
// the specs create are deleted at cleanup.
package reflector_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestReflector(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "reflector e2e")
}
