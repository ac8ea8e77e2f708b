package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// errNotBidirectional is the Err of a roundTripError for a sample whose shape
// has no neighbour reachable by both an Upgrade and a Downgrade.
var errNotBidirectional = errors.New("canonical: no bidirectional step from this shape")

// RoundTrip checks bidirectional conversions on samples (the Gateway API versioning guide: "Conversions
// Need to be Bidirectional Within Experimental"). For each sample, in the
// shape its recognisers claim (at most the canonical one), and for each other
// shape up to the canonical one that can be reached and left again through
// steps that have both Upgrade and Downgrade, it converts a copy there and
// back and requires:
//
//   - the intermediate object is claimed by the target shape (newest-first, as
//     shapeOf), and the final one by the sample's own shape;
//   - the final object equals the sample, compared as JSON (so int and int64
//     of the same value are equal, as they are on the wire).
//
// It returns nil or the errors.Join of one *roundTripError per failure. A
// sample with no such shape to visit fails with errNotBidirectional. Samples
// are not modified. Use it from tests, with hand-written samples and with
// generated ones (property tests).
func (c *Chain) RoundTrip(samples ...*unstructured.Unstructured) error {
	var errs []error
	for n, s := range samples {
		errs = append(errs, c.roundTrip(n, s)...)
	}
	return errors.Join(errs...)
}

func (c *Chain) roundTrip(n int, sample *unstructured.Unstructured) []error {
	id := fmt.Sprintf("#%d", n)
	if sample == nil {
		return []error{&roundTripError{Sample: id, Err: errors.New("nil sample")}}
	}
	if sample.GetName() != "" {
		id = sample.GetNamespace() + "/" + sample.GetName()
	}
	i, err := c.classify(sample)
	switch {
	case err != nil:
		return []error{&roundTripError{Sample: id, Err: err}}
	case i < 0:
		return []error{&roundTripError{Sample: id, Err: errUnrecognized}}
	case i > c.canonical:
		return []error{&roundTripError{Sample: id, From: c.shapes[i].Name, Err: errNewerShape}}
	}
	want, err := jsonOf(sample.Object)
	if err != nil {
		return []error{&roundTripError{Sample: id, From: c.shapes[i].Name, Err: err}}
	}
	var errs []error
	visited := 0
	for j := 0; j <= c.canonical; j++ {
		if j == i || !c.bidirectional(min(i, j), max(i, j)) {
			continue
		}
		visited++
		fail := func(diff string, err error) {
			errs = append(errs, &roundTripError{Sample: id, From: c.shapes[i].Name, Via: c.shapes[j].Name, Diff: diff, Err: err})
		}
		obj, err := copyObject(sample)
		if err != nil {
			fail("", err)
			continue
		}
		if _, err := c.walk(obj, i, j); err != nil {
			fail("", err)
			continue
		}
		if got, err := c.classify(obj); err != nil || got != j {
			fail("", fmt.Errorf("after converting to %s the object is recognised as %s", c.shapes[j].Name, c.name(got, err)))
			continue
		}
		if _, err := c.walk(obj, j, i); err != nil {
			fail("", err)
			continue
		}
		if got, err := c.classify(obj); err != nil || got != i {
			fail("", fmt.Errorf("after converting back the object is recognised as %s", c.name(got, err)))
			continue
		}
		got, err := jsonOf(obj.Object)
		if err != nil {
			fail("", err)
			continue
		}
		if !bytes.Equal(got, want) {
			fail(firstDiff(want, got), nil)
		}
	}
	if visited == 0 {
		errs = append(errs, &roundTripError{Sample: id, From: c.shapes[i].Name, Err: errNotBidirectional})
	}
	return errs
}

// bidirectional says whether every step between shape indexes lo and hi has
// both an Upgrade and a Downgrade.
func (c *Chain) bidirectional(lo, hi int) bool {
	for k := lo; k < hi; k++ {
		if c.shapes[k].Upgrade == nil || c.shapes[k].Downgrade == nil {
			return false
		}
	}
	return true
}

func (c *Chain) name(i int, err error) string {
	switch {
	case err != nil:
		return "(error: " + err.Error() + ")"
	case i < 0:
		return "(unrecognised)"
	}
	return c.shapes[i].Name
}

// copyObject deep-copies obj, reporting (instead of panicking on) values that
// are not JSON-compatible.
func copyObject(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	v, err := deepCopyJSON(obj.Object)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return &unstructured.Unstructured{Object: m}, nil
}

func jsonOf(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not JSON-serialisable: %w", err)
	}
	return b, nil
}

// firstDiff describes the first difference between two JSON documents, by
// path. Both are valid JSON (they were marshalled by jsonOf).
func firstDiff(a, b []byte) string {
	var va, vb any
	_ = json.Unmarshal(a, &va)
	_ = json.Unmarshal(b, &vb)
	if d := diffValue(nil, va, vb); d != "" {
		return d
	}
	return "documents differ"
}

func diffValue(path []string, a, b any) string {
	at := func() string {
		if len(path) == 0 {
			return "(root)"
		}
		return strings.Join(path, ".")
	}
	switch ta := a.(type) {
	case map[string]any:
		tb, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %s != %s", at(), short(a), short(b))
		}
		keys := make([]string, 0, len(ta)+len(tb))
		for k := range ta {
			keys = append(keys, k)
		}
		for k := range tb {
			if _, ok := ta[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			va, oka := ta[k]
			vb, okb := tb[k]
			p := append(slices.Clone(path), k)
			switch {
			case !oka:
				return fmt.Sprintf("%s: added", strings.Join(p, "."))
			case !okb:
				return fmt.Sprintf("%s: removed", strings.Join(p, "."))
			}
			if d := diffValue(p, va, vb); d != "" {
				return d
			}
		}
		return ""
	case []any:
		tb, ok := b.([]any)
		if !ok || len(ta) != len(tb) {
			return fmt.Sprintf("%s: %s != %s", at(), short(a), short(b))
		}
		for i := range ta {
			if d := diffValue(append(slices.Clone(path), fmt.Sprintf("[%d]", i)), ta[i], tb[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			return fmt.Sprintf("%s: %s != %s", at(), short(a), short(b))
		}
		return ""
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}
