package fallback

import (
	"fmt"
	"slices"
)

// Action is what the executor does next.
type Action int

const (
	// Accept the response (hand the page over; follow its continue token).
	Accept Action = iota
	// RetryNewerRV retries the first page as NotOlderThan(newer RV) (rule 1).
	RetryNewerRV
	// FallbackMostRecent retries the first page as MostRecent (resourceVersion="", quorum read).
	FallbackMostRecent
	// RetryWithLimit retries Exact(N) with a limit, which legacy servers serve at exactly N (rule 2).
	RetryWithLimit
	// FailExactUnavailable fails with "exact version unavailable" (410 semantics).
	FailExactUnavailable
	// WaitRetryAfter waits the server's Retry-After (capped by Policy.MaxRetryAfter,
	// or a backoff delay when none was given) and sends the same request again.
	WaitRetryAfter
	// Backoff waits a jittered backoff delay (or the server's Retry-After when
	// larger, capped) and sends the same request again.
	Backoff
	// RestartListNewerRV voids the pages handed over so far and restarts the
	// list from page 1 at a newer resource version.
	RestartListNewerRV
	// RestartListUnpaginated voids the pages handed over so far and restarts the
	// list with no limit.
	RestartListUnpaginated
	// Fail returns the error to the caller.
	Fail

	numActions
)

var actionNames = [...]string{
	Accept: "Accept", RetryNewerRV: "RetryNewerRV", FallbackMostRecent: "FallbackMostRecent",
	RetryWithLimit: "RetryWithLimit", FailExactUnavailable: "FailExactUnavailable",
	WaitRetryAfter: "WaitRetryAfter", Backoff: "Backoff", RestartListNewerRV: "RestartListNewerRV",
	RestartListUnpaginated: "RestartListUnpaginated", Fail: "Fail",
}

