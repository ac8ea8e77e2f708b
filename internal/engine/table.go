package engine

import (
	"fmt"
	"slices"
	"strings"

	//lint:ignore ST1001 the table reads in the KEP's vocabulary (OK, Gone, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
)

// cond is a three-valued pattern over a bool.
type cond int

const (
	either cond = iota // matches true and false
	yes                // matches true
	no                 // matches false
)

func (c cond) matches(b bool) bool { return c == either || (c == yes) == b }

// when is a pattern over (Situation, Policy). Nil slices match everything.
type when struct {
	classes      []Class
	semantics    []Semantic
	limit        cond
	cont         cond
	attemptsLeft cond
	// mostRecentFallback matches !Policy.DisableMostRecentFallback.
	mostRecentFallback cond
	continueExpired    []ContinueExpiredPolicy
	tooLarge           []TooLargePolicy
}

func (w when) matches(s Situation, p Policy) bool {
	return (w.classes == nil || slices.Contains(w.classes, s.Class)) &&
		(w.semantics == nil || slices.Contains(w.semantics, s.Semantic)) &&
		w.limit.matches(s.HasLimit) && w.cont.matches(s.HasContinue) &&
		w.attemptsLeft.matches(s.AttemptsLeft) &&
		w.mostRecentFallback.matches(!p.DisableMostRecentFallback) &&
		(w.continueExpired == nil || slices.Contains(w.continueExpired, p.ContinueExpired)) &&
		(w.tooLarge == nil || slices.Contains(w.tooLarge, p.TooLargeAfterBudget))
}

// Row is one rule: pattern, action, reason code and the public text it implements.
type Row struct {
	when   when
	Action Action
	Reason ReasonCode
	// Source quotes the public text the row implements.
	Source string
}

var (
	allButExact = []Semantic{MostRecent, Any, NotOlderThan}
	noRV        = []Semantic{MostRecent, Any}
	onlyNOT     = []Semantic{NotOlderThan}
	onlyExact   = []Semantic{Exact}
	cls         = func(c ...Class) []Class { return c }
	restarting  = []ContinueExpiredPolicy{RestartNewerRV, RestartUnpaginated}

	srcRule1    = SourceKEP2523 + ", Backward Compatibility; " + SourceResourceVersions + `: "When using resourceVersionMatch=NotOlderThan and limit is set, clients must handle HTTP 410 "Gone" responses. For example, the client might retry with a newer resourceVersion or fall back to resourceVersion=""."`
	srcRule2    = SourceKEP2523 + ", Backward Compatibility; " + SourceResourceVersions + `: "When using resourceVersionMatch=Exact and limit is unset, clients must verify that the collection's .metadata.resourceVersion matches the requested resourceVersion ... the client might fall back to a request with limit set."`
	srcExact410 = SourceResourceVersions + `, Exact: "If the provided resourceVersion is unavailable, the server responds with HTTP 410 "Gone"."`
	srcContinue = SourceChunks + `: "a continue token will expire ... and return a 410 Gone ... the client will need to start from the beginning or omit the limit parameter."`
	srcTooLarge = SourceResourceVersions + `, Unavailable resource versions: "timeout with a 504 (Gateway Timeout) ... respond with a Retry-After response header"`
	srcNOT      = SourceResourceVersions + `, Not older than: "guarantees that the collection's .metadata.resourceVersion is not older than the requested resourceVersion"`
	srcRepeated = SourceChunks + ": each continue token names the next chunk; a token handed out twice is a loop (apache/iceberg-go#1484, boto/botocore#3778)"
)

