package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// defaultConstants are the exported defaults an option's doc may name, by
// name. TestOptionDocsNameTheirDefaults fails on a name a doc uses that is
// not here, so a new one is added.
var defaultConstants = map[string]any{
	"DefaultResponseTimeout": fallback.DefaultResponseTimeout, "DefaultLegacyExactLimit": fallback.DefaultLegacyExactLimit,
}

var (
	// namedDefault: a constant with its value, "DefaultPageSize (500".
	namedDefault = regexp.MustCompile(`\b(Default[A-Z]\w*) \(([-\d.]+ ?[A-Za-z]*)`)
	// literalDefault: "Default 3", "Default 1s", "Default 0:".
	literalDefault = regexp.MustCompile(`\bDefault (-?[\d.]+[a-z]*)\b`)
)

// TestOptionDocsNameTheirDefaults fails when an option's doc states a
// default other than the one the code applies: "DefaultX (v)" anywhere in a
// field's doc must be the constant's value, and "Default v" must be the
// value the options' defaulting gives a zero field (lister.Options.Resolve,
// policy.Policy.WithDefaults), or, for reflector.Options, whose
// defaulting is internal, the constant Default<Field>.
func TestOptionDocsNameTheirDefaults(t *testing.T) {
	resolved := map[string]reflect.Value{
		"lister.Options":    reflect.ValueOf(lister.Options{}.Resolve(nil)),
		"policy.Policy":     reflect.ValueOf(policy.Policy{}.WithDefaults()),
		"reflector.Options": {},
	}
	files := map[string]string{"lister.Options": "lister/options.go", "policy.Policy": "internal/policy/policy.go", "reflector.Options": "reflector/options.go"}
	checked := 0
	for name, file := range files {
		typ := name[strings.Index(name, ".")+1:]
		for field, doc := range fieldDocs(t, filepath.Join("..", "..", file), typ) {
			for _, m := range namedDefault.FindAllStringSubmatch(doc, -1) {
				c, ok := defaultConstants[m[1]]
				if !ok {
					t.Errorf("%s.%s names %s, which defaultConstants does not hold: add it", name, field, m[1])
					continue
				}
				checked++
				if !sameValue(reflect.ValueOf(c), m[2]) {
					t.Errorf("%s.%s's doc says %s is %s; it is %v", name, field, m[1], m[2], c)
				}
			}
			for _, m := range literalDefault.FindAllStringSubmatch(doc, -1) {
				var v reflect.Value
				if r := resolved[name]; r.IsValid() {
					v = r.FieldByName(field)
				} else if c, ok := defaultConstants["Default"+field]; ok {
					v = reflect.ValueOf(c)
				} else {
					continue // no constant: the doc's value is the code's literal (TestEveryOptionIsHonouredOrRejectedOnEveryPath)
				}
				checked++
				if !sameValue(v, m[1]) {
					t.Errorf("%s.%s's doc says Default %s; the default applied is %v", name, field, m[1], v)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d defaults checked: the docs' phrasing changed?", checked)
	}
	t.Logf("%d stated defaults checked", checked)
}

// sameValue reports whether v (an integer or a duration) is the value a
// doc wrote as s ("500", "1.5s", "3m", "16 MiB").
func sameValue(v reflect.Value, s string) bool {
	s = strings.TrimSpace(s)
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		d, err := time.ParseDuration(s)
		return err == nil && d == time.Duration(v.Int())
	}
	mult := int64(1)
	if n, ok := strings.CutSuffix(s, " MiB"); ok {
		s, mult = n, 1<<20
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return err == nil && n*mult == v.Int()
	}
	return false
}

// fieldDocs returns the doc comment of every field of struct typ in file.
func fieldDocs(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fl := range st.Fields.List {
			for _, name := range fl.Names {
				out[name.Name] = strings.Join(strings.Fields(fl.Doc.Text()), " ")
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatalf("%s: no struct %s", file, typ)
	}
	return out
}
