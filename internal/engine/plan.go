package engine

import (
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/steadywatch/steadywatch/fallback"
)

// Input is one answered request, as the executor saw it after verifying it.
type Input struct {
	// First is the first page of the current list attempt (no continue token).
	First fallback.Query
	// Sent is the request that was answered (First, or a continue page).
	Sent fallback.Query
	// Match is the belief about resourceVersionMatch support when Sent was sent.
	Match MatchSupport
	// WireLimit is the limit actually sent (the legacy Exact limit included).
	WireLimit int64
	// Class is the verified class of the answer.
	Class fallback.Class
	// RetryAfter is the server's Retry-After (0 if none).
	RetryAfter time.Duration
	// Elapsed is how long the request took. client-go's REST client retries
	// a 429/5xx that carries a Retry-After up to 10 times inside one request,
	// waiting Retry-After each time; an answer that took Elapsed with
	// Retry-After RA stands for about Elapsed/RA such hidden attempts, which
	// are charged to the budget so that retries inside retries do not
	// multiply it.
	Elapsed time.Duration
	// WireRequests is how many HTTP requests the answer took on the wire,
	// counted (0: not known, e.g. a fake client or a shared answer). When
	// known, its retries inside client-go (WireRequests-1) are charged
	// instead of the estimate from Elapsed.
	WireRequests int
	// Continue is the continue token of an answered page ("" on the last page).
	Continue string
	// PageBytes estimates the size of the answered page's objects (0:
	// unknown); with Items it bounds the growth of the next page's limit
	// (GrowPagesTo).
	PageBytes int64
	Items     int
	// Handed counts the pages of the current snapshot already handed over;
	// SnapshotRV is that snapshot's resourceVersion.
	Handed     int
	SnapshotRV string
	// CanVoidPages: the caller accepts a restart after pages were handed over.
	CanVoidPages bool
	// CallerContinue: the list began at the caller's own continue token, so
	// its first page is unknown and it cannot restart.
	CallerContinue bool
}

func (in Input) situation() Situation {
	sem := in.Sent.Semantic
	if in.Sent.Continue != "" {
		sem = in.First.Semantic
	}
	return Situation{Semantic: sem, HasLimit: in.WireLimit > 0, HasContinue: in.Sent.Continue != "", Match: in.Match, Class: in.Class}
}

// watchCacheTooLargeWait is how long an apiserver's watch cache waits for a
// resourceVersion it has not reached before answering "too large" (3s in
// k8s.io/apiserver's cacher): part of each hidden attempt's cost.
const watchCacheTooLargeWait = 3 * time.Second

// Step is everything the executor does next. The loop reads:
//
//	send -> verify -> Plan -> (Done | Fail | [probe Floor] -> wait Wait -> send Next)
type Step struct {
	// Action and Reason are the decision; Source cites the rule; Row is the
	// table row (-1 for the executor's own conditions).
	Action fallback.Action
	Reason fallback.ReasonCode
	Source string
	Row    int
	// Situation is what the row matched.
	Situation Situation
	// Done: the list is complete (Accept of the last page).
	Done bool
	// Next is the request to send next (zero when Done or failing).
	Next fallback.Query
	// NewAttempt: Next is the first page of a new attempt (a new snapshot).
	NewAttempt bool
	// ProbeNewerRV: Next.ResourceVersion must be set to a resourceVersion
	// newer than Floor (the caller's last observed, or a limit=1 list's)
	// before sending.
	ProbeNewerRV bool
	Floor        string
	// Wait is how long to wait before sending Next.
	Wait time.Duration
	// VoidPages: the pages handed over so far are void (a restart).
	VoidPages bool
	// Detail explains the wait and the restart for logs and Events.
	Detail string
}

// Failed reports whether the step ends the call with an error.
func (s Step) Failed() bool { return s.Action.IsFailure() }

// Planner owns one list call's retry budgets and backoff. It is not safe for
// concurrent use: one per call.
type Planner struct {
	policy       fallback.Policy
	pageSize     int64
	maxPageSize  int64
	maxPageBytes int64
	used         [numBudgets]int
	bo           *backoff.ExponentialBackOff
}

// NewPlanner returns the planner of one list call; p is applied its
// defaults; pageSize is the limit of rule 2's retry.
func NewPlanner(p fallback.Policy, pageSize int64) *Planner {
	p = p.WithDefaults()
	if pageSize <= 0 {
		pageSize = fallback.DefaultLegacyExactLimit
	}
	return &Planner{policy: p, pageSize: pageSize}
}

