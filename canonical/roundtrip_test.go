package canonical

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRoundTripGuideExample(t *testing.T) {
	c := btlsChain(t)
	if err := c.RoundTrip(obj(t, v1alpha1Obj), obj(t, v1alpha2Obj)); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTripDoesNotModifySamples(t *testing.T) {
	c := btlsChain(t)
	s := obj(t, v1alpha1Obj)
	before := mustJSON(t, s)
	if err := c.RoundTrip(s); err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, s) != before {
		t.Fatal("RoundTrip modified its sample")
	}
}

func TestRoundTripFindsLossyConversions(t *testing.T) {
	lossy := btlsShapes()
	// Downgrade forgets spec.validation.hostname.
	lossy[0].Downgrade = func(u *unstructured.Unstructured) error {
		unstructured.RemoveNestedField(u.Object, "spec", "validation", "hostname")
		return MoveField([]string{"spec", "validation"}, []string{"spec", "tls"})(u)
	}
	c, err := NewChain("v1alpha2", lossy...)
	if err != nil {
		t.Fatal(err)
	}
	err = c.RoundTrip(obj(t, v1alpha1Obj), obj(t, v1alpha2Obj))
	var rt *roundTripError
	if !errors.As(err, &rt) {
		t.Fatalf("err = %v, want *roundTripError", err)
	}
	// Both samples fail: one via v1alpha2, the other via v1alpha1.
	msg := err.Error()
	for _, want := range []string{
		"ns/a (v1alpha1 via v1alpha2) changed it: spec.tls.hostname: removed",
		"ns/b (v1alpha2 via v1alpha1) changed it: spec.validation.hostname: removed",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

func TestRoundTripIntermediateMustBeRecognised(t *testing.T) {
	s := btlsShapes()
	s[0].Upgrade = func(*unstructured.Unstructured) error { return nil } // leaves spec.tls
	s[0].Downgrade = func(*unstructured.Unstructured) error { return nil }
	c, err := NewChain("v1alpha2", s...)
	if err != nil {
		t.Fatal(err)
	}
	err = c.RoundTrip(obj(t, v1alpha1Obj))
	if err == nil || !strings.Contains(err.Error(), "after converting to v1alpha2 the object is recognised as v1alpha1") {
		t.Fatalf("err = %v", err)
	}
}

func TestRoundTripRejectsUnusableSamples(t *testing.T) {
	oneWay := btlsShapes()
	oneWay[0].Downgrade = nil
	c1, err := NewChain("v1alpha2", oneWay...)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		chain *Chain
		js    string
		want  error
	}{
		{"not bidirectional", c1, v1alpha1Obj, errNotBidirectional},
		{"newer shape", btlsChain(t), v1beta1Obj, errNewerShape},
		{"unrecognised", btlsChain(t), unknownObj, errUnrecognized},
	}
	for _, tc := range cases {
		if err := tc.chain.RoundTrip(obj(t, tc.js)); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := btlsChain(t).RoundTrip(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"tls": 1, "bad": struct{}{}}}}); err == nil {
		t.Error("a sample with a non-JSON value passed")
	}
}

// --- Property tests: random objects in each old shape round-trip. ---

// genValue returns a random JSON value of bounded depth, with the types the
// apimachinery decoders produce (int64, float64, string, bool, nil, []any,
// map[string]any).
func genValue(r *rand.Rand, depth int) any {
	k := r.Intn(8)
	if depth <= 0 && k >= 5 {
		k = r.Intn(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return int64(r.Intn(2000) - 1000)
	case 3:
		return float64(r.Intn(1000)) + 0.5
	case 4:
		return genString(r)
	case 5:
		n := r.Intn(4)
		l := make([]any, n)
		for i := range l {
			l[i] = genValue(r, depth-1)
		}
		return l
	default:
		n := r.Intn(4)
		m := make(map[string]any, n)
		for i := 0; i < n; i++ {
			m[genString(r)] = genValue(r, depth-1)
		}
		return m
	}
}

func genString(r *rand.Rand) string {
	const alphabet = "abcXYZ-_.é/0 "
	rs := []rune(alphabet)
	n := r.Intn(8)
	b := make([]rune, n)
	for i := range b {
		b[i] = rs[r.Intn(len(rs))]
	}
	return string(b)
}

// btlsSample is a random BackendTLSPolicy in shape v1alpha1 or v1alpha2, for testing/quick.
type btlsSample struct{ U *unstructured.Unstructured }

func (btlsSample) Generate(r *rand.Rand, _ int) reflect.Value {
	spec := map[string]any{}
	if r.Intn(2) == 0 {
		spec["targetRefs"] = genValue(r, 3)
	}
	if r.Intn(2) == 0 {
		spec["options"] = genValue(r, 3)
	}
	field := "validation"
	if r.Intn(2) == 0 {
		field = "tls"
	}
	spec[field] = genValue(r, 4)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.example.io/v1alpha" + fmt.Sprint(1+r.Intn(2)),
		"kind":       "BackendTLSPolicy",
		"metadata":   map[string]any{"name": genString(r) + "x", "namespace": "ns", "labels": map[string]any{"l": genString(r)}},
		"spec":       spec,
	}}
	if r.Intn(3) == 0 {
		u.Object["status"] = genValue(r, 3)
	}
	return reflect.ValueOf(btlsSample{u})
}

func TestRoundTripProperty(t *testing.T) {
	c := btlsChain(t)
	prop := func(s btlsSample) bool {
		if err := c.RoundTrip(s.U); err != nil {
			t.Log(err)
			return false
		}
		return true
	}
	cfg := &quick.Config{MaxCount: 2000, Rand: rand.New(rand.NewSource(2523))}
	if err := quick.Check(prop, cfg); err != nil {
		t.Fatal(err)
	}
}

// The property test must be able to fail: a downgrade that drops a random
// sample's content is caught.
func TestRoundTripPropertyDetectsLoss(t *testing.T) {
	s := btlsShapes()
	s[0].Downgrade = func(u *unstructured.Unstructured) error {
		if err := MoveField([]string{"spec", "validation"}, []string{"spec", "tls"})(u); err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "spec", "options")
		return nil
	}
	c, err := NewChain("v1alpha2", s...)
	if err != nil {
		t.Fatal(err)
	}
	prop := func(s btlsSample) bool { return c.RoundTrip(s.U) == nil }
	cfg := &quick.Config{MaxCount: 500, Rand: rand.New(rand.NewSource(1))}
	if err := quick.Check(prop, cfg); err == nil {
		t.Fatal("a lossy downgrade passed 500 random samples")
	}
}

// Canonicalize on random samples: the result is always claimed by the
// canonical shape, and the input is never modified.
func TestCanonicalizeProperty(t *testing.T) {
	c := btlsChain(t)
	prop := func(s btlsSample) bool {
		before := mustJSON(t, s.U)
		out, _, err := c.Canonicalize(s.U)
		if err != nil {
			t.Log(err)
			return false
		}
		shape, ok, err := c.shapeOf(out)
		return err == nil && ok && shape == "v1alpha2" && mustJSON(t, s.U) == before &&
			!HasField("spec", "tls")(out)
	}
	cfg := &quick.Config{MaxCount: 2000, Rand: rand.New(rand.NewSource(42))}
	if err := quick.Check(prop, cfg); err != nil {
		t.Fatal(err)
	}
}
