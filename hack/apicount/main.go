// Command apicount measures the size of the SDK's public API, the budget of
// the v0.2.0 API cut, and fails when it grows (hack/apicount.sh runs it; make
// lint runs that). It reads Go source only (go/parser, no type checking, no
// build), so it can measure any checkout, e.g. one made with git archive.
//
// Public packages: every directory of the module rooted at -root that holds a
// non-main Go package, except internal/ (and anything below an internal
// directory), testdata/, directories whose name starts with "." or "_",
// hack/, scripts/, and the nested modules (e2e/, examples/, cmd/...: every
// directory with its own go.mod). Only non-test files count (*_test.go are
// left out), and files excluded by a //go:build line for the host platform
// are left out as go build leaves them out.
//
// Exported names of a package (the API count):
//   - every exported top-level function;
//   - every exported top-level type, including aliases (type T = x.T);
//   - every exported top-level constant and variable, one per name;
//   - every exported method declared in the package on an exported type
//     (receiver T or *T, generic or not).
//
// Struct fields and interface methods are not names by this count, nor are
// the methods an alias's target declares elsewhere.
//
// Option fields (the options budget): the exported fields of every option
// struct, one per name, an embedded field counting one. An option struct is
// an exported struct type of a public package that is
//  1. named Options or Config or with a name ending in Options, Policy or
//     Config (a type alias counts with the fields of the struct it names, so
//     an alias of an internal struct is measured too), or
//  2. the type (T or *T) of an exported field of an option struct,
//     recursively, with every field exported (for example the policy
//     struct inside an Options struct, or the struct of switchable faults
//     inside the test server's Options; a struct with unexported state is a
//     handle, not options; a struct of an internal package counts too, as
//     the user fills in its fields all the same), or
//  3. used as options: every field exported, taken by value as a parameter
//     of an exported constructor (a top-level function named New*, Wrap* or
//     From*), and returned by no exported function or method of the module
//     (a struct that comes out of the API is a value, like a version or a
//     query, not options): for example the Decoding or RESTResource a user
//     fills in for an adapter.
//
// The test server's package (steadywatchtest) is counted in the names and
// listed among the option structs, but its fields are reported apart and do
// not count toward the option-field limit: the budget of the v0.2.0 issue is
// 40 option fields "the test server aside".
//
// The limits live in one file (hack/api-budget.txt, see its header): the
// count fails when it exceeds the recorded current value (a ratchet: the
// recorded values only ever go down) and prints the v0.2.0 target beside it.
// -update lowers the recorded values to the counts measured; it never raises
// them.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// testServerPkg is the package whose option fields are reported apart.
const testServerPkg = "steadywatchtest"

