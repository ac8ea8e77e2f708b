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
// in any module.
func TestNoPlanningLabelsInTests(t *testing.T) {
	var (
		issue   = regexp.MustCompile(`(?i)\bissue #?[0-9]+`)
		name    = regexp.MustCompile(`^func (Test|Benchmark|Fuzz|Example)\w*P[1-9]([A-Z_(]|$)`)
		comment = regexp.MustCompile(`//.*\bP[1-9]\b`)
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
			if issue.MatchString(line) || name.MatchString(line) || comment.MatchString(line) {
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