// table is every decision of a list call, one row per rule. Rows are
// disjoint: for every (Situation, Policy) exactly one row matches (the
// exhaustive test enumerates them all), so the order does not matter. It is
// read through Rows (a copy): nothing outside this file can change it.
var table = []Row{
	// Success and errors that are never retried.
	{when{classes: cls(OK)}, Accept, ReasonOK, SourceResourceVersions + ", Semantics for get and list"},
	{when{classes: cls(Canceled)}, Fail, ReasonContextDone, "the caller's context ended; never retried"},
	{when{classes: cls(Invalid)}, Fail, ReasonInvalid, SourceResourceVersions + ", list table: Invalid, HTTP 400 Bad Request"},
	{when{classes: cls(Forbidden, NotFound, Other)}, Fail, ReasonNotRetriable, "not a resourceVersion condition; never retried"},

	// 429 / 5xx / transport: bounded jittered backoff.
	{when{classes: cls(Throttled), attemptsLeft: yes}, Backoff, ReasonThrottledBackoff, "429 Too Many Requests (Retry-After honoured, capped by Policy.MaxRetryAfter)"},
	{when{classes: cls(ServerError), attemptsLeft: yes}, Backoff, ReasonServerErrorBackoff, "5xx (Retry-After honoured, capped by Policy.MaxRetryAfter)"},
	{when{classes: cls(Transport), attemptsLeft: yes}, Backoff, ReasonTransportBackoff, "connection refused/reset, EOF, timeout"},
	{when{classes: cls(Throttled, ServerError, Transport), attemptsLeft: no}, Fail, ReasonRetriesExhausted, "bounded retries (Policy.Backoff.MaxRetries)"},

	// Rule 1: NotOlderThan answered 410 (the server ignored the match and applied legacy Exact).
	{when{classes: cls(Gone), cont: no, semantics: onlyNOT, attemptsLeft: yes}, RetryNewerRV, ReasonRule1RetryNewerRV, srcRule1},
	{when{classes: cls(Gone), cont: no, semantics: onlyNOT, attemptsLeft: no, mostRecentFallback: yes}, FallbackMostRecent, ReasonRule1FallbackMostRecent, srcRule1},
	{when{classes: cls(Gone), cont: no, semantics: onlyNOT, attemptsLeft: no, mostRecentFallback: no}, Fail, ReasonRule1Exhausted, srcRule1},
	{when{classes: cls(Gone), cont: no, semantics: onlyExact}, FailExactUnavailable, ReasonExactGone, srcExact410},
	{when{classes: cls(Gone), cont: no, semantics: noRV}, Fail, ReasonGoneUnexpected, SourceResourceVersions + ": MostRecent and Any are not answered with 410"},

	// Continue-token expiry: never stitch pages from two snapshots.
	{when{classes: cls(ContinueExpired), semantics: onlyExact}, FailExactUnavailable, ReasonContinueExpiredExact, srcContinue},
	{when{classes: cls(ContinueExpired), semantics: allButExact, attemptsLeft: yes, continueExpired: []ContinueExpiredPolicy{RestartNewerRV}}, RestartListNewerRV, ReasonContinueExpiredRestart, srcContinue},
	{when{classes: cls(ContinueExpired), semantics: allButExact, attemptsLeft: yes, continueExpired: []ContinueExpiredPolicy{RestartUnpaginated}}, RestartListUnpaginated, ReasonContinueExpiredUnpaginated, srcContinue},
	{when{classes: cls(ContinueExpired), semantics: allButExact, attemptsLeft: no, continueExpired: restarting}, Fail, ReasonContinueExpiredExhausted, srcContinue},
	{when{classes: cls(ContinueExpired), semantics: allButExact, continueExpired: []ContinueExpiredPolicy{FailOnContinueExpired}}, Fail, ReasonContinueExpiredFail, srcContinue},

	// A continue token the server already handed out: broken pagination, never followed.
	{when{classes: cls(ContinueRepeated)}, Fail, ReasonContinueRepeated, srcRepeated},

	// Rule 2: Exact answered at another resourceVersion.
	{when{classes: cls(ServedNewerThanExact), semantics: onlyExact, limit: no}, RetryWithLimit, ReasonRule2RetryWithLimit, srcRule2},
	{when{classes: cls(ServedNewerThanExact), semantics: onlyExact, limit: yes}, FailExactUnavailable, ReasonRule2MismatchWithLimit, srcRule2},
	{when{classes: cls(ServedNewerThanExact), semantics: allButExact}, Fail, ReasonUnexpectedObservation, "the executor flags this only for Exact"},

	// Served older than the NotOlderThan floor: never accepted.
	{when{classes: cls(ServedOlder), semantics: onlyExact}, Fail, ReasonUnexpectedObservation, "the executor reports Exact mismatches as ServedNewerThanExact"},
	{when{classes: cls(ServedOlder), semantics: allButExact, attemptsLeft: yes}, Backoff, ReasonServedOlderRetry, srcNOT},
	{when{classes: cls(ServedOlder), semantics: []Semantic{Any, NotOlderThan}, attemptsLeft: no}, Fail, ReasonServedOlderExhausted, srcNOT},
	// A consistent (MostRecent) read is the newest state: still older than
	// the floor after the retries means the requested resourceVersion is
	// newer than anything the server has; say so.
	{when{classes: cls(ServedOlder), semantics: []Semantic{MostRecent}, attemptsLeft: no}, Fail, ReasonRVNewerThanServer, srcNOT + "; " + SourceResourceVersions + `, Most recent: "Return data at the most recent resource version"`},

	// 504 "Too large resource version".
	{when{classes: cls(TooLargeRV), attemptsLeft: yes}, WaitRetryAfter, ReasonTooLargeWait, srcTooLarge},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: yes}, Fail, ReasonTooLargeExhausted, srcTooLarge},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: noRV}, Fail, ReasonTooLargeExhausted, srcTooLarge},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyExact}, FailExactUnavailable, ReasonTooLargeExactUnavailable, srcTooLarge + "; " + srcExact410},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyNOT, tooLarge: []TooLargePolicy{TooLargeFallbackMostRecent}, mostRecentFallback: yes}, FallbackMostRecent, ReasonTooLargeFallbackMostRecent, srcTooLarge + `; ` + SourceKEP2523 + `: fall back to resourceVersion="" (served resourceVersion still verified)`},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyNOT, tooLarge: []TooLargePolicy{TooLargeFallbackMostRecent}, mostRecentFallback: no}, Fail, ReasonTooLargeExhausted, srcTooLarge},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyNOT, tooLarge: []TooLargePolicy{TooLargeFail}}, Fail, ReasonTooLargeExhausted, srcTooLarge},
}