func (a Action) String() string {
	if a >= 0 && a < numActions {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// IsFallback reports whether the action changes the request (an Event is
// recorded for it). Accept, Fail and plain retries of the same request
// (Backoff, WaitRetryAfter) are logged but are not fallbacks.
func (a Action) IsFallback() bool {
	switch a {
	case RetryNewerRV, FallbackMostRecent, RetryWithLimit, RestartListNewerRV, RestartListUnpaginated:
		return true
	}
	return false
}

// MatchSupport is what the executor believes about the server's handling of
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
func (m MatchSupport) Form() WireForm {
	if m == MatchIgnored {
		return Legacy
	}
	return Match
}

// ReasonCode names one row's decision; it is the reason of the Event and the
// label of the fallback metric.
type ReasonCode string

const (
	ReasonOK                         ReasonCode = "ok"
	ReasonContextDone                ReasonCode = "context-done"
	ReasonInvalid                    ReasonCode = "invalid-not-retried"
	ReasonNotRetriable               ReasonCode = "not-retriable"
	ReasonThrottledBackoff           ReasonCode = "throttled-backoff"
	ReasonServerErrorBackoff         ReasonCode = "server-error-backoff"
	ReasonTransportBackoff           ReasonCode = "transport-backoff"
	ReasonRetriesExhausted           ReasonCode = "retries-exhausted"
	ReasonRule1RetryNewerRV          ReasonCode = "rule1-gone-retry-newer-rv"
	ReasonRule1FallbackMostRecent    ReasonCode = "rule1-gone-fallback-most-recent"
	ReasonRule1Exhausted             ReasonCode = "rule1-gone-exhausted"
	ReasonExactGone                  ReasonCode = "exact-gone"
	ReasonGoneUnexpected             ReasonCode = "gone-unexpected"
	ReasonContinueExpiredExact       ReasonCode = "continue-expired-exact-unavailable"
	ReasonContinueExpiredRestart     ReasonCode = "continue-expired-restart-newer-rv"
	ReasonContinueExpiredUnpaginated ReasonCode = "continue-expired-restart-unpaginated"
	ReasonContinueExpiredFail        ReasonCode = "continue-expired-fail"
	ReasonContinueExpiredExhausted   ReasonCode = "continue-expired-exhausted"
	ReasonRule2RetryWithLimit        ReasonCode = "rule2-exact-mismatch-retry-with-limit"
	ReasonRule2MismatchWithLimit     ReasonCode = "rule2-exact-mismatch-with-limit"
	ReasonUnexpectedObservation      ReasonCode = "unexpected-observation"
	ReasonServedOlderRetry           ReasonCode = "served-older-retry"
	ReasonServedOlderExhausted       ReasonCode = "served-older-exhausted"
	ReasonTooLargeWait               ReasonCode = "too-large-rv-wait-retry-after"
	ReasonTooLargeExhausted          ReasonCode = "too-large-rv-exhausted"
	ReasonTooLargeExactUnavailable   ReasonCode = "too-large-rv-exact-unavailable"
	ReasonTooLargeFallbackMostRecent ReasonCode = "too-large-rv-fallback-most-recent"
)

// Situation is everything a decision depends on. The executor fills it for
// each response.
type Situation struct {
	// Semantic of the request as sent (after earlier fallbacks); for a
	// continue page, the semantic of the list's first page.
	Semantic Semantic
	// HasLimit: the request carried a limit.
	HasLimit bool
	// HasContinue: the request carried a continue token.
	HasContinue bool
	// Match is the belief about resourceVersionMatch support when it was sent.
	Match MatchSupport
	// Class is the response's class (Classify, plus the executor's observations).
	Class Class
	// AttemptsLeft: the budget BudgetFor(Class) is not spent yet.
	AttemptsLeft bool
}

func (s Situation) String() string {
	return fmt.Sprintf("{%s limit=%t continue=%t match=%s class=%s attemptsLeft=%t}",
		s.Semantic, s.HasLimit, s.HasContinue, s.Match, s.Class, s.AttemptsLeft)
}

// Cond is a three-valued pattern over a bool.
type Cond int

const (
	// Either matches true and false.
	Either Cond = iota
	// IsTrue matches true.
	IsTrue
	// IsFalse matches false.
	IsFalse
)

func (c Cond) matches(b bool) bool { return c == Either || (c == IsTrue) == b }

// When is a pattern over (Situation, Policy). Nil slices match everything.
type When struct {
	Semantics    []Semantic
	Classes      []Class
	Limit        Cond
	Continue     Cond
	AttemptsLeft Cond
	Match        []MatchSupport
	// MostRecentFallback matches !Policy.DisableMostRecentFallback.
	MostRecentFallback Cond
	ContinueExpired    []ContinueExpiredPolicy
	TooLarge           []TooLargePolicy
}

// Matches reports whether the pattern matches.
func (w When) Matches(s Situation, p Policy) bool {
	return (w.Semantics == nil || slices.Contains(w.Semantics, s.Semantic)) &&
		(w.Classes == nil || slices.Contains(w.Classes, s.Class)) &&
		w.Limit.matches(s.HasLimit) && w.Continue.matches(s.HasContinue) &&
		w.AttemptsLeft.matches(s.AttemptsLeft) &&
		(w.Match == nil || slices.Contains(w.Match, s.Match)) &&
		w.MostRecentFallback.matches(!p.DisableMostRecentFallback) &&
		(w.ContinueExpired == nil || slices.Contains(w.ContinueExpired, p.ContinueExpired)) &&
		(w.TooLarge == nil || slices.Contains(w.TooLarge, p.TooLargeAfterBudget))
}

// Row is one rule: pattern, action, reason code and the seed text it implements.
type Row struct {
	When   When
	Then   Action
	Reason ReasonCode
	Seed   string
}

var (
	allButExact  = []Semantic{MostRecent, Any, NotOlderThan}
	noRV         = []Semantic{MostRecent, Any}
	onlyNOT      = []Semantic{NotOlderThan}
	onlyExact    = []Semantic{Exact}
	cls          = func(c ...Class) []Class { return c }
	restarting   = []ContinueExpiredPolicy{RestartNewerRV, RestartUnpaginated}
	seedNOTLimit = "001 Backward Compatibility; 004 list: \"When using resourceVersionMatch=NotOlderThan and limit is set, clients must handle HTTP 410 \\\"Gone\\\" responses. For example, the client might retry with a newer resourceVersion or fall back to resourceVersion=\\\"\\\".\""
	seedExactVer = "001 Backward Compatibility; 004 list: \"When using resourceVersionMatch=Exact and limit is unset, clients must verify that the collection's .metadata.resourceVersion matches the requested resourceVersion ... the client might fall back to a request with limit set.\""
	seedExact410 = "004 Exact: \"If the provided resourceVersion is unavailable, the server responds with HTTP 410 \\\"Gone\\\".\""
	seedContinue = "004 chunks: \"a continue token will expire ... and return a 410 Gone ... the client will need to start from the beginning or omit the limit parameter.\"; 004 \"Continue Token, Exact\""
	seedTooLarge = "004 Unavailable resource versions: \"timeout with a 504 (Gateway Timeout) ... respond with a Retry-After response header\"; \"Too large resource version\""
	seedNOT      = "004 Not older than: \"guarantees that the collection's .metadata.resourceVersion is not older than the requested resourceVersion\""
)

// Table is every decision steadywatch takes, one row per rule. Rows are
// disjoint: for every (Situation, Policy) exactly one row matches (the
// exhaustive test enumerates them all), so the order does not matter.
//
// Normalisation before lookup (Decide): a Gone on a request that carried a
// continue token is ContinueExpired.
var Table = []Row{
	// Success and errors that are never retried.
	{When{Classes: cls(OK)}, Accept, ReasonOK, "004 Semantics for get and list"},
	{When{Classes: cls(Canceled)}, Fail, ReasonContextDone, "caller's context ended; never retried"},
	{When{Classes: cls(Invalid)}, Fail, ReasonInvalid, "004 list table: Invalid, HTTP 400 Bad Request"},
	{When{Classes: cls(Forbidden, NotFound, Other)}, Fail, ReasonNotRetriable, "not a resourceVersion condition; never retried"},

	// 429 / 5xx / transport: bounded jittered backoff.
	{When{Classes: cls(Throttled), AttemptsLeft: IsTrue}, Backoff, ReasonThrottledBackoff, "429 Too Many Requests (Retry-After honoured, capped)"},
	{When{Classes: cls(ServerError), AttemptsLeft: IsTrue}, Backoff, ReasonServerErrorBackoff, "5xx (Retry-After honoured, capped)"},
	{When{Classes: cls(Transport), AttemptsLeft: IsTrue}, Backoff, ReasonTransportBackoff, "connection refused/reset, EOF, timeout"},
	{When{Classes: cls(Throttled, ServerError, Transport), AttemptsLeft: IsFalse}, Fail, ReasonRetriesExhausted, "bounded retries"},

	// Rule 1: NotOlderThan answered 410 (the server ignored the match and applied legacy Exact).
	{When{Classes: cls(Gone), Continue: IsFalse, Semantics: onlyNOT, AttemptsLeft: IsTrue}, RetryNewerRV, ReasonRule1RetryNewerRV, seedNOTLimit},
	{When{Classes: cls(Gone), Continue: IsFalse, Semantics: onlyNOT, AttemptsLeft: IsFalse, MostRecentFallback: IsTrue}, FallbackMostRecent, ReasonRule1FallbackMostRecent, seedNOTLimit},
	{When{Classes: cls(Gone), Continue: IsFalse, Semantics: onlyNOT, AttemptsLeft: IsFalse, MostRecentFallback: IsFalse}, Fail, ReasonRule1Exhausted, seedNOTLimit},
	{When{Classes: cls(Gone), Continue: IsFalse, Semantics: onlyExact}, FailExactUnavailable, ReasonExactGone, seedExact410},
	{When{Classes: cls(Gone), Continue: IsFalse, Semantics: noRV}, Fail, ReasonGoneUnexpected, "004 list table: MostRecent and Any are not answered with 410"},

	// Continue-token expiry: never stitch pages from two snapshots.
	{When{Classes: cls(ContinueExpired), Semantics: onlyExact}, FailExactUnavailable, ReasonContinueExpiredExact, seedContinue},
	{When{Classes: cls(ContinueExpired), Semantics: allButExact, AttemptsLeft: IsTrue, ContinueExpired: []ContinueExpiredPolicy{RestartNewerRV}}, RestartListNewerRV, ReasonContinueExpiredRestart, seedContinue},
	{When{Classes: cls(ContinueExpired), Semantics: allButExact, AttemptsLeft: IsTrue, ContinueExpired: []ContinueExpiredPolicy{RestartUnpaginated}}, RestartListUnpaginated, ReasonContinueExpiredUnpaginated, seedContinue},
	{When{Classes: cls(ContinueExpired), Semantics: allButExact, AttemptsLeft: IsFalse, ContinueExpired: restarting}, Fail, ReasonContinueExpiredExhausted, seedContinue},
	{When{Classes: cls(ContinueExpired), Semantics: allButExact, ContinueExpired: []ContinueExpiredPolicy{FailOnContinueExpired}}, Fail, ReasonContinueExpiredFail, seedContinue},

	// Rule 2: Exact answered at another resourceVersion.
	{When{Classes: cls(ServedNewerThanExact), Semantics: onlyExact, Limit: IsFalse}, RetryWithLimit, ReasonRule2RetryWithLimit, seedExactVer},
	{When{Classes: cls(ServedNewerThanExact), Semantics: onlyExact, Limit: IsTrue}, FailExactUnavailable, ReasonRule2MismatchWithLimit, seedExactVer},
	{When{Classes: cls(ServedNewerThanExact), Semantics: allButExact}, Fail, ReasonUnexpectedObservation, "the executor flags this only for Exact"},

	// Served older than the NotOlderThan floor: never accepted.
	{When{Classes: cls(ServedOlder), Semantics: onlyExact}, Fail, ReasonUnexpectedObservation, "the executor reports Exact mismatches as ServedNewerThanExact"},
	{When{Classes: cls(ServedOlder), Semantics: allButExact, AttemptsLeft: IsTrue}, Backoff, ReasonServedOlderRetry, seedNOT},
	{When{Classes: cls(ServedOlder), Semantics: allButExact, AttemptsLeft: IsFalse}, Fail, ReasonServedOlderExhausted, seedNOT},

	// 504 "Too large resource version".
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsTrue}, WaitRetryAfter, ReasonTooLargeWait, seedTooLarge},
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsFalse, Continue: IsTrue}, Fail, ReasonTooLargeExhausted, seedTooLarge},
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsFalse, Continue: IsFalse, Semantics: noRV}, Fail, ReasonTooLargeExhausted, seedTooLarge},
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsFalse, Continue: IsFalse, Semantics: onlyExact}, FailExactUnavailable, ReasonTooLargeExactUnavailable, seedTooLarge + "; 004 Exact"},
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsFalse, Continue: IsFalse, Semantics: onlyNOT, TooLarge: []TooLargePolicy{TooLargeFallbackMostRecent}, MostRecentFallback: IsTrue}, FallbackMostRecent, ReasonTooLargeFallbackMostRecent, seedTooLarge + "; 001 fall back to ResourceVersion=\"\" (served RV still verified)"},
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsFalse, Continue: IsFalse, Semantics: onlyNOT, TooLarge: []TooLargePolicy{TooLargeFallbackMostRecent}, MostRecentFallback: IsFalse}, Fail, ReasonTooLargeExhausted, seedTooLarge},
	{When{Classes: cls(TooLargeRV), AttemptsLeft: IsFalse, Continue: IsFalse, Semantics: onlyNOT, TooLarge: []TooLargePolicy{TooLargeFail}}, Fail, ReasonTooLargeExhausted, seedTooLarge},
}

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	Reason ReasonCode
	Seed   string
	// Row is the index of the matching row in Table (-1 if none matched,
	// which the exhaustive test proves impossible; Decide then fails safe).
	Row int
}