func main() {
	root := flag.String("root", ".", "the module's root directory (holding go.mod)")
	budget := flag.String("budget", "", "the budget file to check the counts against (none: only print)")
	update := flag.Bool("update", false, "lower the budget file's recorded values to the counts measured")
	verbose := flag.Bool("v", false, "print every exported name and option field")
	flag.Parse()
	m, err := measure(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	m.print(os.Stdout, *verbose)
	if *budget == "" {
		return
	}
	b, err := readBudget(*budget)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	if *update {
		if err := b.lower(*budget, m); err != nil {
			fmt.Fprintln(os.Stderr, "apicount:", err)
			os.Exit(2)
		}
	}
	if !b.check(os.Stdout, m) {
		os.Exit(1)
	}
}

// pkg is one parsed package of the module.
type pkg struct {
	rel   string // directory relative to the module root, "/"-separated
	name  string
	files []*ast.File
	// imports maps a file's import name to the package's import path, per file.
	imports []map[string]string
}

// name is one exported name of the API count.
type name struct {
	kind string // func, type, const, var, method
	id   string // Name, or Type.Method
}

// optStruct is one option struct and its exported fields.
type optStruct struct {
	pkg, name string
	why       string // the rule that made it an option struct
	fields    []string
}

func (o optStruct) testServer() bool { return o.pkg == testServerPkg }

// measurement is the result of measure.
type measurement struct {
	module  string
	names   map[string][]name // package (relative path) -> names
	options []optStruct
}

func (m measurement) totalNames() int {
	n := 0
	for _, ns := range m.names {
		n += len(ns)
	}
	return n
}

// optionFields returns the option fields counted toward the limit, the
// test server's, and the number of structs of each.
func (m measurement) optionFields() (counted, structs, test, testStructs int) {
	for _, o := range m.options {
		if o.testServer() {
			test += len(o.fields)
			testStructs++
			continue
		}
		counted += len(o.fields)
		structs++
	}
	return
}

func (m measurement) print(w io.Writer, verbose bool) {
	pkgs := make([]string, 0, len(m.names))
	for p := range m.names {
		pkgs = append(pkgs, p)
	}
	// Largest first, as the issue lists them; ties by path.
	sort.Slice(pkgs, func(i, j int) bool {
		if len(m.names[pkgs[i]]) != len(m.names[pkgs[j]]) {
			return len(m.names[pkgs[i]]) > len(m.names[pkgs[j]])
		}
		return pkgs[i] < pkgs[j]
	})
	fmt.Fprintf(w, "exported names of %s's public packages (func type const var method):\n", m.module)
	for _, p := range pkgs {
		kinds := map[string]int{}
		for _, n := range m.names[p] {
			kinds[n.kind]++
		}
		fmt.Fprintf(w, "  %-22s %4d  (%d %d %d %d %d)\n", p, len(m.names[p]),
			kinds["func"], kinds["type"], kinds["const"], kinds["var"], kinds["method"])
		if verbose {
			for _, n := range m.names[p] {
				fmt.Fprintf(w, "      %-6s %s\n", n.kind, n.id)
			}
		}
	}
	fmt.Fprintf(w, "  %-22s %4d\n", "total", m.totalNames())
	fmt.Fprintln(w, "option structs (exported fields):")
	for _, o := range m.options {
		note := ""
		if o.testServer() {
			note = ", test server"
		}
		fmt.Fprintf(w, "  %-32s %3d  (%s%s)\n", o.pkg+"."+o.name, len(o.fields), o.why, note)
		if verbose {
			fmt.Fprintf(w, "      %s\n", strings.Join(o.fields, " "))
		}
	}
	counted, structs, test, testStructs := m.optionFields()
	fmt.Fprintf(w, "option fields: %d in %d structs (%d in %d with the test server's)\n",
		counted, structs, counted+test, structs+testStructs)
}

// measure parses the module at root and counts its public API.
func measure(root string) (measurement, error) {
	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return measurement{}, err
	}
	all, err := parseModule(root)
	if err != nil {
		return measurement{}, err
	}
	byPath := map[string]*pkg{}
	for _, p := range all {
		byPath[path.Join(modPath, p.rel)] = p
	}
	m := measurement{module: modPath, names: map[string][]name{}}
	for _, p := range all {
		if !public(p) {
			continue
		}
		m.names[p.rel] = exportedNames(p)
	}
	m.options = optionStructs(all, byPath)
	return m, nil
}

// public says whether p is one of the SDK's public packages.
func public(p *pkg) bool {
	if p.name == "main" || p.rel == "." && p.name == "" {
		return false
	}
	for _, el := range strings.Split(p.rel, "/") {
		if el == "internal" {
			return false
		}
	}
	return true
}

