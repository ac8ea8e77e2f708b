// Package baddata_test runs four bad-server-data faults against a real
// kube-apiserver (build.Current) behind the harness's fault proxy, each
// with steadywatch's paths (lister.List, the drop-in informer over
// lister.NewListerWatcher, reflector.New) beside stock client-go v0.37.2
// in the same spec:
//
//   - a continue token repeated on every page (faults.ListFaults);
//   - a 429 with Retry-After: 3600 (faults.Rule);
//   - an older MODIFIED re-delivered after a newer one
//     (faults.StreamFaults.RedeliverOlder);
//   - a bookmark whose resourceVersion is "abc", and 400 for watches from it
//     (faults.StreamFaults.BookmarkRV and a Rule).
//
// Each measurement (requests on the wire per path, elapsed time, outcome)
// goes to the report (AddReportEntry), to GinkgoWriter as a RESULT line, and
// to a JSON file (-baddata.results, default in the temp dir) written after
// the suite. Label needs-faults: it skips on an external cluster.
package baddata_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var flagResults = flag.String("baddata.results", "", "write the measured results as JSON to this file (default: not kept; the RESULT report entries carry them)")

func TestBadData(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "bad server data e2e")
}

// result is one path's measurement under one fault.
type result struct {
	Fault    string  `json:"fault"`
	Path     string  `json:"path"` // "lister.List", "drop-in informer", "reflector.New", "stock ..."
	Lists    int     `json:"lists"`
	Watches  int     `json:"watches"`
	Seconds  float64 `json:"seconds"`
	Outcome  string  `json:"outcome"`
	Counters string  `json:"counters,omitempty"` // steadywatch's fallback counts
}

var results struct {
	sync.Mutex
	rows []result
}

// record keeps r for the results file and reports it.
func record(r result) {
	results.Lock()
	results.rows = append(results.rows, r)
	results.Unlock()
	line := fmt.Sprintf("%s | %s | %d lists + %d watches | %.2f s | %s | %s", r.Fault, r.Path, r.Lists, r.Watches, r.Seconds, r.Outcome, r.Counters)
	AddReportEntry("RESULT", line)
	fmt.Fprintf(GinkgoWriter, "RESULT %s\n", line)
}

var _ = AfterSuite(func() {
	results.Lock()
	defer results.Unlock()
	if len(results.rows) == 0 {
		return
	}
	b, err := json.MarshalIndent(map[string]any{"date": time.Now().UTC().Format(time.RFC3339), "results": results.rows}, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	path := *flagResults
	if path == "" {
		// The RESULT report entries above carry every row; without the flag
		// the run leaves no file behind.
		fmt.Fprintln(GinkgoWriter, "bad data results not kept (-baddata.results=FILE keeps them)")
		return
	}
	Expect(os.WriteFile(path, append(b, '\n'), 0o644)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "bad data results: %s\n", path)
	AddReportEntry("bad data results", path)
})