// Rows returns a copy of the table, for docs and tests.
func Rows() []Row { return slices.Clone(table) }

// decision is the row that matched.
type decision struct {
	Row
	index int // -1 if none matched (the exhaustive test proves it impossible)
}

// decide returns the one row matching s under p (only p's enum and bool
// fields are read).
func decide(s Situation, p Policy) decision {
	s = s.normalize()
	for i, r := range table {
		if r.when.matches(s, p) {
			return decision{Row: r, index: i}
		}
	}
	return decision{Row: Row{Action: Fail, Reason: ReasonNotRetriable, Source: "no row matched"}, index: -1}
}

// budget names the retry budget that decides Situation.AttemptsLeft for a class.
type budget int

const (
	noBudget       budget = iota // never retried
	newerRVBudget                // Policy.MaxNewerRVRetries (rule 1)
	restartBudget                // Policy.MaxListRestarts (continue-token expiry)
	tooLargeBudget               // Policy.MaxTooLargeRetries
	backoffBudget                // Policy.Backoff (429, 5xx, transport, served-older, probe failures)
	numBudgets
)

func budgetFor(c Class) budget {
	switch c {
	case Gone:
		return newerRVBudget
	case ContinueExpired:
		return restartBudget
	case TooLargeRV:
		return tooLargeBudget
	case Throttled, ServerError, Transport, ServedOlder:
		return backoffBudget
	}
	return noBudget
}

// Pattern renders the row's pattern for docs: "class=gone semantic=NotOlderThan continue=no attemptsLeft=yes".
func (r Row) Pattern() string {
	w := r.when
	var parts []string
	list := func(name string, vals []string) {
		if len(vals) > 0 {
			parts = append(parts, name+"="+strings.Join(vals, "|"))
		}
	}
	cond := func(name string, c cond) {
		switch c {
		case yes:
			parts = append(parts, name+"=yes")
		case no:
			parts = append(parts, name+"=no")
		}
	}
	list("class", names(w.classes))
	list("semantic", names(w.semantics))
	cond("limit", w.limit)
	cond("continue", w.cont)
	cond("attemptsLeft", w.attemptsLeft)
	cond("mostRecentFallbackAllowed", w.mostRecentFallback)
	list("Policy.ContinueExpired", names(w.continueExpired))
	list("Policy.TooLargeAfterBudget", names(w.tooLarge))
	return strings.Join(parts, " ")
}

func names[T fmt.Stringer](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}
