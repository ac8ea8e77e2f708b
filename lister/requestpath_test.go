package lister_test

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/steadywatch/steadywatch/"

// designPathBound reads docs/design.md's bound on the request path: "at
// most N functions".
var designPathBound = regexp.MustCompile(`at\s+most\s+(\d+)\s+functions\s+of\s+the\s+SDK`)

// TestRequestPathIsShort measures the path of one request as
// docs/design.md counts it: every function of the SDK's own packages (test
// files excluded) that runs from the public call (Lister.List) to the wire
// and back, both sides, for a 410 on a paginated NotOlderThan list
// (testdata/requestpath, built with coverage instrumentation and run in a
// process of its own). It fails when more run than design.md states.
func TestRequestPathIsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the lister's tests with coverage instrumentation")
	}
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	m := designPathBound.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/design.md states no bound (%q)", designPathBound)
	}
	bound, _ := strconv.Atoi(string(m[1]))
	dir, bin := t.TempDir(), filepath.Join(t.TempDir(), "requestpath")
	if out, err := exec.Command("go", "build", "-cover", "-covermode=atomic", "-coverpkg="+modulePath+"...", "-o", bin, "./testdata/requestpath").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command(bin, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	out, err := exec.Command("go", "tool", "covdata", "func", "-i", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var ran []string
	files, pkgs := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || !strings.HasPrefix(f[0], modulePath) || strings.Contains(f[0], "/testdata/") || f[2] == "0.0%" {
			continue
		}
		file := strings.TrimPrefix(f[0][:strings.Index(f[0], ".go:")+3], modulePath)
		ran = append(ran, file+" "+f[1])
		files[file], pkgs[path.Dir(file)] = true, true
	}
	sort.Strings(ran)
	t.Logf("%d functions in %d files of %d packages:\n%s", len(ran), len(files), len(pkgs), strings.Join(ran, "\n"))
	if len(ran) == 0 {
		t.Fatal("the trace counted no function")
	}
	if len(ran) > bound {
		t.Errorf("the 410 path runs %d functions of the SDK, docs/design.md says at most %d", len(ran), bound)
	}
}
