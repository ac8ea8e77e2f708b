// Package readme_test checks the top-level README's Go code: every block
// marked as a complete program or test file compiles against the SDK in
// this repository, and the test files pass. A renamed API, a missing
// import or a wrong type parameter in the README fails here.
//
// A block is marked by an HTML comment on the line before its fence:
//
//	<!-- compile: main -->   a complete program (package main, imports included)
//	<!-- compile: test -->   a complete _test.go file, compiled and run
//
// Every ```go block that starts with a package clause must be marked, so a
// complete program cannot be added to the README without being checked.
package readme_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	// maxMainLines bounds a quick-start program, imports included.
	maxMainLines = 30
	// maxTestFuncLines bounds each test function of a test block.
	maxTestFuncLines = 15
)

// block is one fenced ```go block of the README.
type block struct {
	kind string // "main", "test" or "" (unmarked)
	line int    // 1-based line of its first code line in README.md
	code string
}

var marker = regexp.MustCompile(`^<!--\s*compile:\s*(main|test)\s*-->$`)

// goBlocks returns the README's ```go blocks with the marker (if any) on the
// line before each fence.
func goBlocks(t *testing.T, readme string) []block {
	t.Helper()
	lines := strings.Split(readme, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		b := block{line: i + 2}
		if i > 0 {
			if m := marker.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.kind = m[1]
			}
		}
		var code []string
		j := i + 1
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			code = append(code, lines[j])
		}
		if j == len(lines) {
			t.Fatalf("README.md:%d: ```go block never closed", i+1)
		}
		b.code = strings.Join(code, "\n") + "\n"
		out = append(out, b)
		i = j
	}
	return out
}

// TestREADMEBlocksCompile extracts the marked blocks into a module of their
// own that requires the SDK through a replace (with this module's go.mod and
// go.sum, so nothing is downloaded), vets every block and runs the tests.
func TestREADMEBlocksCompile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(t, string(readme))
	count := map[string]int{}
	for _, b := range blocks {
		if b.kind == "" {
			if strings.HasPrefix(strings.TrimSpace(b.code), "package ") {
				t.Errorf("README.md:%d: a complete Go file without a <!-- compile: main|test --> marker", b.line)
			}
			continue
		}
		count[b.kind]++
		checkSize(t, b)
	}
	if count["main"] == 0 || count["test"] == 0 {
		t.Fatalf("README.md: want at least one <!-- compile: main --> and one <!-- compile: test --> block, found %v", count)
	}

	dir := t.TempDir()
	writeModule(t, root, dir)
	n := 0
	for _, b := range blocks {
		if b.kind == "" {
			continue
		}
		n++
		name := "main.go"
		if b.kind == "test" {
			name = "readme_test.go"
		}
		sub := filepath.Join(dir, fmt.Sprintf("block%02d", n))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		// The file starts with a line directive, so an error points at README.md.
		src := fmt.Sprintf("//line %s:%d\n%s", filepath.Join(root, "README.md"), b.line, b.code)
		if err := os.WriteFile(filepath.Join(sub, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(t, dir, "vet", "./...")
	goCmd(t, dir, "test", "-count=1", "./...")
}

// checkSize holds a block to the README's promise: a quick start of at most
// maxMainLines lines, test functions of at most maxTestFuncLines.
func checkSize(t *testing.T, b block) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "README.md", b.code, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("README.md:%d: %v", b.line, err)
		return
	}
	switch b.kind {
	case "main":
		if f.Name.Name != "main" {
			t.Errorf("README.md:%d: a compile: main block is package %s", b.line, f.Name.Name)
		}
		if n := strings.Count(strings.TrimRight(b.code, "\n"), "\n") + 1; n > maxMainLines {
			t.Errorf("README.md:%d: the program has %d lines, more than %d", b.line, n, maxMainLines)
		}
	case "test":
		tests := 0
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			tests++
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxTestFuncLines {
				t.Errorf("README.md:%d: %s has %d lines, more than %d", b.line, fn.Name.Name, n, maxTestFuncLines)
			}
		}
		if tests == 0 {
			t.Errorf("README.md:%d: a compile: test block without a Test function", b.line)
		}
	}
}

// writeModule writes dir/go.mod: this module's requirements, another module
// path, and the SDK replaced by the repository root; and this module's go.sum.
func writeModule(t *testing.T, root, dir string) {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "examples", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(mod), "\n") {
		switch {
		case strings.HasPrefix(l, "module "):
			l = "module example.com/readmecheck"
		case strings.HasPrefix(l, "replace github.com/steadywatch/steadywatch "):
			l = "replace github.com/steadywatch/steadywatch => " + root
		}
		out = append(out, l)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "examples", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir, offline and outside any workspace, and
// fails the test with its output if it fails.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to compile the README's blocks: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("go %s:\n%s", strings.Join(args, " "), out.String())
}
