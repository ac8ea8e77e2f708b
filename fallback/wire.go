package fallback

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WireForm says how a Query is spelled on the wire.
type WireForm int

const (
	// Match sends resourceVersionMatch (servers >= 1.19 honour it). The
	// default: when support is unknown steadywatch sends it and verifies
	// the answer (KEP-2523 "Backward Compatibility").
	Match WireForm = iota
	// Legacy spells the semantic without resourceVersionMatch, for servers
	// known to ignore it (KEP-2523 "the legacy behavior applies").
	Legacy
)

func (f WireForm) String() string {
	if f == Legacy {
		return "Legacy"
	}
	return "Match"
}

// DefaultLegacyExactLimit is the limit ListOptions(Legacy) puts on an Exact
// query that has none: legacy servers serve resourceVersion=N at exactly N
// only when a limit is set (KEP-2523: "if non-zero and Limit is set, the
// ResourceVersionMatchExact rule applies implicitly"); without one they
// would apply NotOlderThan.
const DefaultLegacyExactLimit int64 = 500

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
func (q Query) ListOptions(form WireForm) metav1.ListOptions {
	return q.ApplyTo(metav1.ListOptions{}, form)
}

// ApplyTo returns base with resourceVersion, resourceVersionMatch, limit and
// continue replaced by q's wire form; selectors, timeouts and other fields of
// base are kept.
func (q Query) ApplyTo(base metav1.ListOptions, form WireForm) metav1.ListOptions {
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

// Comparison is the result of comparing two resource versions.
type Comparison int

const (
	// Incomparable: at least one is not a decimal uint64 (resource versions
	// are opaque to clients; etcd-backed servers use decimal revisions).
	Incomparable Comparison = iota
	// Older: a < b.
	Older
	// Same: a == b (as strings).
	Same
	// Newer: a > b.
	Newer
)

func (c Comparison) String() string {
	switch c {
	case Older:
		return "older"
	case Same:
		return "same"
	case Newer:
		return "newer"
	default:
		return "incomparable"
	}
}

// CompareRV compares resource versions a and b as uint64 when both parse;
// equal strings are Same even when they do not parse.
func CompareRV(a, b string) Comparison {
	if a == b && a != "" {
		return Same
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return Incomparable
	}
	switch {
	case x < y:
		return Older
	case x > y:
		return Newer
	default:
		return Same
	}
}
