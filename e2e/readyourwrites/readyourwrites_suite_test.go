// Package readyourwrites_test proves the read-your-writes client against
// real kube-apiservers (v1.37.2 and v1.18.19) started by the harness: a
// controller loop of write-then-read cycles, with stock client-go's
// informer beside it counting its stale reads, with the watch held back by
// the fault proxy, and with the watch cut for longer than the bound.
//
// Labels: conformance (current server), legacy (v1.18.19), needs-faults
// (the fault proxy).
package readyourwrites_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestReadYourWrites(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "read-your-writes e2e")
}