// Normalize applies the one rewrite done before lookup: a 410 on a continue
// request is ContinueExpired.
func (s Situation) Normalize() Situation {
	if s.Class == Gone && s.HasContinue {
		s.Class = ContinueExpired
	}
	return s
}

// Decide returns the action for s under p (p's defaults applied by the caller
// or not: only its enum and bool fields are read). The first matching row
// wins; rows are disjoint, so it is the only one.
func Decide(s Situation, p Policy) Decision {
	s = s.Normalize()
	for i, r := range Table {
		if r.When.Matches(s, p) {
			return Decision{Action: r.Then, Reason: r.Reason, Seed: r.Seed, Row: i}
		}
	}
	return Decision{Action: Fail, Reason: ReasonNotRetriable, Seed: "no row matched", Row: -1}
}

// Evidence is what a response proves about resourceVersionMatch support.
type Evidence int

const (
	// NoEvidence: the response proves nothing.
	NoEvidence Evidence = iota
	// EvidenceIgnored: the server ignored resourceVersionMatch.
	EvidenceIgnored
	// EvidenceHonoured: the server honoured resourceVersionMatch.
	EvidenceHonoured
)

// EvidenceOf returns what s proves about resourceVersionMatch support.
// served compares ListMeta.resourceVersion with the requested one (Incomparable
// when there is none). Only requests that carried the match (Match form, i.e.
// s.Match != MatchIgnored) and no continue token are evidence:
//
//   - Exact(N) without limit served at another RV: ignored (seed 001: "verify that the
//     ResourceVersion in the ListMeta ... matches").
//   - NotOlderThan(N) with a limit answered 410: ignored (a server honouring the
//     match serves NotOlderThan, which is never 410; legacy applies Exact).
//   - NotOlderThan(N) with a limit served at an RV newer than N: honoured (a legacy
//     server applies Exact with a limit and serves exactly N).
func EvidenceOf(s Situation, served Comparison) Evidence {
	s = s.Normalize()
	if s.Match == MatchIgnored || s.HasContinue {
		return NoEvidence
	}
	switch {
	case s.Semantic == Exact && !s.HasLimit && s.Class == ServedNewerThanExact:
		return EvidenceIgnored
	case s.Semantic == NotOlderThan && s.HasLimit && s.Class == Gone:
		return EvidenceIgnored
	case s.Semantic == NotOlderThan && s.HasLimit && s.Class == OK && served == Newer:
		return EvidenceHonoured
	}
	return NoEvidence
}

