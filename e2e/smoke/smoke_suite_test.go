// Package smoke proves the harness itself: that the servers it builds are the
// real versions, behave as the seeds say (legacy ignores resourceVersionMatch,
// compaction yields real 410s), that its fault proxy is indistinguishable from
// the real thing for client-go, and the anchor fact this project exists for:
// stock client-go informers never sync against v1.18.19.
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