// GrowPagesTo makes each continuation page ask for twice the previous
// page's limit, up to max objects (no growth when max is not above the
// limit) and, when maxBytes > 0, only while the previous page's objects
// say the next page stays within maxBytes: a large collection then takes a
// few requests instead of one per limit objects, while the first page stays
// small and every page stays bounded, in objects and in bytes (the
// apiserver holds a page in memory while it builds it; without its watch
// cache, from etcd).
func (pl *Planner) GrowPagesTo(max, maxBytes int64) { pl.maxPageSize, pl.maxPageBytes = max, maxBytes }

// nextLimit is the limit of the page after one sent with limit whose
// objects took about pageBytes (0: unknown) for items objects. It never
// goes below limit.
func (pl *Planner) nextLimit(limit, pageBytes int64, items int) int64 {
	if limit <= 0 || pl.maxPageSize <= limit {
		return limit
	}
	next := min(2*limit, pl.maxPageSize)
	if pl.maxPageBytes > 0 && pageBytes > 0 && items > 0 {
		per := max(pageBytes/int64(items), 1)
		next = min(next, max(limit, pl.maxPageBytes/per))
	}
	return next
}

// Policy returns the policy in force (defaults applied).
func (pl *Planner) Policy() fallback.Policy { return pl.policy }

func (pl *Planner) left(b budget) bool {
	p := pl.policy
	switch b {
	case newerRVBudget:
		return pl.used[b] < max(p.MaxNewerRVRetries, 0)
	case restartBudget:
		return pl.used[b] < max(p.MaxListRestarts, 0)
	case tooLargeBudget:
		return pl.used[b] < max(p.MaxTooLargeRetries, 0)
	case backoffBudget:
		return pl.used[b] < max(p.Backoff.MaxRetries, 0) && (pl.bo == nil || pl.bo.GetElapsedTime() < p.Backoff.MaxElapsedTime)
	}
	return false
}

// delay returns the next backoff delay (the one backoff sequence of the call).
func (pl *Planner) delay() time.Duration {
	if pl.bo == nil {
		pl.bo = pl.policy.Backoff.New()
	}
	return min(pl.bo.NextBackOff(), pl.policy.Backoff.Max)
}

// capped returns the server's Retry-After capped by Policy.MaxRetryAfter.
func (pl *Planner) capped(ra time.Duration) time.Duration { return min(ra, pl.policy.MaxRetryAfter) }

// Plan decides what follows one answered request and charges the budget.
func (pl *Planner) Plan(in Input) Step {
	s := in.situation()
	b := budgetFor(s.normalize().Class)
	switch {
	case b != noBudget && in.WireRequests > 1:
		pl.used[b] += in.WireRequests - 1
	case b != noBudget && in.WireRequests == 0 && in.RetryAfter > 0:
		// One hidden attempt costs at least its Retry-After; a too-large
		// answer also waits in the watch cache (up to 3s) before it is sent.
		per := in.RetryAfter
		if s.Class == fallback.TooLargeRV {
			per += watchCacheTooLargeWait
		}
		pl.used[b] += min(int(in.Elapsed/per), 10)
	}
	s.AttemptsLeft = pl.left(b)
	d := decide(s, pl.policy)
	st := Step{Action: d.Action, Reason: d.Reason, Source: d.Source, Row: d.index, Situation: s}

	switch d.Action {
	case fallback.Accept:
		if in.Continue == "" {
			st.Done = true
			return st
		}
		st.Next = fallback.Query{Semantic: fallback.MostRecent, Limit: pl.nextLimit(in.WireLimit, in.PageBytes, in.Items), Continue: in.Continue}
		return st
	case fallback.Fail, fallback.FailExactUnavailable:
		return st
	}
	pl.used[b]++

	restart := d.Action == fallback.RestartListNewerRV || d.Action == fallback.RestartListUnpaginated
	if restart && in.CallerContinue {
		return pl.refuse(st, "the caller's continue token expired; its first page is unknown, so the list cannot restart")
	}
	if restart && in.Handed > 0 {
		st.VoidPages = true
		if !in.CanVoidPages {
			return pl.refuse(st, fmt.Sprintf("%d page(s) of snapshot %s were handed over and the caller did not allow a restart (OnRestart)", in.Handed, in.SnapshotRV))
		}
		st.Detail = fmt.Sprintf("%d page(s) of snapshot %s voided", in.Handed, in.SnapshotRV)
	}

	// The floor below which no fallback may go: the requested resourceVersion,
	// raised to the snapshot already handed over (a restart never serves an
	// older snapshot than pages the caller saw).
	floor := in.First.ResourceVersion
	if in.Handed > 0 && fallback.CompareRV(in.SnapshotRV, floor) == fallback.Newer || floor == "" && in.Handed > 0 {
		floor = in.SnapshotRV
	}
	next, ok := nextQuery(d.Action, in.Sent, in.First, pl.pageSize)
	if !ok {
		st.Action, st.Reason, st.Source, st.Row = fallback.Fail, fallback.ReasonUnexpectedObservation, "no follow-up request exists for this action and semantic", -1
		return st
	}
	if restart && d.Action == fallback.RestartListNewerRV && in.Handed > 0 && next.Semantic == fallback.Any && floor != "" {
		// Any may be served older than the pages already handed over.
		next = fallback.Query{Semantic: fallback.NotOlderThan, Limit: next.Limit}
	}
	if next.Semantic == fallback.NotOlderThan && (d.Action == fallback.RetryNewerRV || d.Action == fallback.RestartListNewerRV) {
		st.ProbeNewerRV, st.Floor = true, floor
	}
	st.Next = next
	st.NewAttempt = d.Action != fallback.WaitRetryAfter && d.Action != fallback.Backoff

	switch d.Action {
	case fallback.WaitRetryAfter:
		if in.RetryAfter > 0 {
			st.Wait = pl.capped(in.RetryAfter)
			st.Detail = join(st.Detail, fmt.Sprintf("Retry-After %s honoured (cap %s)", in.RetryAfter, pl.policy.MaxRetryAfter))
		} else {
			st.Wait = pl.delay()
		}
	case fallback.Backoff:
		st.Wait = max(pl.delay(), pl.capped(in.RetryAfter))
	case fallback.RetryNewerRV:
		st.Wait = pl.delay()
	}
	if st.Wait > 0 {
		st.Detail = join(st.Detail, fmt.Sprintf("waiting %s", st.Wait.Round(time.Millisecond)))
	}
	return st
}

