package chaos_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Flags of the chaos run. The defaults keep `make test` within budget on a
// 2-core machine; raise -chaos.duration (and -timeout) for a longer run.
var (
	flagSchedule = flag.Int64("chaos.schedule", 0, "replay number of the fault schedule and the writer's rand source; 0 = from the clock (printed, so a failure can be replayed)")
	flagDuration = flag.Duration("chaos.duration", 75*time.Second, "how long the writer churns and faults fire")
	flagObjects  = flag.Int("chaos.objects", 300, "live ConfigMaps the writer keeps around (it creates, updates and deletes around this number)")
	flagRate     = flag.Float64("chaos.rate", 25, "writer operations per second (bounded: the machine has 2 cores)")
	flagConverge = flag.Duration("chaos.converge", 90*time.Second, "bound on the time from the last fault to the informer's store equalling an Exact list")
	flagReport   = flag.String("chaos.report", "", "if set, write the run's JSON result (for cmd/matrix) to this path")
	flagConfig   = flag.String("chaos.config", "ha", "control plane: "+strings.Join(configNames(), ", ")+" (only ha runs by default)")
)

func TestChaos(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "chaos e2e")
}
