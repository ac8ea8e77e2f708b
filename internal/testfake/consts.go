package testfake

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// StringConst is one string constant of a Go file: its name, value, doc
// comment (on one line, without a leading "Name:" or "Name") and where it is.
type StringConst struct {
	Name, Value, Doc string
	Pos              token.Position
}

// DirStringConsts returns the string constants declared in the non-test Go
// files of dir: how generated pages (docs/reasons.md,
// docs/troubleshooting.md) stay the constants' own documentation.
func DirStringConsts(tb testing.TB, dir string) []StringConst {
	tb.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []StringConst
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, FileStringConsts(fset, af)...)
	}
	return out
}

// FileStringConsts returns the string constants declared in af (a file
// parsed with parser.ParseComments).
func FileStringConsts(fset *token.FileSet, af *ast.File) []StringConst {
	var out []StringConst
	for _, d := range af.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			for i, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || i >= len(vs.Names) {
					continue
				}
				val, err := strconv.Unquote(lit.Value)
				if err != nil {
					continue
				}
				text := ""
				switch {
				case vs.Doc != nil:
					text = vs.Doc.Text()
				case vs.Comment != nil:
					text = vs.Comment.Text()
				}
				name := vs.Names[i].Name
				text = strings.TrimPrefix(strings.TrimSpace(text), name)
				text = strings.TrimSpace(strings.TrimPrefix(text, ":"))
				text = strings.Join(strings.Fields(text), " ")
				out = append(out, StringConst{Name: name, Value: val, Doc: text, Pos: fset.Position(lit.Pos())})
			}
		}
	}
	return out
}
