// Package reflector_test proves steadywatch's reflector against real
// kube-apiservers (current and v1.18.19) started by the harness: sync on a
// server that ignores streaming lists, 410 recovery with NotOlderThan,
// bookmarks on a quiet resource, dropped and stalled watches, HA, and no
// goroutine left behind.
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
