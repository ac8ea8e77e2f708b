package examples_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// adoptionMarker ends the one line that adopts steadywatch in an example.
const adoptionMarker = " // adopts steadywatch"

// adoptionDiff is `diff stock steadywatch` of one example, sorted into what
// the spec counts.
type adoptionDiff struct {
	removed []string // lines of the stock program not in the steadywatch one
	imports []string // added import specs of github.com/steadywatch/steadywatch packages
	blank   int      // added empty lines (the blank line before the steadywatch import group)
	code    []string // every other added line: the adoption itself
}

// diffPrograms runs diff(1) in its default format on the two files and
// sorts the lines it reports.
func diffPrograms(stock, steadywatch string) (adoptionDiff, string) {
	out, err := exec.Command("diff", stock, steadywatch).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: the files differ
		Fail(fmt.Sprintf("diff %s %s: %v", stock, steadywatch, err))
	}
	var d adoptionDiff
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "< "):
			d.removed = append(d.removed, l[2:])
		case l == ">" || l == "> ":
			d.blank++
		case strings.HasPrefix(l, "> "):
			line := strings.TrimSpace(l[2:])
			if strings.Contains(line, `"github.com/steadywatch/steadywatch/`) && !strings.Contains(line, "(") {
				d.imports = append(d.imports, line)
			} else {
				d.code = append(d.code, line)
			}
		}
	}
	return d, string(out)
}

var _ = Describe("adopting steadywatch in the examples", Label("examples", "adoption"), func() {
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		panic(err)
	}
	readme, err := os.ReadFile(filepath.Join(examples, "..", "README.md"))
	if err != nil {
		panic(err)
	}
	adoption, err := os.ReadFile(filepath.Join(examples, "..", "docs", "adoption.md"))
	if err != nil {
		panic(err)
	}

	// Each program exists as examples/<name>/main.go and, without steadywatch,
	// examples/stock/<name>/main.go (the suite builds and runs both). What is
	// counted, from `diff stock steadywatch`: lines removed from the stock
	// program (at most one: the line the adoption replaces, such as the
	// informer factory's constructor), added import specs of steadywatch
	// packages, added blank lines, and every other added line (must be
	// exactly one: the line marked "adopts steadywatch", shown verbatim in docs/adoption.md,
	// whose program the README links from its line for that path).
	DescribeTable("the steadywatch program is the stock one with one line added or replaced, and its imports",
		func(name string, maxImports int) {
			d, raw := diffPrograms(filepath.Join(examples, "stock", name, "main.go"), filepath.Join(examples, name, "main.go"))
			fmt.Fprintf(GinkgoWriter, "diff stock/%s/main.go %s/main.go:\n%s", name, name, raw)
			AddReportEntry("adoption diff "+name, fmt.Sprintf("removed %d, added code %d, added steadywatch imports %d, added blank %d",
				len(d.removed), len(d.code), len(d.imports), d.blank))
			Expect(len(d.removed)).To(BeNumerically("<=", 1), "the steadywatch program dropped more than the one line it replaces: %v", d.removed)
			Expect(d.code).To(HaveLen(1), "added lines other than steadywatch imports")
			Expect(d.code[0]).To(HaveSuffix(adoptionMarker))
			Expect(len(d.imports)).To(And(BeNumerically(">=", 1), BeNumerically("<=", maxImports)), "imports: %v", d.imports)
			Expect(d.blank).To(BeNumerically("<=", 1))
			line := strings.TrimSuffix(d.code[0], adoptionMarker)
			Expect(string(adoption)).To(ContainSubstring(line), "docs/adoption.md does not show the adoption line of %s", name)
			Expect(string(readme)).To(ContainSubstring("(examples/"+name+"/main.go)"), "README.md does not link the program of %s", name)
		},
		// informer: reflector.NewSharedInformerFactoryWithOptions in place of client-go's, with lister.Options{Metrics: swprom.New(...)}.
		Entry("informer (client-go SharedInformerFactory)", "informer", 3),
		// operator: reflector.NewInformerFor(cfg) as cache.Options.NewInformer.
		Entry("operator (controller-runtime)", "operator", 1),
		// listwatch: lister.Wrap around cache.NewListWatchFromClient.
		Entry("listwatch (any cache.ListerWatcher)", "listwatch", 1),
	)
})