func (pl *Planner) refuse(st Step, why string) Step {
	st.Action, st.Reason, st.Row, st.Detail = fallback.Fail, fallback.ReasonRestartNotAllowed, -1, join(st.Detail, why)
	st.Next, st.VoidPages = fallback.Query{}, false
	return st
}

// ProbeFailed decides whether a failed newer-resourceVersion probe (the
// limit=1 MostRecent list) is retried: transient failures (429, 5xx,
// transport, too large) back off like any request, within the call's backoff
// budget; anything else fails the call.
func (pl *Planner) ProbeFailed(class fallback.Class, retryAfter time.Duration) (retry bool, wait time.Duration) {
	switch class {
	case fallback.Throttled, fallback.ServerError, fallback.Transport, fallback.TooLargeRV:
	default:
		return false, 0
	}
	if !pl.left(backoffBudget) {
		return false, 0
	}
	pl.used[backoffBudget]++
	return true, max(pl.delay(), pl.capped(retryAfter))
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// nextQuery returns the request to send after action a:
//
//	cur      the request just answered (possibly a continue page)
//	first    the first page of the current list attempt (no continue token)
//	pageSize the limit for RetryWithLimit when first has none
//
// A NotOlderThan query it returns for RetryNewerRV and RestartListNewerRV
// has no resourceVersion yet: the executor fills it (Step.ProbeNewerRV).
// ok is false for Accept, Fail and FailExactUnavailable, and for actions that
// do not apply to the semantic (the table never pairs them).
func nextQuery(a fallback.Action, cur, first fallback.Query, pageSize int64) (q fallback.Query, ok bool) {
	switch a {
	case fallback.WaitRetryAfter, fallback.Backoff:
		return cur, true
	case fallback.RetryNewerRV:
		if first.Semantic != fallback.NotOlderThan {
			return fallback.Query{}, false
		}
		return fallback.Query{Semantic: fallback.NotOlderThan, Limit: first.Limit}, true
	case fallback.FallbackMostRecent:
		if first.Semantic == fallback.Exact {
			return fallback.Query{}, false
		}
		return fallback.Query{Semantic: fallback.MostRecent, Limit: first.Limit}, true
	case fallback.RetryWithLimit:
		if first.Semantic != fallback.Exact {
			return fallback.Query{}, false
		}
		return first.WithLimit(pageSize), true
	case fallback.RestartListNewerRV:
		switch first.Semantic {
		case fallback.NotOlderThan:
			return fallback.Query{Semantic: fallback.NotOlderThan, Limit: first.Limit}, true
		case fallback.MostRecent, fallback.Any:
			return fallback.Query{Semantic: first.Semantic, Limit: first.Limit}, true
		}
		return fallback.Query{}, false
	case fallback.RestartListUnpaginated:
		if first.Semantic == fallback.Exact {
			return fallback.Query{}, false
		}
		q := first
		q.Limit, q.Continue = 0, ""
		return q, true
	}
	return fallback.Query{}, false
}