// Next returns the request to send after action a:
//
//	cur      the request just answered (possibly a continue page)
//	first    the first page of the current list attempt (no continue token)
//	newerRV  for RetryNewerRV/RestartListNewerRV of a NotOlderThan list: a
//	         resource version not older than first's (the executor's choice,
//	         see package lister)
//	pageSize the limit for RetryWithLimit when first has none
//
// ok is false for Accept (the executor follows the continue token itself),
// Fail and FailExactUnavailable, and for actions that do not apply to the
// semantic (the table never pairs them).
func Next(a Action, cur, first Query, newerRV string, pageSize int64) (q Query, ok bool) {
	switch a {
	case WaitRetryAfter, Backoff:
		return cur, true
	case RetryNewerRV:
		if first.Semantic != NotOlderThan {
			return Query{}, false
		}
		return Query{Semantic: NotOlderThan, ResourceVersion: newerRV, Limit: first.Limit}, true
	case FallbackMostRecent:
		if first.Semantic == Exact {
			return Query{}, false
		}
		return Query{Semantic: MostRecent, Limit: first.Limit}, true
	case RetryWithLimit:
		if first.Semantic != Exact {
			return Query{}, false
		}
		if pageSize <= 0 {
			pageSize = DefaultLegacyExactLimit
		}
		return first.WithLimit(pageSize), true
	case RestartListNewerRV:
		switch first.Semantic {
		case NotOlderThan:
			return Query{Semantic: NotOlderThan, ResourceVersion: newerRV, Limit: first.Limit}, true
		case MostRecent, Any:
			return Query{Semantic: first.Semantic, Limit: first.Limit}, true
		}
		return Query{}, false
	case RestartListUnpaginated:
		if first.Semantic == Exact {
			return Query{}, false
		}
		q := first
		q.Limit, q.Continue = 0, ""
		return q, true
	}
	return Query{}, false
}