func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// parseModule parses every package of the module at root (internal ones
// too: an alias's target may live there), skipping nested modules.
func parseModule(root string) ([]*pkg, error) {
	var out []*pkg
	fset := token.NewFileSet()
	ctx := build.Default
	ctx.CgoEnabled = false
	err := filepath.WalkDir(root, func(dir string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		base := d.Name()
		if rel != "." {
			if strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" {
				return filepath.SkipDir
			}
			if rel == "hack" || rel == "scripts" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		bp, err := ctx.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return fmt.Errorf("%s: %w", rel, err)
		}
		p := &pkg{rel: rel, name: bp.Name}
		for _, fn := range bp.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(dir, fn), nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			imps := map[string]string{}
			for _, is := range f.Imports {
				ip, _ := strconv.Unquote(is.Path.Value)
				n := path.Base(ip)
				if is.Name != nil {
					n = is.Name.Name
				}
				imps[n] = ip
			}
			p.files = append(p.files, f)
			p.imports = append(p.imports, imps)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// recvType returns the name of a method's receiver type.
func recvType(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func exportedNames(p *pkg) []name {
	var out []name
	for _, f := range p.files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					out = append(out, name{"func", d.Name.Name})
				} else if rt := recvType(d); ast.IsExported(rt) {
					out = append(out, name{"method", rt + "." + d.Name.Name})
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out = append(out, name{"type", s.Name.Name})
						}
					case *ast.ValueSpec:
						kind := "var"
						if d.Tok == token.CONST {
							kind = "const"
						}
						for _, n := range s.Names {
							if n.IsExported() {
								out = append(out, name{kind, n.Name})
							}
						}
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].kind != out[j].kind {
			return out[i].kind < out[j].kind
		}
		return out[i].id < out[j].id
	})
	return out
}

// typeDecl is one type declaration with the file it is in.
type typeDecl struct {
	p    *pkg
	file int
	spec *ast.TypeSpec
}

