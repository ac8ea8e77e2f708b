package engine

import (
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
)

// MatchSupport is the executor's belief about the server's handling of
// resourceVersionMatch when it sent the request (mirrors capability.Support).
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

// Op names whose answer a situation describes.
type Op int

const (
	// OpPage: one request of a list call (the lister's executor), a probe included.
	OpPage Op = iota
	// OpRelist: a reflector's list call failed (after the lister's own rules).
	OpRelist
	// OpWatch: a reflector's watch failed.
	OpWatch
	// OpNewerRV: the limit=1 MostRecent read of a list call that needs a
	// newer resourceVersion (rule 1, list restarts).
	OpNewerRV
	// OpCurrentRV: the same read, sent to learn whether a "too large"
	// resourceVersion exists at all (CheckRVExists).
	OpCurrentRV
)

func (o Op) String() string {
	switch o {
	case OpRelist:
		return "relist"
	case OpWatch:
		return "watch"
	case OpNewerRV:
		return "newer-rv-read"
	case OpCurrentRV:
		return "current-rv-read"
	}
	return "page"
}

// Situation is everything a row of the table matches on.
type Situation struct {
	// Op is whose answer it is (zero: a list request).
	Op Op
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
	// RVChecked: a consistent read in this call already showed that the
	// requested resourceVersion exists (it is not newer than the server's).
	RVChecked bool
	// WatchCacheStuck: the server's watch cache advances only when the listed
	// resource is written (no watch progress notifications, KEP-1904), so a
	// resourceVersion moved on by writes of other resources is out of its
	// reach until then (capability.WatchCacheProgress is No, or two "too large"
	// answers to one request reported the same current resourceVersion).
	WatchCacheStuck bool
	// NotAList: a 200 whose body has no ListMeta (OpPage; its class is Other).
	NotAList bool
	// RequestsLeft: Config.MaxRequests is not reached by the page answers
	// that delivered no page, this one counted (OpPage).
	RequestsLeft bool
	// RestartAllowed: a restart may start the list again: the caller gave no
	// continue token of its own, and no page was handed over or the caller
	// allows them voided (OpPage).
	RestartAllowed bool
	// ListRV: the answer's ListMeta has a resourceVersion (OpNewerRV,
	// OpCurrentRV).
	ListRV bool
}

func (s Situation) String() string {
	return fmt.Sprintf("{op=%s %s limit=%t continue=%t match=%s class=%s attemptsLeft=%t rvChecked=%t watchCacheStuck=%t notAList=%t requestsLeft=%t restartAllowed=%t listRV=%t}",
		s.Op, s.Semantic, s.HasLimit, s.HasContinue, s.Match, s.Class, s.AttemptsLeft, s.RVChecked, s.WatchCacheStuck,
		s.NotAList, s.RequestsLeft, s.RestartAllowed, s.ListRV)
}
