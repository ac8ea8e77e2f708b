package engine_test

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/steadywatch/steadywatch/internal/engine"
)

func TestRejectsStreamingList(t *testing.T) {
	listOptions := schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"1.27+ WatchList gate off: 422 cause sendInitialEvents", apierrors.NewInvalid(listOptions, "",
			field.ErrorList{field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")}), true},
		{"1.19-1.26: 422 cause resourceVersionMatch", apierrors.NewInvalid(listOptions, "",
			field.ErrorList{field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden for watch")}), true},
		{"a proxy's 422 with the message only", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`}}, true},
		{"bad label selector (400)", apierrors.NewBadRequest(`unable to parse requirement: found '(', expected: identifier`), false},
		{"422 for another field, message quoting the parameter", apierrors.NewInvalid(listOptions, "",
			field.ErrorList{field.Invalid(field.NewPath("labelSelector"), "sendInitialEvents=x(", "bad selector")}), false},
		{"garbage resourceVersion (400)", apierrors.NewBadRequest(`invalid resource version: strconv.ParseUint: parsing "x": invalid syntax`), false},
		{"a 500 naming sendInitialEvents", apierrors.NewInternalError(errors.New("sendInitialEvents")), false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := engine.RejectsStreamingList(c.err); got != c.want {
			t.Errorf("%s: RejectsStreamingList(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
