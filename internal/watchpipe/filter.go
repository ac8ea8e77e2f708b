package watchpipe

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
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

// ImmutableFilter is a Filter that reads only fields an object never
// changes (metadata.uid, metadata.namespace: a shard's hash range), so an
// object it does not keep was never in the set: every event for it is
// dropped, whatever its type, instead of a MODIFIED or DELETED being
// delivered as a DELETED.
type ImmutableFilter interface {
	Filter
	Immutable() bool
}

// FilterEvent is the filter stage, the one implementation of it: f's
// verdict for an object event of type t for m (Deliver, DeliverAsDeleted or
// Drop; Deliver when f is nil). Watch.Event runs it before the never-older
// checks; a ListerWatcher decorator that is not under a Pipeline (shard.Wrap
// given to a stock client-go informer) runs it alone.
func FilterEvent(f Filter, t watch.EventType, m metav1.Object) Verdict {
	switch {
	case f == nil || f.Keep(m):
		return Deliver
	case t == watch.Added:
		return Drop
	}
	if i, ok := f.(ImmutableFilter); ok && i.Immutable() {
		return Drop
	}
	return DeliverAsDeleted
}

// FilterSource is implemented by a list/watch client (or the
// cache.ListerWatcher under one) that filters its watch events on the
// client and hands that filter to the pipeline instead (shard.ListerWatcher):
// PipelineFilter returns the Filter, and from then on the source's watches
// deliver every event, for the pipeline's Filter stage to decide. The drop-in
// ListerWatcher and reflector.New call it once, when they build their
// Pipeline.
// The method's result is spelled as Filter's method set, so that a
// FilterSource outside this internal package (shard) names no internal type
// in its exported API.
type FilterSource interface {
	PipelineFilter() interface{ Keep(m metav1.Object) bool }
}

// FilterOf returns x's Filter when x is a FilterSource, nil otherwise.
func FilterOf(x any) Filter {
	if s, ok := x.(FilterSource); ok {
		if f := s.PipelineFilter(); f != nil {
			return f
		}
	}
	return nil
}

// LabelFilter keeps objects whose labels match a selector: the selector
// sent to the server, applied again to what comes back.
type LabelFilter struct{ Selector labels.Selector }

// Keep implements Filter.
func (f LabelFilter) Keep(m metav1.Object) bool {
	return f.Selector.Matches(labels.Set(m.GetLabels()))
}
