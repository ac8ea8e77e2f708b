// Package largelist_test proves, on a real kube-apiserver holding a large
// collection (50k ConfigMaps by default), the two halves of steadywatch's
// streaming-list guard bound:
//
//   - no false fallback: a server that pauses 10 s mid-stream (the fault
//     proxy holds the streaming list's body once, halfway) is waited for;
//     the drop-in informer and reflector.New sync from one streaming list,
//     with no streaming-list-abandoned / streaming-ignored reason recorded;
//   - fast detection: with bookmarks dropped by the proxy
//     (gravitational/teleport#64188), the fallback is decided about 2 s
//     after the last initial event (the count of initial events comes from
//     a limit=1 list's remainingItemCount), not after the 10 s quiet bound.
//
// Creating 50k objects takes minutes on a small machine, so every spec is
// labelled "slow" and skips unless the label filter names it:
// `make e2e-slow` (or -ginkgo.label-filter=slow). -largelist.objects
// changes the size, -largelist.pause the mid-stream pause.
package largelist_test

import (
	"flag"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var (
	flagObjects = flag.Int("largelist.objects", 50000, "ConfigMaps in the namespace the clients sync")
	flagPause   = flag.Duration("largelist.pause", 10*time.Second, "how long the proxy holds the streaming list mid-stream")
	flagWorkers = flag.Int("largelist.workers", 8, "concurrent creators")
)

func TestLargeList(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "large streaming lists e2e")
}
