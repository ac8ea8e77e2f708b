package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
)

// Wire spells q on the wire for the belief m, over base (selectors and other
// fields kept). It is the one place that knows the legacy Exact rule: a
// server that ignores resourceVersionMatch serves resourceVersion=N at
// exactly N only with a limit (KEP-2523, Backward Compatibility), so an
// Exact first page without one gets pageSize.
func Wire(q fallback.Query, m MatchSupport, base metav1.ListOptions, pageSize int64) metav1.ListOptions {
	opts := q.ApplyTo(base, m.Form())
	if m.Form() == fallback.Legacy && q.Semantic == fallback.Exact && q.Continue == "" && q.Limit == 0 && pageSize > 0 {
		opts.Limit = pageSize
	}
	return opts
}
