package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

// Next decides what follows the answer to the request in flight: it
// verifies the answer, gathers the situation (charging the budget for
// hidden retries), asks the table, and carries out the row it answers: the
// end of the call or the finished next request. Every Step names the row it
// carries out (Step.Row) and reports that row's Action and Reason.
//
//	send -> Next -> (Done | hand the page over | wait Next.Wait -> send Next.Next)
func (c *Call) Next(a Answer) Step {
	c.requests++
	class, evidence := c.verify(a)
	s, b := c.situation(a, class)
	d := decide(s, c.p)
	st := Step{Action: d.Action, Reason: d.Reason, Source: d.Source, Row: d.index, Situation: s, Class: class, Evidence: evidence}
	switch evidence {
	case EvidenceIgnored:
		c.learned = MatchIgnored
	case EvidenceHonoured:
		c.learned = MatchHonoured
	}
	ev := fallback.Event{Reason: fallback.ReasonCode(d.Reason), Action: d.Action, Attempt: c.requests, Class: class, Before: c.sent.Query, Err: a.Err}
	if c.sent.Purpose != PurposePage {
		return c.probeAnswered(st, ev, a, b)
	}
	switch {
	case d.Action == vocab.Accept:
		return c.accept(st, a)
	case d.Action.IsFailure():
		c.futile++
		return c.end(st, ev, c.failDetail(d.Reason, a))
	}
	c.futile++
	c.used[b]++
	return c.followUp(st, ev, d.Row, a)
}

// situation gathers what the table matches on for the answer to the request
// in flight, and charges the class's budget for the retries hidden inside
// the request. It returns the budget charged.
func (c *Call) situation(a Answer, class vocab.Class) (Situation, budget) {
	sent, q := c.sent, c.sent.Query
	s := Situation{Semantic: q.Semantic, HasLimit: sent.Options.Limit > 0, HasContinue: q.Continue != "", Match: c.match, Class: class, RVChecked: c.rvChecked}
	if class == vocab.TooLargeRV && sent.Purpose == PurposePage && a.Err != nil {
		c.noteTooLarge(q, a.Err)
	}
	s.WatchCacheStuck = class == vocab.TooLargeRV && (c.stalled || c.cfg.Beliefs != nil && c.cfg.Beliefs.WatchCacheStuck())
	if q.Continue != "" {
		s.Semantic = c.first.Semantic
	}
	switch sent.Purpose {
	case PurposePage:
		futile := c.futile
		if class != vocab.OK {
			futile++ // this answer delivers no page
		}
		s.NotAList = a.NotAList
		s.RequestsLeft = c.cfg.MaxRequests <= 0 || futile < c.cfg.MaxRequests
		s.RestartAllowed = c.requested.Continue == "" && (c.handed == 0 || c.cfg.CanVoidPages)
	case PurposeNewerRV:
		s.Op, s.Match, s.ListRV = OpNewerRV, MatchHonoured, a.ServedRV != ""
	case PurposeCurrentRV:
		s.Op, s.Match, s.ListRV = OpCurrentRV, MatchHonoured, a.ServedRV != ""
	}
	b := budgetOf[class]
	if s.HasContinue && class == vocab.Gone {
		b = restartBudget
	}
	if ra, _ := RetryAfter(a.Err); b != noBudget && a.WireRequests > 1 {
		// Counted: client-go's retries inside this request.
		c.used[b] += a.WireRequests - 1
	} else if b != noBudget && a.WireRequests == 0 && ra > 0 {
		// Not counted: one hidden attempt costs at least its Retry-After; a
		// too-large answer also waits in the watch cache (up to 3s) before
		// it is sent.
		per := ra
		if class == vocab.TooLargeRV {
			per += watchCacheTooLargeWait
		}
		c.used[b] += min(int(a.Elapsed/per), 10)
	}
	if b != noBudget && c.bo == nil {
		c.bo = c.p.Backoff.New() // the call's one backoff sequence, made at its first failure
	}
	s.AttemptsLeft = b != noBudget && c.used[b] < c.limits[b] &&
		(b != backoffBudget || c.bo.GetElapsedTime() < c.p.Backoff.MaxElapsedTime)
	return s, b
}

