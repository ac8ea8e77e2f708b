package reason

import (
	"bytes"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

var update = flag.Bool("update", false, "rewrite docs/reasons.md from the code")

// TestAllListsEveryConstantOnce: every constant of this package is in All
// exactly once, no two constants share a value, and every entry names who
// reports it.
func TestAllListsEveryConstantOnce(t *testing.T) {
	consts := testfake.DirStringConsts(t, ".")
	byValue := map[string]string{}
	for _, c := range consts {
		if other, ok := byValue[c.Value]; ok {
			t.Errorf("%q is defined twice: %s and %s", c.Value, other, c.Name)
		}
		byValue[c.Value] = c.Name
	}
	seen := map[Code]int{}
	for _, e := range All() {
		seen[e.Code]++
		if e.By == 0 {
			t.Errorf("%q: no part of the SDK reports it", e.Code)
		}
		if _, ok := byValue[string(e.Code)]; !ok {
			t.Errorf("%q is in All but is not a constant of this package", e.Code)
		}
	}
	for _, c := range consts {
		if n := seen[Code(c.Value)]; n != 1 {
			t.Errorf("%s (%q) is in All %d times, want once", c.Name, c.Value, n)
		}
	}
	all := All()
	all[0].Code = "mutated"
	if All()[0].Code == "mutated" {
		t.Error("All returns shared state")
	}
}

// TestNoReasonDefinedElsewhere: no other package of the module (nor the
// nested modules e2e, examples, cmd and hack) declares a constant whose
// value is a reason code. A reason has one definition, here.
func TestNoReasonDefinedElsewhere(t *testing.T) {
	codes := map[string]bool{}
	for _, e := range All() {
		codes[string(e.Code)] = true
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	here, _ := filepath.Abs(".")
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p == here || n == "testdata" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		checked++
		for _, c := range testfake.FileStringConsts(fset, af) {
			rel, _ := filepath.Rel(root, c.Pos.Filename)
			if codes[c.Value] && !otherVocabulary[rel+" "+c.Name] {
				t.Errorf("%s:%d: %s = %q defines a reason code again; use internal/reason's constant (or its documented value)", rel, c.Pos.Line, c.Name, c.Value)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files under %s; the walk did not find the module", checked, root)
	}
}

// otherVocabulary are constants ("file name") whose value is also a reason
// code's but that name something else.
var otherVocabulary = map[string]bool{
	"cmd/kubectl-steadywatch/proxycells.go ResultOK": true, // a probe's result cell
}

var sources = []struct {
	src         Source
	name, where string
}{
	{Lister, "lister", "a list call (package lister): the Reason of a `fallback.Event` and of a `*lister.Error`; `reason` of `steadywatch_fallbacks_total`"},
	{DropIn, "drop-in", "the ListerWatcher under client-go's own reflector (the drop-in informer, the informer factory): `cause` of `steadywatch_relists_total`, `reason` of `steadywatch_watch_restarts_total` and of `steadywatch_fallbacks_total`"},
	{Reflector, "reflector", "`reflector.New`'s state machine: `reason` of `steadywatch_transitions_total`, `cause` of `steadywatch_relists_total`, `reason` of `steadywatch_watch_restarts_total`"},
	{Compat, "compat", "a belief about the server changed (package compat): `reason` of `steadywatch_fallbacks_total` under the name `compat` or `compat/<group/version>`"},
	{Shard, "shard", "a sharded ListerWatcher (package shard): `reason` of `steadywatch_fallbacks_total`"},
	{Canonical, "canonical", "a canonical ListerWatcher rejected an object (package canonical): the Reason of a `*canonical.RejectedError`, the tombstone's annotation, and `canonical:<action>:<reason>` as the `reason` of `steadywatch_fallbacks_total`"},
	{ReadYourWrites, "readyourwrites", "a read of package readyourwrites went to the server instead of the cache: `reason` of `steadywatch_read_fallbacks_total`"},
}

// Meanings returns each code's meaning: its constant's doc comment, or for
// a capability belief, what the code says.
func meanings(t *testing.T) map[Code]string {
	m := map[Code]string{}
	for _, c := range testfake.DirStringConsts(t, ".") {
		m[Code(c.Value)] = c.Doc
	}
	for _, code := range By(Compat) {
		if capability, support, ok := strings.Cut(strings.TrimPrefix(string(code), "compat:"), "="); ok {
			m[code] = fmt.Sprintf("The belief about the server's `%s` capability is now *%s* (from `/version` or from what the server did).", capability, support)
		}
	}
	return m
}

// TestDocsListEveryReason keeps docs/reasons.md the list of every reason
// code with its meaning: it fails when the page and All differ (a code
// missing from the page, or a code on the page that is not one), and
// -update rewrites the page.
func TestDocsListEveryReason(t *testing.T) {
	m := meanings(t)
	var b bytes.Buffer
	b.WriteString(docsHeader)
	for _, s := range sources {
		fmt.Fprintf(&b, "| %s | %s |\n", s.name, s.where)
	}
	b.WriteString("\n## Every code\n\n| reason | reported by | meaning |\n|---|---|---|\n")
	for _, e := range All() {
		var by []string
		for _, s := range sources {
			if e.By&s.src != 0 {
				by = append(by, s.name)
			}
		}
		d := m[e.Code]
		if d == "" {
			t.Errorf("%q has no doc comment to say what it means", e.Code)
		} else {
			d = strings.ToUpper(d[:1]) + d[1:]
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", e.Code, strings.Join(by, ", "), strings.ReplaceAll(d, "|", `\|`))
	}
	const path = "../../docs/reasons.md"
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var onPage []Code
	for _, line := range strings.Split(string(page), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if code, _, ok := strings.Cut(rest, "` |"); ok {
				onPage = append(onPage, Code(code))
			}
		}
	}
	var listed []Code
	for _, e := range All() {
		listed = append(listed, e.Code)
		if !slices.Contains(onPage, e.Code) {
			t.Errorf("docs/reasons.md does not list %q", e.Code)
		}
	}
	for _, c := range onPage {
		if !slices.Contains(listed, c) {
			t.Errorf("docs/reasons.md lists %q, which is not a reason code", c)
		}
	}
	if !bytes.Equal(page, b.Bytes()) {
		t.Error("docs/reasons.md is not what the code generates; run go test ./internal/reason -update")
	}
}

const docsHeader = `# Reason codes

Every decision steadywatch takes that a user may need to explain is a **reason code**: the ` + "`reason`" + `
(or ` + "`cause`" + `) label of a metric, the ` + "`reason`" + ` key of the log line (at verbosity 2 for fallbacks), and
the Reason of a ` + "`fallback.Event`" + `, a ` + "`*lister.Error`" + ` and a ` + "`*canonical.RejectedError`" + `. Its Go type is
` + "`fallback.ReasonCode`" + `; compare it with the values below (` + "`err.Reason == \"exact-gone\"`" + `).
` + "`fallback.Reasons()`" + ` returns the same list. The values are stable: dashboards and alerts may match
them. [troubleshooting.md](troubleshooting.md) says what to do about the common ones.

Generated from the code by ` + "`go test ./internal/reason -update`" + `; a unit test fails when this page and the
code differ.

## Who reports them

| reported by | where the code appears |
|---|---|
`
