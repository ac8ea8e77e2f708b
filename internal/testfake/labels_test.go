package testfake

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Test names and comments say what a test checks, not how the work was
// planned: no issue numbers of this project (public references such as
// kubernetes/kubernetes#NNN stay) and no benchmark scenario labels (a
// capital P and a digit) in a test's or benchmark's name or in a comment,
// in any module. In e2e/ the benchmark scenarios have names (initial sync,
// relist memory, ...): its test files carry no scenario label anywhere,
// test data included, in either case (a p and a digit 1 to 7).
func TestNoPlanningLabelsInTests(t *testing.T) {
	var (
		issue   = regexp.MustCompile(`(?i)\bissue #?[0-9]+`)
		name    = regexp.MustCompile(`^func (Test|Benchmark|Fuzz|Example)\w*P[1-9]([A-Z_(]|$)`)
		comment = regexp.MustCompile(`//.*\bP[1-9]\b`)
		e2eData = regexp.MustCompile(`\b[Pp][1-7]\b`)
	)
	root := filepath.Join("..", "..")
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			inE2E := strings.HasPrefix(filepath.ToSlash(path), "../../e2e/")
			if issue.MatchString(line) || name.MatchString(line) || comment.MatchString(line) || (inE2E && e2eData.MatchString(line)) {
				found = append(found, path+":"+strconv.Itoa(n)+": "+strings.TrimSpace(line))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("planning label: %s", f)
	}
}

// The benchmark page's headings and section markers name each scenario by
// what it measures, and so do the headings and markers the bench writes
// (a string in e2e/bench that starts a Markdown heading or an HTML comment):
// no label (a p and a digit) in "## ..." or "<!-- ...:begin -->".
func TestNoScenarioLabelsInBenchmarkHeadings(t *testing.T) {
	label := regexp.MustCompile(`\b[Pp][1-7]\b|\b[Pp][1-7]:`)
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for n, line := range strings.Split(string(page), "\n") {
		if (strings.HasPrefix(line, "#") || strings.HasPrefix(line, "<!--")) && label.MatchString(line) {
			t.Errorf("docs/benchmarks.md:%d: scenario label in a heading: %s", n+1, line)
		}
	}
	// A heading or marker the generator writes: a string literal holding
	// "## " (or "# ") at a line's start, or "<!--".
	generated := regexp.MustCompile(`"(#{1,4} |[^"]*\\n#{1,4} |[^"]*<!--)[^"]*"`)
	files, err := filepath.Glob(filepath.Join(root, "e2e", "bench", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bench sources: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, lit := range generated.FindAllString(line, -1) {
				if label.MatchString(lit) {
					t.Errorf("%s:%d: scenario label in a generated heading or marker: %s", f, n+1, lit)
				}
			}
		}
	}
}
