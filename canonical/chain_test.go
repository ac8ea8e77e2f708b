package canonical

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadywatch/steadywatch/fallback"
)

func TestNewChainValidation(t *testing.T) {
	ok := func(*unstructured.Unstructured) bool { return true }
	up := func(*unstructured.Unstructured) error { return nil }
	cases := []struct {
		name      string
		canonical string
		shapes    []Shape
		wantErr   string // "" = valid
	}{
		{"no shapes", "v1", nil, "no shapes"},
		{"empty name", "v1", []Shape{{Recognize: ok}}, "has no name"},
		{"duplicate", "v1", []Shape{{Name: "v1", Recognize: ok}, {Name: "v1", Recognize: ok}}, "appears twice"},
		{"nil recogniser", "v1", []Shape{{Name: "v1"}}, "no recogniser"},
		{"unknown canonical", "v2", []Shape{{Name: "v1", Recognize: ok}}, "not in the chain"},
		{"older without upgrade", "v2", []Shape{{Name: "v1", Recognize: ok}, {Name: "v2", Recognize: ok}}, "has no Upgrade"},
		{"single shape", "v1", []Shape{{Name: "v1", Recognize: ok}}, ""},
		{"newer without upgrade is fine", "v1", []Shape{{Name: "v1", Recognize: ok}, {Name: "v2", Recognize: ok}}, ""},
		{"two shapes", "v2", []Shape{{Name: "v1", Recognize: ok, Upgrade: up}, {Name: "v2", Recognize: ok}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewChain(tc.canonical, tc.shapes...)
			if tc.wantErr == "" {
				if err != nil || c == nil || c.canonicalName() != tc.canonical {
					t.Fatalf("NewChain = %v, %v; want a chain with canonical %q", c, err, tc.canonical)
				}
				return
			}
			if !errors.Is(err, errInvalidChain) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want errInvalidChain containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewChainCopiesShapes(t *testing.T) {
	shapes := btlsShapes()
	c, err := NewChain("v1alpha2", shapes...)
	if err != nil {
		t.Fatal(err)
	}
	shapes[0].Name = "mutated"
	if got := c.shapeNames(); got[0] != "v1alpha1" {
		t.Fatalf("chain shares the caller's slice: Shapes() = %v", got)
	}
}

func TestClassify(t *testing.T) {
	c := btlsChain(t)
	cases := []struct {
		js    string
		shape string
		ok    bool
	}{
		{v1alpha1Obj, "v1alpha1", true},
		{v1alpha2Obj, "v1alpha2", true},
		{v1beta1Obj, "v1beta1", true},
		{unknownObj, "", false},
		// Both tls and validation (a v1alpha1 writer on top of a v1alpha2 object):
		// v1alpha2 excludes tls, so v1alpha1 claims it and the Gateway API versioning guide's rule applies.
		{`{"metadata":{"name":"e"},"spec":{"tls":{"hostname":"old"},"validation":{"hostname":"new"}}}`, "v1alpha1", true},
		// No distinguishing field: both old shapes would fit; newest first wins.
		{`{"metadata":{"name":"f"},"spec":{"targetRefs":[]}}`, "v1alpha2", true},
		// apiVersion is ignored: a v1alpha1 apiVersion with v1alpha2 content is v1alpha2.
		{`{"apiVersion":"gateway.example.io/v1alpha1","metadata":{"name":"g"},"spec":{"validation":{}}}`, "v1alpha2", true},
	}
	for _, tc := range cases {
		u := obj(t, tc.js)
		shape, ok, err := c.shapeOf(u)
		if err != nil || ok != tc.ok || shape != tc.shape {
			t.Errorf("shapeOf(%s) = %q, %v, %v; want %q, %v", u.GetName(), shape, ok, err, tc.shape, tc.ok)
		}
	}
}

func TestCanonicalize(t *testing.T) {
	c := btlsChain(t)

	t.Run("canonical object is returned as is", func(t *testing.T) {
		in := obj(t, v1alpha2Obj)
		out, from, err := c.Canonicalize(in)
		if err != nil || from != "v1alpha2" || out != in {
			t.Fatalf("Canonicalize = %p, %q, %v; want the same pointer %p, v1alpha2, nil", out, from, err, in)
		}
	})

	t.Run("older object is converted on a copy", func(t *testing.T) {
		in := obj(t, v1alpha1Obj)
		before := mustJSON(t, in)
		out, from, err := c.Canonicalize(in)
		if err != nil || from != "v1alpha1" {
			t.Fatalf("Canonicalize: %q, %v", from, err)
		}
		if out == in {
			t.Fatal("converted object is the input pointer")
		}
		if got := mustJSON(t, in); got != before {
			t.Fatalf("input modified:\n%s\n%s", before, got)
		}
		want := `{"apiVersion":"gateway.example.io/v1alpha1","kind":"BackendTLSPolicy","metadata":{"name":"a","namespace":"ns","resourceVersion":"10"},"spec":{"targetRefs":[{"name":"svc"}],"validation":{"caCertRefs":[{"name":"ca"}],"hostname":"a.example"}}}`
		if got := mustJSON(t, out); got != want {
			t.Fatalf("converted:\n got %s\nwant %s", got, want)
		}
		// The copy shares nothing with the input.
		if err := unstructured.SetNestedField(out.Object, "changed", "spec", "validation", "hostname"); err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(t, in); got != before {
			t.Fatalf("output aliases input:\n%s\n%s", before, got)
		}
	})

	rejects := []struct {
		name   string
		js     string
		chain  *Chain
		reason fallback.ReasonCode
		shape  string
	}{
		{"newer shape", v1beta1Obj, c, "newer-shape", "v1beta1"},
		{"unrecognised", unknownObj, c, "unrecognized", ""},
	}
	for _, tc := range rejects {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := tc.chain.Canonicalize(obj(t, tc.js))
			var rej *RejectedError
			if out != nil || !errors.As(err, &rej) || rej.Reason != tc.reason || rej.Shape != tc.shape {
				t.Fatalf("Canonicalize = %v, %v; want reason %s shape %q", out, err, tc.reason, tc.shape)
			}
			if rej.Namespace != "ns" || rej.Name == "" {
				t.Fatalf("rejection lacks the object's identity: %+v", rej)
			}
		})
	}
}

func TestCanonicalizeContainsFailures(t *testing.T) {
	boom := errors.New("boom")
	shapes := func(up ConvertFunc, rec Recognizer) []Shape {
		s := btlsShapes()
		if up != nil {
			s[0].Upgrade = up
		}
		if rec != nil {
			s[1].Recognize = rec
		}
		return s
	}
	cases := []struct {
		name   string
		shapes []Shape
		reason fallback.ReasonCode
		check  func(t *testing.T, err error)
	}{
		{"upgrade returns an error", shapes(func(*unstructured.Unstructured) error { return boom }, nil), "conversion-failed",
			func(t *testing.T, err error) {
				if !errors.Is(err, boom) {
					t.Errorf("%v does not wrap the conversion's error", err)
				}
			}},
		{"upgrade panics", shapes(func(*unstructured.Unstructured) error { panic("kaput") }, nil), "conversion-failed",
			func(t *testing.T, err error) {
				var p *panicError
				if !errors.As(err, &p) || p.Value != "kaput" || p.Func != "upgrade v1alpha1->v1alpha2" {
					t.Errorf("%v: want a *panicError from the upgrade", err)
				}
			}},
		{"upgrade result not canonical", shapes(func(*unstructured.Unstructured) error { return nil }, nil), "conversion-failed",
			func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "not claimed by the recogniser of the canonical shape") {
					t.Errorf("%v: want the result check to fail", err)
				}
			}},
		{"recogniser panics", shapes(nil, func(*unstructured.Unstructured) bool { panic("rec") }), "recognizer-panicked",
			func(t *testing.T, err error) {
				var p *panicError
				if !errors.As(err, &p) || p.Func != "recognize v1alpha2" {
					t.Errorf("%v: want a *panicError from the recogniser", err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewChain("v1alpha2", tc.shapes...)
			if err != nil {
				t.Fatal(err)
			}
			in := obj(t, v1alpha1Obj)
			before := mustJSON(t, in)
			_, _, err = c.Canonicalize(in)
			var rej *RejectedError
			if !errors.As(err, &rej) || rej.Reason != tc.reason {
				t.Fatalf("err = %v; want reason %s", err, tc.reason)
			}
			tc.check(t, err)
			if got := mustJSON(t, in); got != before {
				t.Fatalf("input modified by a failing conversion")
			}
		})
	}
}

func TestRejectedErrorMessageHasNoContent(t *testing.T) {
	c := btlsChain(t)
	_, _, err := c.Canonicalize(obj(t, unknownObj))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, secret := range []string{"d.example", "cookie"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q leaks object content %q", err, secret)
		}
	}
	if !strings.Contains(err.Error(), "ns/d") || !strings.Contains(err.Error(), "unrecognized") {
		t.Fatalf("error %q lacks identity or reason", err)
	}
}
