package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// probe is the limit=1 MostRecent read a list call sends between two
// pages: for a newer resourceVersion (PurposeNewerRV: rule 1, list
// restarts), or to learn whether a "too large" one exists
// (PurposeCurrentRV: CheckRVExists). It is idle (PurposePage) until a row
// sends one, reading while its answers are retried, and idle again once a
// row answers it. It holds the page the read serves and the row that sent
// it, so that the answer carries that row out. A row that sends a read
// sets it whole (Call.followUp).
type probe struct {
	state Purpose
	// page is the page the read serves: its resourceVersion comes from the
	// read (PurposeNewerRV), or it is resent as is (PurposeCurrentRV)
	// after wait.
	page fallback.Query
	wait time.Duration
	// pending is the step of the row that sent the read; event is its
	// event, whose detail so far is detail.
	pending Step
	event   fallback.Event
	detail  string
	// floor is the resourceVersion a newer one may not be older than;
	// newAttempt: the page starts a new snapshot.
	floor      string
	newAttempt bool
}

// probeAnswered carries out the row for the answer to the read in flight
// (OpNewerRV, OpCurrentRV rows). The Accept row hands the answer to the row
// that sent the read: the step then names and carries out that row (for a
// CheckRVExists read, the too-large page's row asked again, now that its
// resourceVersion is known to exist).
func (c *Call) probeAnswered(st Step, ev fallback.Event, a Answer, b budget) Step {
	p := &c.probe
	ev.Before = p.page
	switch {
	case st.Action == fallback.Accept && p.state == PurposeCurrentRV:
		c.rvChecked = true
		s := p.pending.Situation
		s.RVChecked = true
		d := decide(s, c.p)
		st = Step{Action: d.Action, Reason: d.Reason, Source: d.Source, Row: d.index, Situation: s, Class: st.Class, Evidence: st.Evidence}
		ev = p.event
		why := []string{fmt.Sprintf("resourceVersion %s exists (the server's current is %s)", p.page.ResourceVersion, a.ServedRV)}
		if d.Action == fallback.FallbackMostRecent {
			why = append(why, c.stuckDetailFor())
			st.Next = c.request(PurposePage, fallback.Query{Semantic: fallback.MostRecent, Limit: c.first.Limit}, 0, true)
		} else {
			if p.detail != "" {
				why = append(why, p.detail)
			}
			why = append(why, "waiting "+p.wait.Round(time.Millisecond).String())
			st.Next = c.request(PurposePage, p.page, p.wait, false)
		}
		ev.Detail = strings.Join(why, "; ")
	case st.Action == fallback.Accept:
		rv, where := a.ServedRV, "ListMeta.resourceVersion of a limit=1 MostRecent list"
		if p.floor != "" && fallback.CompareRV(rv, p.floor) == fallback.Older {
			rv, where = p.floor, "the floor (newest "+rv+" is older)" // never back in time
		}
		if c.tried == nil {
			c.tried = map[string]bool{}
		}
		c.tried[rv] = true
		next := p.page
		next.ResourceVersion = rv
		st = Step{Action: p.pending.Action, Reason: p.pending.Reason, Source: p.pending.Source, Row: p.pending.Row, Situation: p.pending.Situation, Class: st.Class, Evidence: st.Evidence}
		ev = p.event
		why := []string{"newer resourceVersion " + rv + " from " + where}
		if p.detail != "" {
			why = append(why, p.detail)
		}
		ev.Detail = strings.Join(why, "; ")
		st.Next = c.request(PurposePage, next, p.wait, p.newAttempt)
	case st.Action == fallback.Backoff:
		c.used[b]++
		ra, _ := fallback.RetryAfter(a.Err)
		wait := max(min(c.bo.NextBackOff(), c.p.Backoff.Max), min(ra, c.p.MaxRetryAfter))
		st.Next = c.request(c.sent.Purpose, fallback.Query{}, wait, false)
		ev.Detail = fmt.Sprintf("waiting %s", wait.Round(time.Millisecond))
	case st.Reason == reason.NewerRVProbeFailed && !st.Situation.ListRV && st.Class == fallback.OK:
		ev.Err = ErrNoListResourceVersion
		ev.Detail = "the limit=1 read failed: " + ErrNoListResourceVersion.Error()
	case st.Reason == reason.NewerRVProbeFailed:
		ev.Detail = fmt.Sprintf("the limit=1 read of the current resourceVersion failed (%s)", st.Class)
	}
	if st.Next.Purpose == PurposePage {
		p.state = PurposePage // answered: idle again
	}
	ev.Reason, ev.Action, ev.After = fallback.ReasonCode(st.Reason), st.Action, st.Next.Query
	st.Done, st.Event = st.Action.IsFailure(), &ev
	return st
}
