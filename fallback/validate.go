package fallback

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/internal/vocab"
)

// ErrInvalidQuery is matched (errors.Is) by every *InvalidQueryError.
var ErrInvalidQuery = errors.New("invalid list query")

// InvalidQueryError says which rule of the API Concepts list table a query broke. It is
// returned before any request is sent.
type InvalidQueryError struct {
	// Rule is the broken rule.
	Rule vocab.Rule
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
	return fmt.Sprintf("invalid list query %s: rule %s (%s)", what, e.Rule, e.Rule.Citation())
}

// Is makes errors.Is(err, ErrInvalidQuery) true.
func (e *InvalidQueryError) Is(target error) bool { return target == ErrInvalidQuery }

// Validate checks q against the API Concepts list table. It returns nil or an
// *InvalidQueryError naming the broken rule.
func (q Query) Validate() error {
	bad := func(r vocab.Rule) error { return &InvalidQueryError{Rule: r, Query: q} }
	if q.Semantic < MostRecent || q.Semantic > Exact {
		return bad(vocab.RuleUnknownSemantic)
	}
	if q.Limit < 0 {
		return bad(vocab.RuleNegativeLimit)
	}
	if q.Continue != "" {
		if q.Semantic != MostRecent || q.ResourceVersion != "" {
			return bad(vocab.RuleContinueWithResourceVersion)
		}
		if q.Limit == 0 {
			return bad(vocab.RuleContinueWithoutLimit)
		}
		return nil
	}
	switch q.Semantic {
	case MostRecent, Any:
		if q.ResourceVersion != "" {
			return bad(vocab.RuleNoResourceVersionForSemantic)
		}
	case NotOlderThan:
		if q.ResourceVersion == "" {
			return bad(vocab.RuleResourceVersionRequired)
		}
	case Exact:
		if q.ResourceVersion == "" {
			return bad(vocab.RuleResourceVersionRequired)
		}
		if q.ResourceVersion == "0" {
			return bad(vocab.RuleExactZero)
		}
	}
	return nil
}
