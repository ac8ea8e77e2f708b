package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	//lint:ignore ST1001 the table reads in the KEP's vocabulary (OK, Gone, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the table reads in the KEP's vocabulary
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// FromListOptions interprets wire ListOptions the way an apiserver would
// (API Concepts list table; KEP-2523 "legacy behavior"), so callers that speak
// ListOptions (client-go's reflector, pager) get explicit semantics:
//
//	match unset,         RV unset          -> MostRecent
//	match unset,         RV "0"            -> Any
//	match unset,         RV N, no limit    -> NotOlderThan(N)
//	match unset,         RV N, limit       -> Exact(N)   (legacy: limit makes it Exact)
//	match Exact,         RV N              -> Exact(N)
//	match NotOlderThan,  RV "0"            -> Any
//	match NotOlderThan,  RV N              -> NotOlderThan(N)
//	match set,           RV unset          -> invalid (RuleMatchWithoutResourceVersion)
//	match Exact,         RV "0"            -> invalid (RuleExactZero)
//	continue set                           -> MostRecent + Continue, only with no RV, no match and a limit
//
// Only resourceVersion, resourceVersionMatch, limit and continue are
// interpreted; selectors and other fields are the caller's to carry.
func FromListOptions(o metav1.ListOptions) (Query, error) {
	bad := func(r Rule) (Query, error) {
		oc := o
		return Query{}, &InvalidQueryError{Rule: r, Options: &oc}
	}
	if o.Limit < 0 {
		return bad(RuleNegativeLimit)
	}
	switch o.ResourceVersionMatch {
	case "", metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan:
	default:
		return bad(RuleUnknownMatch)
	}
	if o.Continue != "" {
		if o.ResourceVersion != "" {
			return bad(RuleContinueWithResourceVersion)
		}
		if o.ResourceVersionMatch != "" {
			return bad(RuleContinueWithMatch)
		}
		if o.Limit == 0 {
			return bad(RuleContinueWithoutLimit)
		}
		return Query{Semantic: MostRecent, Limit: o.Limit, Continue: o.Continue}, nil
	}
	q := Query{Limit: o.Limit}
	switch o.ResourceVersionMatch {
	case "":
		switch {
		case o.ResourceVersion == "":
			q.Semantic = MostRecent
		case o.ResourceVersion == "0":
			q.Semantic = Any
		case o.Limit > 0:
			q.Semantic, q.ResourceVersion = Exact, o.ResourceVersion
		default:
			q.Semantic, q.ResourceVersion = NotOlderThan, o.ResourceVersion
		}
	case metav1.ResourceVersionMatchExact:
		switch o.ResourceVersion {
		case "":
			return bad(RuleMatchWithoutResourceVersion)
		case "0":
			return bad(RuleExactZero)
		}
		q.Semantic, q.ResourceVersion = Exact, o.ResourceVersion
	case metav1.ResourceVersionMatchNotOlderThan:
		switch o.ResourceVersion {
		case "":
			return bad(RuleMatchWithoutResourceVersion)
		case "0":
			q.Semantic = Any
		default:
			q.Semantic, q.ResourceVersion = NotOlderThan, o.ResourceVersion
		}
	}
	return q, nil
}
