package watchpipe

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Filter is the pipeline's client-side stage: Keep reports whether an
// object belongs to what the watch delivers. An ADDED event it does not keep
// is dropped; a MODIFIED or DELETED one is delivered as a DELETED (the
// object left the set, or was never in it: a store ignores the delete of an
// object it does not hold). It runs on every object event: it must not
// allocate.
type Filter interface {
	Keep(m metav1.Object) bool
}

// LabelFilter keeps objects whose labels match a selector: the selector
// sent to the server, applied again to what comes back.
type LabelFilter struct{ Selector labels.Selector }

// Keep implements Filter.
func (f LabelFilter) Keep(m metav1.Object) bool {
	return f.Selector.Matches(labels.Set(m.GetLabels()))
}
