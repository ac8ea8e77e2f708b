// Package canonical_test proves package canonical against a real current
// kube-apiserver: a CRD with two served versions and
// x-kubernetes-preserve-unknown-fields (Gateway API's BackendTLSPolicy, whose
// spec.tls became spec.validation: https://gateway-api.sigs.k8s.io/api-types/backendtlspolicy/),
// objects written through both versions, and informers whose store sees only
// the canonical shape while the objects on the server stay byte for byte as
// they were.
//
// With E2E_KUBECONFIG set (e2e/internal/extcluster) it runs against that
// external cluster instead (no fault control is needed). The CRD and the
// namespace it creates are deleted at cleanup.
package canonical_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCanonical(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "canonical")
}