// accept carries out the Accept row: the page is handed over, and the next
// continuation page, if any, asked for.
func (c *Call) accept(st Step, a Answer) Step {
	if c.snapshot == "" {
		c.snapshot = a.ServedRV
	}
	c.handed++
	st.Accept, st.Served, st.SnapshotRV = true, c.first, c.snapshot
	if a.Continue == "" {
		st.Done = true
		return st
	}
	c.seen.add(a.Continue)
	// Each continuation page asks for twice the previous page's limit,
	// up to MaxPageSize objects and, when MaxPageBytes > 0, only while
	// the previous page's objects say the next stays within it.
	limit := c.sent.Options.Limit
	if limit <= 0 {
		limit = c.cfg.PageSize // a continue token on an unlimited list: a continue request needs a limit
	}
	if c.cfg.MaxPageSize > limit {
		next := min(2*limit, c.cfg.MaxPageSize)
		if c.cfg.MaxPageBytes > 0 && a.PageBytes > 0 && a.Items > 0 {
			next = min(next, max(limit, c.cfg.MaxPageBytes/max(a.PageBytes/int64(a.Items), 1)))
		}
		limit = next
	}
	st.Next = c.request(PurposePage, fallback.Query{Semantic: fallback.MostRecent, Limit: limit, Continue: a.Continue}, 0, false)
	return st
}

// end carries out a failing row: the call ends with its event.
func (c *Call) end(st Step, ev fallback.Event, detail string) Step {
	ev.Detail = detail
	st.Done, st.Event, st.Served, st.SnapshotRV = true, &ev, c.first, c.snapshot
	return st
}

// failDetail is the event detail of a failing row of a page.
func (c *Call) failDetail(r reason.Code, a Answer) string {
	switch r {
	case reason.ServedOlderExhausted:
		return fmt.Sprintf("served %s, requested not older than %s", a.ServedRV, c.requested.ResourceVersion)
	case reason.ContinueRepeated:
		return fmt.Sprintf("%d page(s) of snapshot %s were handed over before the repeat", c.handed, c.snapshot)
	case reason.MaxRequests:
		return fmt.Sprintf("%d requests delivered no page (Options.MaxRequests)", c.futile)
	case reason.RestartNotAllowed:
		if c.requested.Continue != "" {
			return "the caller's continue token expired; its first page is unknown, so the list cannot restart"
		}
		return fmt.Sprintf("%d page(s) of snapshot %s were handed over and the caller did not allow a restart (OnRestart)", c.handed, c.snapshot)
	}
	return ""
}

