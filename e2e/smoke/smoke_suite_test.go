// Package smoke proves the harness itself: that the servers it builds are the
// real versions, behave as KEP-2523 and the Kubernetes API Concepts, "Resource versions" say (legacy ignores resourceVersionMatch,
// compaction yields real 410s), that its fault proxy is indistinguishable from
// the real thing for client-go, and the anchor fact this project exists for:
// stock client-go informers never sync against v1.18.19.
//
// With E2E_KUBECONFIG set (e2e/internal/extcluster) the current-server specs
// run against that external cluster instead; the specs labelled needs-faults
// (fault proxy, compaction, watch cache off, v1.18.19) skip there with the
// reason. Namespaces the specs create are deleted at cleanup.
package smoke

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "harness smoke")
}
