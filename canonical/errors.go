package canonical

import (
	"errors"
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
)

// errInvalidChain is matched (errors.Is) by every error NewChain returns.
var errInvalidChain = errors.New("canonical: invalid chain")

// Errors a round trip reports for a sample (RoundTrip), and a list that
// is not unstructured (Wrap).
var (
	errNewerShape      = errors.New("canonical: object is in a shape newer than the canonical one")
	errUnrecognized    = errors.New("canonical: no recogniser claims the object")
	errNotUnstructured = errors.New("canonical: object is not *unstructured.Unstructured")
)

// RejectedError says why one object could not be brought to the canonical
// shape. It never contains the object's content, only its identity.
type RejectedError struct {
	// Reason says why the object was rejected; its value is stable (logs,
	// metrics "canonical:<action>:<reason>", the RejectedAnnotation):
	// "newer-shape", "unrecognized", "conversion-failed",
	// "recognizer-panicked" or "not-unstructured" (docs/reasons.md).
	Reason    fallback.ReasonCode
	Namespace string
	Name      string
	// Shape is the shape a recogniser claimed, if any ("" for "unrecognized").
	Shape string
	// Step is the conversion that failed, "from->to" ("conversion-failed" only).
	Step string
	// Err is the underlying error: a conversion's error, a *panicError, or nil.
	Err error
}

func (e *RejectedError) Error() string {
	msg := fmt.Sprintf("canonical: %s/%s rejected: %s", e.Namespace, e.Name, e.Reason)
	if e.Shape != "" {
		msg += " (shape " + e.Shape + ")"
	}
	if e.Step != "" {
		msg += " at step " + e.Step
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *RejectedError) Unwrap() error { return e.Err }

// panicError is a panic recovered from a user function (recogniser or conversion).
type panicError struct {
	// Func names the function: "recognize v1alpha2", "upgrade v1alpha1->v1alpha2", ...
	Func  string
	Value any
}

func (e *panicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.Func, e.Value) }

// roundTripError is one sample whose conversion there and back was not the identity.
type roundTripError struct {
	Sample string // namespace/name of the sample, or its index "#3" when it has no name
	From   string // the sample's shape
	Via    string // the shape converted to and back from
	// Diff names the first difference, e.g. `spec.validation.hostname: "a" != "b"`.
	// Values of fields are included: samples are test data, not live objects.
	Diff string
	// Err is set when a conversion on the way failed instead.
	Err error
}

func (e *roundTripError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("canonical: round trip of %s (%s via %s): %v", e.Sample, e.From, e.Via, e.Err)
	}
	return fmt.Sprintf("canonical: round trip of %s (%s via %s) changed it: %s", e.Sample, e.From, e.Via, e.Diff)
}

func (e *roundTripError) Unwrap() error { return e.Err }