// followUp carries out a row that sends another request for the page: it
// builds the next query from the row's action, its wait, and the probe the
// query needs first, if any.
func (c *Call) followUp(st Step, ev fallback.Event, r Row, a Answer) Step {
	var why []string // the event's detail, part by part, joined once
	if (r.Action == vocab.RestartListNewerRV || r.Action == vocab.RestartListUnpaginated) && c.handed > 0 {
		st.VoidPages = true
		why = append(why, fmt.Sprintf("%d page(s) of snapshot %s voided", c.handed, c.snapshot))
	}
	// The floor below which no fallback may go is the requested
	// resourceVersion, raised to the snapshot already handed over (a
	// restart never serves an older snapshot than pages the caller saw).
	floor := c.first.ResourceVersion
	if c.handed > 0 && (floor == "" || vocab.CompareRV(c.snapshot, floor) == vocab.Newer) {
		floor = c.snapshot
	}
	next := c.nextQuery(r.Action, floor)
	wait, ra := c.waitFor(r.Action, a.Err)
	if ra > 0 && r.Action != vocab.Backoff {
		why = append(why, fmt.Sprintf("Retry-After %s honoured (cap %s)", ra, c.p.MaxRetryAfter))
	}
	newAttempt := r.Action != vocab.WaitRetryAfter && r.Action != vocab.Backoff && r.Action != vocab.CheckRVExists
	switch {
	case r.Action == vocab.CheckRVExists:
		// Read the current resourceVersion at once; the wait comes after.
		c.probe = probe{state: PurposeCurrentRV, page: c.sent.Query, wait: wait, pending: st, event: ev, detail: strings.Join(why, "; ")}
		st.Next = c.request(PurposeCurrentRV, fallback.Query{}, 0, false)
		ev.After = st.Next.Query
		ev.Detail = "reading the server's current resourceVersion: a requested one newer than it was never handed out"
		st.Event = &ev
		return st
	case next.Semantic == fallback.NotOlderThan && next.ResourceVersion == "":
		// The caller's last observed resourceVersion, when newer than floor
		// and not tried yet in this call.
		h := ""
		if f := c.cfg.LastObserved; f != nil {
			h = f()
		}
		if h != "" && !c.tried[h] && (floor == "" || vocab.CompareRV(h, floor) == vocab.Newer) {
			if c.tried == nil {
				c.tried = map[string]bool{}
			}
			c.tried[h] = true
			next.ResourceVersion = h
			why = append([]string{"newer resourceVersion " + h + " from the caller's last observed resourceVersion"}, why...)
			break
		}
		// The probe is a request of its own; the event waits for its answer.
		if wait > 0 {
			why = append(why, "waited "+wait.Round(time.Millisecond).String())
		}
		c.probe = probe{state: PurposeNewerRV, page: next, pending: st, event: ev, detail: strings.Join(why, "; "), floor: floor, newAttempt: newAttempt}
		st.Next = c.request(PurposeNewerRV, fallback.Query{}, wait, false)
		return st
	}
	st.Next = c.request(PurposePage, next, wait, newAttempt)
	ev.After = next
	if r.Reason == reason.TooLargeCacheStuck {
		why = append(why, c.stuckDetailFor())
	}
	if wait > 0 {
		why = append(why, "waiting "+wait.Round(time.Millisecond).String())
	}
	ev.Detail = strings.Join(why, "; ")
	st.Event = &ev
	return st
}

// nextQuery is the query a follow-up action sends (its resourceVersion
// unset when a newer one is needed). The table pairs RetryNewerRV only with
// NotOlderThan, RetryWithLimit only with Exact, and never lets Exact leave
// its snapshot (TestTableExhaustive).
func (c *Call) nextQuery(act vocab.Action, floor string) fallback.Query {
	first := c.first
	switch act {
	case vocab.RetryNewerRV, vocab.RestartListNewerRV:
		next := fallback.Query{Semantic: first.Semantic, Limit: first.Limit}
		if act == vocab.RetryNewerRV || first.Semantic == fallback.NotOlderThan || first.Semantic == fallback.Any && c.handed > 0 && floor != "" {
			// Any may be served older than the pages already handed over.
			next.Semantic = fallback.NotOlderThan
		}
		return next
	case vocab.FallbackMostRecent:
		return fallback.Query{Semantic: fallback.MostRecent, Limit: first.Limit}
	case vocab.RetryWithLimit:
		return first.WithLimit(c.cfg.PageSize)
	case vocab.RestartListUnpaginated:
		next := first
		next.Limit, next.Continue = 0, ""
		return next
	}
	return c.sent.Query // WaitRetryAfter, Backoff, CheckRVExists: the same request again
}

// waitFor is how long to wait before a follow-up action's request, and the
// server's Retry-After.
func (c *Call) waitFor(act vocab.Action, err error) (wait, ra time.Duration) {
	switch act {
	case vocab.WaitRetryAfter, vocab.Backoff, vocab.RetryNewerRV, vocab.CheckRVExists:
		ra, _ = RetryAfter(err)
		wait = min(ra, c.p.MaxRetryAfter)
		if act != vocab.WaitRetryAfter || ra <= 0 {
			wait = max(min(c.bo.NextBackOff(), c.p.Backoff.Max), wait)
		}
		return wait, ra
	}
	return 0, 0
}
