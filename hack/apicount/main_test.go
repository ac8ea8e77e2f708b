package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMeasureFixture checks every rule of the count on a module built for
// it (testdata/mod; its comments say what each declaration is for).
func TestMeasureFixture(t *testing.T) {
	m, err := measure("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	if m.module != "example.com/mod" {
		t.Errorf("module = %q", m.module)
	}
	// Only pub is public: internal/, pub/internal/deep, the nested module
	// and the main package are not.
	if got := len(m.names); got != 1 {
		t.Fatalf("public packages = %v, want only pub", m.names)
	}
	var got []string
	for _, n := range m.names["pub"] {
		got = append(got, n.kind+" "+n.id)
	}
	want := []string{
		"const C1", "const C2",
		"func F", "func NewThing", "func Parse",
		"method G.Q", "method T.M", "method T.P",
		"type Alias", "type Data", "type Embedded", "type G", "type GuardOptions", "type Handle",
		"type Options", "type Policy", "type T", "type Value",
		"var V",
	}
	if !slices.Equal(got, want) {
		t.Errorf("names of pub:\n got  %v\n want %v", got, want)
	}
	opts := map[string][]string{}
	for _, o := range m.options {
		opts[o.pkg+"."+o.name] = o.fields
	}
	wantOpts := map[string][]string{
		"pub.Options":      {"Policy", "Gate", "Inner", "Embedded"}, // by name; the unexported field is not one
		"pub.Policy":       {"Max", "Min"},                          // field of Options
		"pub.Embedded":     {"X"},                                   // embedded in Options
		"internal/in.Opts": {"A", "B", "C"},                         // an internal struct held by Options
		"pub.GuardOptions": {"A", "B", "C"},                         // by name, an alias measured by its target
		"pub.Data":         {"One", "Two"},                          // taken by NewThing, returned by nothing
		// Not options: Handle (unexported state), Value (returned by Parse),
		// T (taken by no constructor), TestOptions (a test file),
		// NestedOptions (a nested module), ToolConfig (a main package).
	}
	if len(opts) != len(wantOpts) {
		t.Errorf("option structs = %v, want %v", opts, wantOpts)
	}
	for k, w := range wantOpts {
		if !slices.Equal(opts[k], w) {
			t.Errorf("option fields of %s = %v, want %v", k, opts[k], w)
		}
	}
}

// TestTestServerFieldsApart checks that the test server's option fields are
// reported but not counted toward the limit.
func TestTestServerFieldsApart(t *testing.T) {
	m := measurement{options: []optStruct{
		{pkg: "lister", name: "Options", fields: []string{"A", "B"}},
		{pkg: testServerPkg, name: "Options", fields: []string{"C", "D", "E"}},
	}}
	counted, structs, test, testStructs := m.optionFields()
	if counted != 2 || structs != 1 || test != 3 || testStructs != 1 {
		t.Errorf("optionFields = %d %d %d %d, want 2 1 3 1", counted, structs, test, testStructs)
	}
}

func writeBudget(t *testing.T, names, fields int) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "budget.txt")
	body := "# header\nnames " + itoa(names) + " # the ratchet\nfields " + itoa(fields) + "\ntarget-names 300\ntarget-fields 40\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func itoa(n int) string { return strconv.Itoa(n) }

// fixed is the fixture's measurement: 19 names and 15 option fields.
func fixed(t *testing.T) measurement {
	m, err := measure("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	if m.totalNames() != 19 || m.value("fields") != 15 {
		t.Fatalf("fixture measures %d names, %d fields; want 19, 15", m.totalNames(), m.value("fields"))
	}
	return m
}

// TestBudgetRatchet checks that the check fails only above the recorded
// values, and that -update lowers them and never raises them.
func TestBudgetRatchet(t *testing.T) {
	m := fixed(t)
	for _, tc := range []struct {
		names, fields int
		ok            bool
	}{
		{19, 15, true},
		{25, 20, true},
		{18, 15, false},
		{19, 14, false},
	} {
		b, err := readBudget(writeBudget(t, tc.names, tc.fields))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if ok := b.check(&out, m); ok != tc.ok {
			t.Errorf("recorded %d/%d: check = %v, want %v\n%s", tc.names, tc.fields, ok, tc.ok, out.String())
		}
	}

	// Lowering: names 25 -> 19, fields 10 stays 10 (never raised).
	f := writeBudget(t, 25, 10)
	b, err := readBudget(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.lower(f, m); err != nil {
		t.Fatal(err)
	}
	b, err = readBudget(f)
	if err != nil {
		t.Fatal(err)
	}
	if b.current["names"] != 19 || b.current["fields"] != 10 || b.target["names"] != 300 {
		t.Errorf("after lower: current %v target %v, want names 19, fields 10, target-names 300", b.current, b.target)
	}
	body, _ := os.ReadFile(f)
	if !strings.Contains(string(body), "names 19 # the ratchet") || !strings.HasPrefix(string(body), "# header\n") {
		t.Errorf("lower rewrote the file's comments:\n%s", body)
	}
}

func TestBudgetRejectsBadFiles(t *testing.T) {
	for _, body := range []string{
		"names 1\nfields 1\ntarget-names 1\n",                     // a target missing
		"names 1\nfields x\ntarget-names 1\ntarget-fields 1\n",    // not a count
		"names 1\nfields 1\ntarget-names 1\ntarget-fields 1\nz 1", // unknown key
	} {
		f := filepath.Join(t.TempDir(), "b")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readBudget(f); err == nil {
			t.Errorf("readBudget(%q) = nil error", body)
		}
	}
}
