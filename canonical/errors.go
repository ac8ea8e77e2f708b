package canonical

import (
	"errors"
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// ErrInvalidChain is matched (errors.Is) by every error NewChain returns.
var ErrInvalidChain = errors.New("canonical: invalid chain")

// ErrRejected is matched (errors.Is) by every *RejectedError, whatever its
// reason. The per-reason sentinels below are matched as well.
var ErrRejected = errors.New("canonical: object rejected")

// Per-reason sentinels, matched by a *RejectedError with that Reason.
var (
	ErrNewerShape         = errors.New("canonical: object is in a shape newer than the canonical one")
	ErrUnrecognized       = errors.New("canonical: no recogniser claims the object")
	ErrConversionFailed   = errors.New("canonical: conversion failed")
	ErrRecognizerPanicked = errors.New("canonical: recogniser panicked")
	ErrNotUnstructured    = errors.New("canonical: object is not *unstructured.Unstructured")
)

// sentinel returns the per-reason sentinel error of r (nil for none).
func sentinel(r fallback.ReasonCode) error {
	switch reason.Code(r) {
	case reason.NewerShape:
		return ErrNewerShape
	case reason.Unrecognized:
		return ErrUnrecognized
	case reason.ConversionFailed:
		return ErrConversionFailed
	case reason.RecognizerPanicked:
		return ErrRecognizerPanicked
	case reason.NotUnstructured:
		return ErrNotUnstructured
	}
	return nil
}

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
	// Err is the underlying error: a conversion's error, a *PanicError, or nil.
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

// Is matches ErrRejected and the sentinel of e.Reason.
func (e *RejectedError) Is(target error) bool {
	return target == ErrRejected || (target != nil && target == sentinel(e.Reason))
}

// PanicError is a panic recovered from a user function (recogniser or conversion).
type PanicError struct {
	// Func names the function: "recognize v1alpha2", "upgrade v1alpha1->v1alpha2", ...
	Func  string
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.Func, e.Value) }

// RoundTripError is one sample whose conversion there and back was not the identity.
type RoundTripError struct {
	Sample string // namespace/name of the sample, or its index "#3" when it has no name
	From   string // the sample's shape
	Via    string // the shape converted to and back from
	// Diff names the first difference, e.g. `spec.validation.hostname: "a" != "b"`.
	// Values of fields are included: samples are test data, not live objects.
	Diff string
	// Err is set when a conversion on the way failed instead.
	Err error
}

func (e *RoundTripError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("canonical: round trip of %s (%s via %s): %v", e.Sample, e.From, e.Via, e.Err)
	}
	return fmt.Sprintf("canonical: round trip of %s (%s via %s) changed it: %s", e.Sample, e.From, e.Via, e.Diff)
}

func (e *RoundTripError) Unwrap() error { return e.Err }
