package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDesignDrawsTheRealImports fails when docs/design.md's package diagram
// and the SDK module's imports between its own packages (tests excluded)
// disagree: an import the diagram does not draw, an arrow without an
// import, or a package missing from the diagram. Packages without a
// declaration outside their tests (holders of tests, like this one) are not
// drawn.
func TestDesignDrawsTheRealImports(t *testing.T) {
	drawn, drawnPkgs, err := designImports(filepath.Join("..", "..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	real, realPkgs := moduleImports(t)
	for _, a := range setDiff(real, drawn) {
		t.Errorf("%s imports %s, but docs/design.md has no arrow %s --> %s: add it", a.from, a.to, a.from, a.to)
	}
	for _, a := range setDiff(drawn, real) {
		t.Errorf("docs/design.md draws %s --> %s, but %s does not import %s: remove the arrow", a.from, a.to, a.from, a.to)
	}
	for _, p := range setDiff(realPkgs, drawnPkgs) {
		t.Errorf("package %s is not in docs/design.md's diagram: add it", p)
	}
	for _, p := range setDiff(drawnPkgs, realPkgs) {
		t.Errorf("docs/design.md draws package %s, which the module does not have", p)
	}
}

// arrow is one import: from imports to (paths relative to the module).
type arrow struct{ from, to string }

var (
	nodeDecl = regexp.MustCompile(`^([A-Za-z0-9_]+)\["?([^"\]]+)"?\]$`)
	edge     = regexp.MustCompile(`^([A-Za-z0-9_]+)\s*-->\s*([A-Za-z0-9_]+)$`)
	bareNode = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// designImports reads the first mermaid block of the design page: edges
// "a --> b", nodes "a" and node names `id["import/path"]` (an id without
// one is its own path). Any other line is an error, so the diagram cannot
// hold what this test does not check.
func designImports(path string) (map[arrow]bool, map[string]bool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	_, block, ok := bytes.Cut(src, []byte("```mermaid\n"))
	if ok {
		block, _, ok = bytes.Cut(block, []byte("\n```"))
	}
	if !ok {
		return nil, nil, fmt.Errorf("%s: no ```mermaid block", path)
	}
	names := map[string]string{}
	var edges [][2]string
	var nodes []string
	sc := bufio.NewScanner(bytes.NewReader(block))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if m := edge.FindStringSubmatch(line); m != nil {
			edges = append(edges, [2]string{m[1], m[2]})
			nodes = append(nodes, m[1], m[2])
		} else if m := nodeDecl.FindStringSubmatch(line); m != nil {
			names[m[1]] = m[2]
			nodes = append(nodes, m[1])
		} else if bareNode.MatchString(line) {
			nodes = append(nodes, line)
		} else if line != "" && line != "flowchart TD" && !strings.HasPrefix(line, "%%") {
			return nil, nil, fmt.Errorf("%s: mermaid block line %d %q: want `a --> b`, `a` or `a[\"path\"]`", path, n, line)
		}
	}
	pkg := func(id string) string {
		if p, ok := names[id]; ok {
			return p
		}
		return id
	}
	arrows, pkgs := map[arrow]bool{}, map[string]bool{}
	for _, e := range edges {
		arrows[arrow{pkg(e[0]), pkg(e[1])}] = true
	}
	for _, id := range nodes {
		pkgs[pkg(id)] = true
	}
	return arrows, pkgs, nil
}

// moduleImports lists, with `go list`, the packages of the module this test
// is in and their imports of each other (non-test imports only), leaving
// out the packages that declare nothing outside their tests.
func moduleImports(t *testing.T) (map[arrow]bool, map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.Module.Path}}|{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}|{{join .Imports ","}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	arrows, pkgs := map[arrow]bool{}, map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 5 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		mod, dir, files, imports := f[0], f[2], strings.FieldsFunc(f[3], isComma), strings.FieldsFunc(f[4], isComma)
		rel := func(p string) (string, bool) {
			if p == mod {
				return ".", true
			}
			r, ok := strings.CutPrefix(p, mod+"/")
			return r, ok
		}
		from, _ := rel(f[1])
		if !declares(t, dir, files) {
			continue
		}
		pkgs[from] = true
		for _, imp := range imports {
			if to, ok := rel(imp); ok {
				arrows[arrow{from, to}] = true
			}
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no packages:\n%s", out)
	}
	return arrows, pkgs
}

func isComma(r rune) bool { return r == ',' }

// declares reports whether the package's non-test files declare anything.
func declares(t *testing.T, dir string, files []string) bool {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Decls) > 0 {
			return true
		}
	}
	return false
}

// setDiff returns the keys of a that are not in b, in a stable order.
func setDiff[K comparable](a, b map[K]bool) []K {
	var d []K
	for k := range a {
		if !b[k] {
			d = append(d, k)
		}
	}
	slices.SortFunc(d, func(x, y K) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
	return d
}
