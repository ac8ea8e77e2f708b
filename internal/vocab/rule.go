package vocab

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

// Citation returns the public text the rule implements.
func (r Rule) Citation() string { return ruleCitation[r] }
