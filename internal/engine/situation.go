package engine

import (
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
)

// MatchSupport is the executor's belief about the server's handling of
// resourceVersionMatch when it sent the request (mirrors compat.Support).
type MatchSupport int

const (
	// MatchUnknown: not known; the Match wire form is sent and the answer verified.
	MatchUnknown MatchSupport = iota
	// MatchHonoured: the server honours resourceVersionMatch (>= 1.19).
	MatchHonoured
	// MatchIgnored: the server ignores it; the Legacy wire form is sent.
	MatchIgnored
)

func (m MatchSupport) String() string {
	switch m {
	case MatchHonoured:
		return "honoured"
	case MatchIgnored:
		return "ignored"
	}
	return "unknown"
}

// Form returns the wire form to send under this belief.
func (m MatchSupport) Form() fallback.WireForm {
	if m == MatchIgnored {
		return fallback.Legacy
	}
	return fallback.Match
}

// Situation is everything a row of the table matches on.
type Situation struct {
	// Semantic of the request as sent (after earlier fallbacks); for a
	// continue page, the semantic of the list's first page.
	Semantic fallback.Semantic
	// HasLimit: the request carried a limit.
	HasLimit bool
	// HasContinue: the request carried a continue token.
	HasContinue bool
	// Match is the belief about resourceVersionMatch support when it was sent.
	Match MatchSupport
	// Class is the response's class (fallback.Classify plus the executor's
	// verification of ListMeta).
	Class fallback.Class
	// AttemptsLeft: the budget of Class (budgetFor) is not spent yet.
	AttemptsLeft bool
}

func (s Situation) String() string {
	return fmt.Sprintf("{%s limit=%t continue=%t match=%s class=%s attemptsLeft=%t}",
		s.Semantic, s.HasLimit, s.HasContinue, s.Match, s.Class, s.AttemptsLeft)
}

// normalize applies the one rewrite done before lookup: a 410 on a continue
// request is ContinueExpired.
func (s Situation) normalize() Situation {
	if s.Class == fallback.Gone && s.HasContinue {
		s.Class = fallback.ContinueExpired
	}
	return s
}
