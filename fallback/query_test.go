package fallback

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/internal/vocab"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		q    Query
		rule vocab.Rule // "" = valid
	}{
		{Query{Semantic: MostRecent}, ""},
		{Query{Semantic: Any}, ""},
		{Query{Semantic: NotOlderThan, ResourceVersion: "10"}, ""},
		{Query{Semantic: NotOlderThan, ResourceVersion: "0"}, ""}, // API Concepts list table: NotOlderThan + "0" is Any, not invalid
		{Query{Semantic: Exact, ResourceVersion: "10"}.WithLimit(5), ""},
		{Query{Semantic: MostRecent}.WithLimit(5).WithContinue("t"), ""},
		{Query{Semantic: 9}, vocab.RuleUnknownSemantic},
		{Query{Semantic: -1}, vocab.RuleUnknownSemantic},
		{Query{Semantic: NotOlderThan, ResourceVersion: ""}, vocab.RuleResourceVersionRequired},
		{Query{Semantic: Exact, ResourceVersion: ""}, vocab.RuleResourceVersionRequired},
		{Query{Semantic: Exact, ResourceVersion: "0"}, vocab.RuleExactZero},
		{Query{Semantic: MostRecent, ResourceVersion: "5"}, vocab.RuleNoResourceVersionForSemantic},
		{Query{Semantic: Any, ResourceVersion: "0"}, vocab.RuleNoResourceVersionForSemantic},
		{Query{Semantic: MostRecent}.WithLimit(-1), vocab.RuleNegativeLimit},
		{Query{Semantic: Exact, ResourceVersion: "10"}.WithLimit(5).WithContinue("t"), vocab.RuleContinueWithResourceVersion},
		{Query{Semantic: Any}.WithLimit(5).WithContinue("t"), vocab.RuleContinueWithResourceVersion},
		{Query{Semantic: MostRecent}.WithContinue("t"), vocab.RuleContinueWithoutLimit},
	}
	for _, c := range cases {
		err := c.q.Validate()
		if c.rule == "" {
			if err != nil {
				t.Errorf("%v: unexpected %v", c.q, err)
			}
			continue
		}
		var iq *InvalidQueryError
		if !errors.As(err, &iq) || iq.Rule != c.rule || !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%v: got %v, want rule %s", c.q, err, c.rule)
			continue
		}
		if !strings.Contains(err.Error(), string(c.rule)) || !strings.Contains(err.Error(), "https://") {
			t.Errorf("%v: message %q does not name the rule and cite its public source", c.q, err)
		}
	}
}
