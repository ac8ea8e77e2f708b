package canonical

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// Recognizer decides from an object's content whether it is in a shape. It
// must not modify obj and must not look at apiVersion to decide (the Gateway API versioning guide:
// apiVersion names the schema of the request, not what is stored). It must be
// safe for concurrent use.
type Recognizer func(obj *unstructured.Unstructured) bool

// ConvertFunc converts obj in place from one shape to the adjacent one. obj is
// always a private deep copy, so the function may modify it freely. It must be
// safe for concurrent use (it is called from watch goroutines).
type ConvertFunc func(obj *unstructured.Unstructured) error

// Shape is one named set of fields with their semantics (the Gateway API versioning guide's
// "Version"), for example "v1alpha1".
type Shape struct {
	// Name identifies the shape in logs, metrics and errors. Required, unique.
	Name string
	// Recognize claims objects in this shape. Required.
	Recognize Recognizer
	// Upgrade converts an object in this shape to the next shape of the
	// chain. Required for every shape before the canonical one; ignored for
	// the canonical shape and the ones after it.
	Upgrade ConvertFunc
	// Downgrade converts an object in the next shape back to this shape.
	// Optional; the Gateway API versioning guide requires it for semantic breaking changes within an
	// experimental channel. The decorator never downgrades; RoundTrip does.
	Downgrade ConvertFunc
}

// Chain is an ordered list of shapes, oldest first, with one canonical shape.
// It is immutable and safe for concurrent use.
type Chain struct {
	shapes    []Shape
	canonical int
}

// NewChain returns the chain of shapes (oldest first) whose canonical shape is
// the one named canonical. Shapes after the canonical one are newer shapes the
// controller knows exist but does not support: objects in them are rejected
// with "newer-shape". So one published definition of an API's shapes can
// serve every controller version, each choosing the newest shape it
// understands as canonical.
//
// Errors match errInvalidChain: no shapes, an empty or duplicate name, a nil
// Recognize, an unknown canonical name, or a shape before the canonical one
// without Upgrade.
func NewChain(canonical string, shapes ...Shape) (*Chain, error) {
	if len(shapes) == 0 {
		return nil, fmt.Errorf("%w: no shapes", errInvalidChain)
	}
	c := &Chain{shapes: append([]Shape(nil), shapes...), canonical: -1}
	seen := make(map[string]bool, len(shapes))
	for i, s := range c.shapes {
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("%w: shape #%d has no name", errInvalidChain, i)
		case seen[s.Name]:
			return nil, fmt.Errorf("%w: shape %q appears twice", errInvalidChain, s.Name)
		case s.Recognize == nil:
			return nil, fmt.Errorf("%w: shape %q has no recogniser", errInvalidChain, s.Name)
		}
		seen[s.Name] = true
		if s.Name == canonical {
			c.canonical = i
		}
	}
	if c.canonical < 0 {
		return nil, fmt.Errorf("%w: canonical shape %q is not in the chain", errInvalidChain, canonical)
	}
	for i := 0; i < c.canonical; i++ {
		if c.shapes[i].Upgrade == nil {
			return nil, fmt.Errorf("%w: shape %q is older than the canonical shape %q but has no Upgrade",
				errInvalidChain, c.shapes[i].Name, canonical)
		}
	}
	return c, nil
}

// Canonical returns the name of the canonical shape.
func (c *Chain) canonicalName() string { return c.shapes[c.canonical].Name }

// Shapes returns the shape names, oldest first.
func (c *Chain) shapeNames() []string {
	out := make([]string, len(c.shapes))
	for i, s := range c.shapes {
		out[i] = s.Name
	}
	return out
}

