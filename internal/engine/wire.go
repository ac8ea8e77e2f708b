package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	//lint:ignore ST1001 the table reads in the KEP's vocabulary (OK, Gone, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the table reads in the KEP's vocabulary
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// ListOptions returns the wire options (resourceVersion,
// resourceVersionMatch, limit, continue) for q in the given form:
//
//	                 Match                               Legacy
//	continue token   limit=L&continue=T                  same (never RV or match with continue)
//	MostRecent       [limit=L]                           same
//	Any              resourceVersion=0[&limit=L]         same
//	NotOlderThan(N)  rv=N&match=NotOlderThan[&limit=L]   rv=N[&limit=L]; with a limit this is legacy
//	                                                     Exact(N), acceptable: exact N is not older than N
//	Exact(N)         rv=N&match=Exact[&limit=L]          rv=N&limit=L (L=DefaultLegacyExactLimit if unset)
//
// q is assumed valid (see Validate); an invalid query yields options that
// the server would reject.
func ListOptions(q Query, form WireForm) metav1.ListOptions {
	return ApplyTo(q, metav1.ListOptions{}, form)
}

// ApplyTo returns base with resourceVersion, resourceVersionMatch, limit and
// continue replaced by q's wire form; selectors, timeouts and other fields of
// base are kept.
func ApplyTo(q Query, base metav1.ListOptions, form WireForm) metav1.ListOptions {
	o := base
	o.ResourceVersion, o.ResourceVersionMatch, o.Continue = "", "", ""
	o.Limit = q.Limit
	if q.Continue != "" {
		o.Continue = q.Continue
		return o
	}
	switch q.Semantic {
	case Any:
		o.ResourceVersion = "0"
	case NotOlderThan:
		o.ResourceVersion = q.ResourceVersion
		if form == Match {
			o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		}
	case Exact:
		o.ResourceVersion = q.ResourceVersion
		if form == Match {
			o.ResourceVersionMatch = metav1.ResourceVersionMatchExact
		} else if o.Limit == 0 {
			o.Limit = DefaultLegacyExactLimit
		}
	}
	return o
}
