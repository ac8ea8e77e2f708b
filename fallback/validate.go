package fallback

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrInvalidQuery is matched (errors.Is) by every *InvalidQueryError.
var ErrInvalidQuery = errors.New("invalid list query")

// Rule names one rule of the API Concepts list table (API Concepts "resourceVersionMatch
// and paging parameters for list", identical to API Concepts's table) or a
// structural rule steadywatch adds. Each rejected query names the rule it broke.
type Rule string

const (
	// RuleUnknownSemantic: the Semantic is not one of MostRecent, Any, NotOlderThan, Exact.
	RuleUnknownSemantic Rule = "unknown-semantic"
	// RuleResourceVersionRequired: NotOlderThan and Exact need a resourceVersion.
	// API Concepts table: resourceVersionMatch=Exact|NotOlderThan with resourceVersion
	// not set is "Invalid"; KEP-2523: "ResourceVersionMatch ... may only be set if
	// ResourceVersion is also set".
	RuleResourceVersionRequired Rule = "resource-version-required"
	// RuleExactZero: Exact with resourceVersion "0". API Concepts table:
	// resourceVersionMatch=Exact, resourceVersion="0" is "Invalid".
	RuleExactZero Rule = "exact-with-zero"
	// RuleNoResourceVersionForSemantic: MostRecent and Any are expressed by the
	// resourceVersion itself ("" and "0"); Query.ResourceVersion must be empty.
	RuleNoResourceVersionForSemantic Rule = "semantic-takes-no-resource-version"
	// RuleNegativeLimit: limit must be >= 0 (0 = unpaginated).
	RuleNegativeLimit Rule = "negative-limit"
	// RuleContinueWithResourceVersion: a continue request carries no
	// resourceVersion. API Concepts table, row "limit=<n>, continue=<token>":
	// resourceVersion="0" is "Invalid, treated as Continue Token, Exact" and
	// "{value other than 0}" is "Invalid, HTTP 400 Bad Request". A continue
	// query must therefore be MostRecent with an empty ResourceVersion.
	RuleContinueWithResourceVersion Rule = "continue-with-resource-version"
	// RuleContinueWithMatch: a continue request carries no resourceVersionMatch.
	// API Concepts table: the Exact and NotOlderThan rows exist only with "continue unset".
	RuleContinueWithMatch Rule = "continue-with-match"
	// RuleContinueWithoutLimit: the API Concepts list table has continue only in the
	// "limit=<n>, continue=<token>" row; steadywatch requires a limit with a token.
	RuleContinueWithoutLimit Rule = "continue-without-limit"
	// RuleMatchWithoutResourceVersion: resourceVersionMatch set with
	// resourceVersion unset. API Concepts: "Setting the resourceVersionMatch parameter
	// without setting resourceVersion is not valid."
	RuleMatchWithoutResourceVersion Rule = "match-without-resource-version"
	// RuleUnknownMatch: resourceVersionMatch is neither "", "Exact" nor "NotOlderThan".
	RuleUnknownMatch Rule = "unknown-resource-version-match"
)

// ruleCitation is the public text each rule implements, shown in error messages.
var ruleCitation = map[Rule]string{
	RuleUnknownSemantic:              SourceResourceVersions + ", Semantics for get and list: MostRecent, Any, NotOlderThan, Exact",
	RuleResourceVersionRequired:      SourceResourceVersions + ", list table: resourceVersionMatch=Exact|NotOlderThan with resourceVersion not set is Invalid",
	RuleExactZero:                    SourceResourceVersions + ", list table: resourceVersionMatch=Exact with resourceVersion=\"0\" is Invalid",
	RuleNoResourceVersionForSemantic: SourceResourceVersions + ", list table: MostRecent is resourceVersion unset, Any is resourceVersion=\"0\"",
	RuleNegativeLimit:                SourceChunks + ": limit is a maximum count",
	RuleContinueWithResourceVersion:  SourceResourceVersions + ", list table, row limit=<n>, continue=<token>: resourceVersion=\"0\" is Invalid, other values are Invalid (HTTP 400)",
	RuleContinueWithMatch:            SourceResourceVersions + ", list table: resourceVersionMatch rows exist only with continue unset",
	RuleContinueWithoutLimit:         SourceResourceVersions + ", list table: continue appears only in the row limit=<n>, continue=<token>",
	RuleMatchWithoutResourceVersion:  SourceResourceVersions + ": setting resourceVersionMatch without resourceVersion is not valid",
	RuleUnknownMatch:                 SourceKEP2523 + ": ResourceVersionMatch is NotOlderThan or Exact",
}

// InvalidQueryError says which rule of the API Concepts list table a query broke. It is
// returned before any request is sent.
type InvalidQueryError struct {
	// Rule is the broken rule.
	Rule Rule
	// Query is the offending query (zero when the error came from wire options
	// that could not be turned into a Query).
	Query Query
	// Options are the wire options when the error came from FromListOptions.
	Options *metav1.ListOptions
}

func (e *InvalidQueryError) Error() string {
	what := e.Query.String()
	if e.Options != nil {
		what = fmt.Sprintf("resourceVersion=%q resourceVersionMatch=%q limit=%d continue-set=%t",
			e.Options.ResourceVersion, e.Options.ResourceVersionMatch, e.Options.Limit, e.Options.Continue != "")
	}
	return fmt.Sprintf("invalid list query %s: rule %s (%s)", what, e.Rule, ruleCitation[e.Rule])
}

// Is makes errors.Is(err, ErrInvalidQuery) true.
func (e *InvalidQueryError) Is(target error) bool { return target == ErrInvalidQuery }

// Citation returns the public text the rule implements.
func (r Rule) Citation() string { return ruleCitation[r] }

// Validate checks q against the API Concepts list table. It returns nil or an
// *InvalidQueryError naming the broken rule.
func (q Query) Validate() error {
	bad := func(r Rule) error { return &InvalidQueryError{Rule: r, Query: q} }
	if q.Semantic < MostRecent || q.Semantic > Exact {
		return bad(RuleUnknownSemantic)
	}
	if q.Limit < 0 {
		return bad(RuleNegativeLimit)
	}
	if q.Continue != "" {
		if q.Semantic != MostRecent || q.ResourceVersion != "" {
			return bad(RuleContinueWithResourceVersion)
		}
		if q.Limit == 0 {
			return bad(RuleContinueWithoutLimit)
		}
		return nil
	}
	switch q.Semantic {
	case MostRecent, Any:
		if q.ResourceVersion != "" {
			return bad(RuleNoResourceVersionForSemantic)
		}
	case NotOlderThan:
		if q.ResourceVersion == "" {
			return bad(RuleResourceVersionRequired)
		}
	case Exact:
		if q.ResourceVersion == "" {
			return bad(RuleResourceVersionRequired)
		}
		if q.ResourceVersion == "0" {
			return bad(RuleExactZero)
		}
	}
	return nil
}

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