// shapeOf returns the shape of obj: the newest shape whose recogniser claims
// it (newer shapes first, then the canonical one, then older ones). ok is
// false when no recogniser claims obj. A recogniser that panics is reported as
// a *panicError.
//
// Newest first matters with x-kubernetes-preserve-unknown-fields, where an
// older writer can leave its fields next to newer ones: write recognisers so
// that they exclude each other where that is ambiguous (for example "has
// spec.tls" for the old shape and "lacks spec.tls" for the new one, which
// makes an object carrying both old, as the Gateway API versioning guide's conversion rule treats it).
func (c *Chain) shapeOf(obj *unstructured.Unstructured) (shape string, ok bool, err error) {
	i, err := c.classify(obj)
	if err != nil || i < 0 {
		return "", false, err
	}
	return c.shapes[i].Name, true, nil
}

func (c *Chain) classify(obj *unstructured.Unstructured) (int, error) {
	for i := len(c.shapes) - 1; i >= 0; i-- {
		claimed, err := c.recognize(i, obj)
		if err != nil {
			return -1, err
		}
		if claimed {
			return i, nil
		}
	}
	return -1, nil
}

func (c *Chain) recognize(i int, obj *unstructured.Unstructured) (claimed bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{Func: "recognize " + c.shapes[i].Name, Value: v}
		}
	}()
	return c.shapes[i].Recognize(obj), nil
}

// Canonicalize returns obj in the canonical shape. When obj is already
// canonical it is returned as is (not copied); otherwise the result is a deep
// copy of obj converted step by step, and obj is never modified. from is the
// shape obj was recognised in. After converting, the canonical recogniser must
// claim the result, or the conversion counts as failed.
//
// Errors are *RejectedError (errors.As), whose Reason says why. Panics in
// user functions are recovered and reported.
func (c *Chain) Canonicalize(obj *unstructured.Unstructured) (out *unstructured.Unstructured, from string, err error) {
	i, err := c.classify(obj)
	if err != nil {
		return nil, "", c.reject(obj, reason.RecognizerPanicked, "", "", err)
	}
	if i < 0 {
		return nil, "", c.reject(obj, reason.Unrecognized, "", "", nil)
	}
	from = c.shapes[i].Name
	switch {
	case i > c.canonical:
		return nil, from, c.reject(obj, reason.NewerShape, from, "", nil)
	case i == c.canonical:
		return obj, from, nil
	}
	out = obj.DeepCopy()
	if k, err := c.walk(out, i, c.canonical); err != nil {
		return nil, from, c.reject(obj, reason.ConversionFailed, from, c.step(k, k+1), err)
	}
	claimed, err := c.recognize(c.canonical, out)
	if err == nil && !claimed {
		err = fmt.Errorf("the result is not claimed by the recogniser of the canonical shape %q", c.canonicalName())
	}
	if err != nil {
		return nil, from, c.reject(obj, reason.ConversionFailed, from, c.step(i, c.canonical), err)
	}
	return out, from, nil
}

// walk converts obj in place from shape index i to shape index j, upgrading
// when i < j and downgrading when i > j. On failure it returns the lower index
// of the failing step (the step is k->k+1 or k+1->k).
func (c *Chain) walk(obj *unstructured.Unstructured, i, j int) (int, error) {
	for k := i; k < j; k++ {
		if err := c.call("upgrade "+c.step(k, k+1), c.shapes[k].Upgrade, obj); err != nil {
			return k, err
		}
	}
	for k := i; k > j; k-- {
		down := c.shapes[k-1].Downgrade
		if down == nil {
			return k - 1, fmt.Errorf("shape %q has no Downgrade", c.shapes[k-1].Name)
		}
		if err := c.call("downgrade "+c.step(k, k-1), down, obj); err != nil {
			return k - 1, err
		}
	}
	return 0, nil
}

func (c *Chain) call(name string, f ConvertFunc, obj *unstructured.Unstructured) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{Func: name, Value: v}
		}
	}()
	return f(obj)
}

func (c *Chain) step(from, to int) string {
	return c.shapes[from].Name + "->" + c.shapes[to].Name
}

func (c *Chain) reject(obj *unstructured.Unstructured, r reason.Code, shape, step string, err error) *RejectedError {
	return &RejectedError{Reason: fallback.ReasonCode(r), Namespace: obj.GetNamespace(), Name: obj.GetName(), Shape: shape, Step: step, Err: err}
}