// optionStructs applies the option-struct rules (see the package comment).
func optionStructs(all []*pkg, byPath map[string]*pkg) []optStruct {
	types := map[string]typeDecl{} // "rel.Name" -> declaration, every package
	for _, p := range all {
		for i, f := range p.files {
			for _, decl := range f.Decls {
				if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
					for _, spec := range gd.Specs {
						ts := spec.(*ast.TypeSpec)
						types[p.rel+"."+ts.Name.Name] = typeDecl{p, i, ts}
					}
				}
			}
		}
	}
	modRel := map[*pkg]string{}
	for ip, p := range byPath {
		modRel[p] = ip
	}
	// resolve follows a type expression (T, *T, pkg.T, aliases) to the
	// declaration of a struct in the module, if it names one.
	var resolve func(td typeDecl, e ast.Expr, depth int) (typeDecl, *ast.StructType, bool)
	resolve = func(td typeDecl, e ast.Expr, depth int) (typeDecl, *ast.StructType, bool) {
		if depth > 10 {
			return typeDecl{}, nil, false
		}
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		var key string
		switch x := e.(type) {
		case *ast.StructType:
			return td, x, true
		case *ast.Ident:
			key = td.p.rel + "." + x.Name
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			if !ok {
				return typeDecl{}, nil, false
			}
			ip := td.p.imports[td.file][id.Name]
			q, ok := byPath[ip]
			if !ok {
				return typeDecl{}, nil, false
			}
			key = q.rel + "." + x.Sel.Name
		default:
			return typeDecl{}, nil, false
		}
		d, ok := types[key]
		if !ok {
			return typeDecl{}, nil, false
		}
		return resolve(d, d.spec.Type, depth+1)
	}
	fieldsOf := func(st *ast.StructType) (names []string, allExported bool) {
		allExported = true
		for _, f := range st.Fields.List {
			if len(f.Names) == 0 { // embedded
				t := f.Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				n := ""
				switch x := t.(type) {
				case *ast.Ident:
					n = x.Name
				case *ast.SelectorExpr:
					n = x.Sel.Name
				}
				if ast.IsExported(n) {
					names = append(names, n)
				} else {
					allExported = false
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					names = append(names, n.Name)
				} else {
					allExported = false
				}
			}
		}
		return names, allExported
	}

	found := map[string]*optStruct{}
	var order []string
	var add func(td typeDecl, why string)
	add = func(td typeDecl, why string) {
		key := td.p.rel + "." + td.spec.Name.Name
		viaField := strings.HasPrefix(why, "field of ")
		if _, ok := found[key]; ok {
			return
		}
		// A struct of an internal package counts when a public option
		// struct holds it: the user fills in its fields all the same.
		if !viaField && (!public(td.p) || !td.spec.Name.IsExported()) {
			return
		}
		sd, st, ok := resolve(td, td.spec.Type, 0)
		if !ok {
			return
		}
		names, allExported := fieldsOf(st)
		if why != "name" && (!allExported || len(names) == 0) {
			return
		}
		found[key] = &optStruct{pkg: td.p.rel, name: td.spec.Name.Name, why: why, fields: names}
		order = append(order, key)
		// Rule 2: the struct types of its exported fields.
		for _, f := range st.Fields.List {
			exported := len(f.Names) == 0
			for _, n := range f.Names {
				exported = exported || n.IsExported()
			}
			if !exported {
				continue
			}
			if fd, _, ok := resolve(sd, f.Type, 0); ok {
				add(fieldDecl(sd, f.Type, types, byPath, fd), "field of "+td.p.rel+"."+td.spec.Name.Name)
			}
		}
	}
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Rule 1: by name.
	for _, k := range keys {
		td := types[k]
		n := td.spec.Name.Name
		if n == "Options" || n == "Config" || strings.HasSuffix(n, "Options") || strings.HasSuffix(n, "Policy") || strings.HasSuffix(n, "Config") {
			add(td, "name")
		}
	}
	// Rule 3: used as options: a struct of exported fields only, taken by
	// value by an exported constructor, returned by nothing exported.
	returned := map[string]bool{}
	for _, p := range all {
		for i, f := range p.files {
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() || fd.Type.Results == nil {
					continue
				}
				for _, r := range fd.Type.Results.List {
					if d, ok := namedDecl(typeDecl{p, i, nil}, r.Type, types, byPath); ok {
						returned[d.p.rel+"."+d.spec.Name.Name] = true
					}
				}
			}
		}
	}
	for _, p := range all {
		for i, f := range p.files {
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.Params == nil || !public(p) {
					continue
				}
				if n := fd.Name.Name; !strings.HasPrefix(n, "New") && !strings.HasPrefix(n, "Wrap") && !strings.HasPrefix(n, "From") {
					continue
				}
				for _, prm := range fd.Type.Params.List {
					if _, ptr := prm.Type.(*ast.StarExpr); ptr {
						continue
					}
					td := typeDecl{p, i, nil}
					d, ok := namedDecl(td, prm.Type, types, byPath)
					if !ok || returned[d.p.rel+"."+d.spec.Name.Name] {
						continue
					}
					_, st, ok := resolve(d, d.spec.Type, 0)
					if !ok {
						continue
					}
					if _, allExported := fieldsOf(st); allExported {
						add(d, "parameter of "+fd.Name.Name)
					}
				}
			}
		}
	}
	out := make([]optStruct, 0, len(order))
	for _, k := range order {
		out = append(out, *found[k])
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pkg != out[j].pkg {
			return out[i].pkg < out[j].pkg
		}
		return out[i].name < out[j].name
	})
	return out
}

// namedDecl returns the declaration a type expression (T or pkg.T) names,
// without following aliases.
func namedDecl(td typeDecl, e ast.Expr, types map[string]typeDecl, byPath map[string]*pkg) (typeDecl, bool) {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.Ident:
		d, ok := types[td.p.rel+"."+x.Name]
		return d, ok
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok {
			return typeDecl{}, false
		}
		q, ok := byPath[td.p.imports[td.file][id.Name]]
		if !ok {
			return typeDecl{}, false
		}
		d, ok := types[q.rel+"."+x.Sel.Name]
		return d, ok
	}
	return typeDecl{}, false
}

// fieldDecl returns the declaration a field's type names (the public name
// the user writes, not an alias's internal target), falling back to the
// resolved struct's declaration.
func fieldDecl(owner typeDecl, e ast.Expr, types map[string]typeDecl, byPath map[string]*pkg, resolved typeDecl) typeDecl {
	if d, ok := namedDecl(owner, e, types, byPath); ok {
		return d
	}
	return resolved
}
