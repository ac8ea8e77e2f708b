// Package fieldfailures_test runs every row of fieldfailures.Catalogue
// against real kube-apiservers started by the harness: one spec per row, the
// three clients (stock client-go, steadywatch's drop-in informer and its
// reflector) side by side, each through its own fault proxy. steadywatch is
// asserted to sync, converge to an Exact list, never go back in time and keep
// its request rate bounded; stock client-go is measured, not asserted.
//
// watch410_test.go adds one spec that is not a catalogue row (it cites no
// single public report): every plain watch answered 410 and streaming lists
// refused, where steadywatch's request count over 30 s is asserted against
// stock client-go's in the same run (docs/bad-server-data.md has the numbers).
//
// Labels: field-failures, needs-faults (every row needs the fault proxy; on
// an external cluster they skip before starting anything), ha (the HA row).
// The run's Results JSON goes to -fieldfailures.results (default: a
// temporary file whose path is printed); `make field-failures` renders it
// into docs/field-failures.md.
package fieldfailures_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/modfile"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/e2e/fieldfailures"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
)

var (
	flagResults = flag.String("fieldfailures.results", "", "write the run's Results JSON to this path (default: not kept)")
	flagVersion = flag.String("fieldfailures.version", "", "kube-apiserver release to run against (default: build.Current)")
)

// The run's bounds: short, so that the suite fits CI's budget.
var bounds = fieldfailures.Bounds{
	Sync:                 fieldfailures.Duration(20 * time.Second),
	Converge:             fieldfailures.Duration(20 * time.Second),
	MinWindow:            fieldfailures.Duration(10 * time.Second),
	MaxRequestsPerMinute: 240,
}

// klog's flags (-v=4 shows every request and transition of steadywatch).
func init() { klog.InitFlags(nil) }

func serverVersion() string {
	if *flagVersion != "" {
		return *flagVersion
	}
	return build.Current
}

// run collects the rows measured by this process.
var run = struct {
	sync.Mutex
	r fieldfailures.Results
}{r: fieldfailures.Results{Bounds: bounds}}

func record(rr fieldfailures.RowResult) {
	run.Lock()
	defer run.Unlock()
	run.r.Rows = append(run.r.Rows, rr)
}

// addNote adds a note to the recorded row id.
func addNote(id, note string) {
	run.Lock()
	defer run.Unlock()
	for i := range run.r.Rows {
		if run.r.Rows[i].ID == id {
			run.r.Rows[i].Notes = append(run.r.Rows[i].Notes, note)
		}
	}
}

// clientGoVersion is the client-go version the e2e module requires (test
// binaries carry no dependency versions in their build info).
func clientGoVersion() string {
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	Expect(err).NotTo(HaveOccurred())
	mf, err := modfile.ParseLax("go.mod", b, nil)
	Expect(err).NotTo(HaveOccurred())
	for _, r := range mf.Require {
		if r.Mod.Path == "k8s.io/client-go" {
			return r.Mod.Version
		}
	}
	Fail("e2e/go.mod does not require k8s.io/client-go")
	return ""
}

func TestFieldFailures(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "field failures e2e")
}

var _ = BeforeSuite(func() {
	run.Lock()
	defer run.Unlock()
	run.r.Started = time.Now().UTC()
	run.r.Server = serverVersion()
	run.r.ClientGo = clientGoVersion()
})

var _ = AfterSuite(func() {
	run.Lock()
	defer run.Unlock()
	if len(run.r.Rows) == 0 {
		return
	}
	order := func(id string) int {
		return slices.IndexFunc(fieldfailures.Catalogue, func(r fieldfailures.Row) bool { return r.ID == id })
	}
	slices.SortFunc(run.r.Rows, func(a, b fieldfailures.RowResult) int { return order(a.ID) - order(b.ID) })
	path := *flagResults
	if path == "" {
		// Saved all the same (a failing Save fails the suite), in a directory
		// removed at once: without the flag the run leaves nothing behind.
		dir, err := os.MkdirTemp("", "steadywatch-field-failures-")
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = os.RemoveAll(dir) }()
		Expect(run.r.Save(filepath.Join(dir, "results.json"))).To(Succeed())
		fmt.Fprintln(GinkgoWriter, "field failures results not kept (-fieldfailures.results=FILE keeps them)")
		return
	}
	Expect(run.r.Save(path)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "field failures results: %s\n", path)
	AddReportEntry("field failures results", path)
})
