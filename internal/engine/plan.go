package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
)

// Purpose says why a request is sent.
type Purpose int

const (
	// PurposePage: a page of the list (a first page, a continue page, a retry).
	PurposePage Purpose = iota
	// PurposeNewerRV: a limit=1 MostRecent list whose ListMeta.resourceVersion
	// becomes the next first page's resourceVersion (rule 1, list restarts).
	PurposeNewerRV
	// PurposeCurrentRV: the same list, read to learn whether the requested
	// resourceVersion exists at all (CheckRVExists).
	PurposeCurrentRV
)

// Request is the finished next request: what is asked, its wire form, and
// how long to wait before sending it.
type Request struct {
	Purpose Purpose
	// Query is what is asked (for a probe, MostRecent with limit 1).
	Query fallback.Query
	// Form and Options are the wire form; Options carries Config.Base's selectors.
	Form    fallback.WireForm
	Options metav1.ListOptions
	// Wait is how long to wait before sending.
	Wait time.Duration
}

// Answer is what one request returned, as the executor read it. Every field
// is the server's and untrusted.
type Answer struct {
	// Err is the request's error (nil for a 200).
	Err error
	// NotAList: a 200 whose body has no ListMeta.
	NotAList bool
	// ServedRV and Continue are ListMeta's; Items counts the page's objects.
	ServedRV, Continue string
	Items              int
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
	// PageBytes estimates the size of the page's objects (0: unknown); the
	// executor fills it only when the next page's limit may grow.
	PageBytes int64
}

// Config is what one list call knows before its first request.
type Config struct {
	// Policy is applied its defaults.
	Policy fallback.Policy
	// PageSize is rule 2's limit (and the legacy Exact limit); MaxPageSize
	// and MaxPageBytes bound the growth of continuation pages.
	PageSize, MaxPageSize, MaxPageBytes int64
	// MaxRequests bounds the requests that deliver no page (0: no bound).
	MaxRequests int
	// Base carries the selectors every request keeps.
	Base metav1.ListOptions
	// LastObserved, if set, returns a resourceVersion the caller has seen,
	// tried before a probe when a newer one is needed.
	LastObserved func() string
	// CanVoidPages: the caller accepts a restart after pages were handed over.
	CanVoidPages bool
	// Beliefs, if set, are the caller's beliefs about the server, read
	// during the call.
	Beliefs Beliefs
}

// Beliefs are what the caller believes about the server. An interface
// rather than two funcs: an executor implements it on state it already
// holds, with no closure made per call.
type Beliefs interface {
	// Match is the belief about resourceVersionMatch support; it is read
	// before each first page.
	Match() MatchSupport
	// WatchCacheStuck reports whether the server's watch cache advances
	// only on writes of the listed resource (no watch progress
	// notifications, KEP-1904); it is read at each "too large" answer. The
	// call also sees it for itself: two "too large" answers to one request
	// that report the same current resourceVersion.
	WatchCacheStuck() bool
}

// StaticBeliefs are fixed beliefs.
type StaticBeliefs struct {
	MatchSupport MatchSupport
	Stuck        bool
}

// Match implements Beliefs.
func (b StaticBeliefs) Match() MatchSupport { return b.MatchSupport }

// WatchCacheStuck implements Beliefs.
func (b StaticBeliefs) WatchCacheStuck() bool { return b.Stuck }

// Step is the engine's one decision about an answer: the row, and either the
// end of the call or the finished next request.
type Step struct {
	// Action and Reason are the decision; Source cites the rule; Row is the
	// table row (-1 for the call's own conditions).
	Action fallback.Action
	Reason fallback.ReasonCode
	Source string
	Row    int
	// Situation is what the row matched; Class is the verified class.
	Situation Situation
	Class     fallback.Class
	// Accept: hand the answered page over.
	Accept bool
	// Done: the call ends here, with an error when Failed.
	Done bool
	// Next is the request to send next (zero when Done).
	Next Request
	// VoidPages: the pages handed over so far are void (a restart).
	VoidPages bool
	// Event is the decision as users see it (nil for Accept and for a
	// decision whose event waits for the probe it sends).
	Event *fallback.Event
	// Evidence is what the answer proved about resourceVersionMatch.
	Evidence Evidence
	// Served and SnapshotRV name the snapshot handed over.
	Served     fallback.Query
	SnapshotRV string
}

// Failed reports whether the step ends the call with an error.
func (s Step) Failed() bool { return s.Action.IsFailure() }

// ErrNoListResourceVersion is a probe's error when its ListMeta has no
// resourceVersion.
var ErrNoListResourceVersion = errors.New("limit=1 list returned no resourceVersion")

// maxRevisionsPerSecond bounds how fast any cluster's resourceVersion can
// grow: etcd's own benchmarks reach tens of thousands of writes a second
// (etcd docs, "Performance"). A requested resourceVersion further ahead of
// the server's current one than this rate allows within the rest of the
// too-large budget cannot be reached by waiting: the call fails at once.
const maxRevisionsPerSecond = 100_000

// watchCacheTooLargeWait is how long an apiserver's watch cache waits for a
// resourceVersion it has not reached before answering "too large" (3s in
// k8s.io/apiserver's cacher): part of each hidden attempt's cost.
const watchCacheTooLargeWait = 3 * time.Second

// stuckDetail explains ReasonTooLargeCacheStuck in its event.
const stuckDetail = "this server's watch cache moves only when the listed resource is written " +
	"(no watch progress notifications before KEP-1904): listing the most recent state instead of waiting"

// stalledDetail explains ReasonTooLargeCacheStuck when the answers showed it.
const stalledDetail = "the watch cache reported current resourceVersion %s in two answers: it is not catching up " +
	"(no watch progress notifications, KEP-1904); listing the most recent state instead of waiting"

// currentRVPattern finds the watch cache's resourceVersion in the apiserver's
// message "Too large resource version: N, current: M" (k8s.io/apiserver
// storage.NewTooLargeResourceVersionError).
var currentRVPattern = regexp.MustCompile(`current: ?([0-9]+)`)

// stuckDetailFor is the event detail of ReasonTooLargeCacheStuck.
func (c *Call) stuckDetailFor() string {
	if c.stalled {
		return fmt.Sprintf(stalledDetail, c.tooLargeCur)
	}
	return stuckDetail
}

// noteTooLarge records the current resourceVersion a "too large" page
// answer reports; a second answer to the same request with the same current
// one shows the cache is not moving toward it.
func (c *Call) noteTooLarge(q fallback.Query, err error) {
	cur := ""
	if m := currentRVPattern.FindStringSubmatch(err.Error()); m != nil {
		cur = m[1]
	}
	if cur != "" && cur == c.tooLargeCur && q.ResourceVersion == c.tooLargeAt {
		c.stalled = true
	}
	c.tooLargeAt, c.tooLargeCur = q.ResourceVersion, cur
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

// budgetOf is the budget of each class.
var budgetOf = map[fallback.Class]budget{
	fallback.Gone: newerRVBudget, fallback.ContinueExpired: restartBudget, fallback.TooLargeRV: tooLargeBudget,
	fallback.Throttled: backoffBudget, fallback.ServerError: backoffBudget, fallback.Transport: backoffBudget, fallback.NoAnswer: backoffBudget, fallback.ServedOlder: backoffBudget,
}

// Call is one list call's state: its budgets, its backoff, the snapshot
// being handed over and the request in flight. It is not safe for
// concurrent use: one per call.
type Call struct {
	cfg       Config
	p         fallback.Policy
	limits    [numBudgets]int
	used      [numBudgets]int
	bo        *backoff.ExponentialBackOff
	requested fallback.Query
	first     fallback.Query // the current attempt's first page
	sent      Request        // the request in flight
	match     MatchSupport   // belief when first was sent
	snapshot  string         // resourceVersion of the snapshot being handed over
	handed    int            // pages of it handed over
	seen      tokenSet       // continue tokens of the snapshot being handed over
	tried     map[string]bool
	requests  int
	futile    int // page answers that delivered no page
	rvChecked bool
	learned   MatchSupport // what this call's answers proved
	// after is the page a probe serves: its resourceVersion comes from the
	// probe (PurposeNewerRV) or it is resent as is (PurposeCurrentRV).
	after      fallback.Query
	afterEvent fallback.Event
	afterSit   Situation // the too-large page's situation, while CheckRVExists reads
	// tooLargeAt and tooLargeCur are the requested and the reported current
	// resourceVersion of the last "too large" page; stalled: two such answers
	// for one request reported the same current one (the cache did not move).
	tooLargeAt, tooLargeCur string
	stalled                 bool
	floor                   string
	afterWait               time.Duration
	afterAttempt            bool
}

// tokenSet is a set of continue tokens: the first few in place (most lists
// have few pages), the rest in a map made when a list needs it.
type tokenSet struct {
	few  [16]string
	n    int
	more map[string]struct{}
}

func (t *tokenSet) has(tok string) bool {
	for _, f := range t.few[:min(t.n, len(t.few))] {
		if f == tok {
			return true
		}
	}
	_, ok := t.more[tok]
	return ok
}

func (t *tokenSet) add(tok string) {
	if t.n < len(t.few) {
		t.few[t.n] = tok
		t.n++
		return
	}
	if t.more == nil {
		t.more = map[string]struct{}{}
	}
	t.more[tok] = struct{}{}
}

func (t *tokenSet) reset() {
	t.few, t.n = [16]string{}, 0
	clear(t.more)
}

// Start validates q and returns the call and its first request. The call
// is a value so that an executor can keep it in its own frame (no
// allocation per list call); use it through its address, never copied
// after Next.
func Start(q fallback.Query, cfg Config) (Call, Request, error) {
	if err := q.Validate(); err != nil {
		return Call{}, Request{}, err
	}
	p := cfg.Policy.WithDefaults()
	if cfg.PageSize <= 0 {
		cfg.PageSize = fallback.DefaultLegacyExactLimit
	}
	c := Call{cfg: cfg, p: p, requested: q}
	c.limits = [numBudgets]int{newerRVBudget: max(p.MaxNewerRVRetries, 0), restartBudget: max(p.MaxListRestarts, 0),
		tooLargeBudget: max(p.MaxTooLargeRetries, 0), backoffBudget: max(p.Backoff.MaxRetries, 0)}
	if f := cfg.LastObserved; f != nil && q.ResourceVersion != "" {
		// A version the caller has seen is known to exist: no check needed.
		h := f()
		c.rvChecked = h != "" && (fallback.CompareRV(h, q.ResourceVersion) == fallback.Newer || fallback.CompareRV(h, q.ResourceVersion) == fallback.Same)
	}
	req := c.request(PurposePage, q, 0, true)
	return c, req, nil
}

// request finishes a request: its wire form for the belief in force (read
// before each first page), and, for a new attempt, a new snapshot. It is
// the one place that knows the legacy Exact rule: a server that ignores
// resourceVersionMatch serves resourceVersion=N at exactly N only with a
// limit (KEP-2523, Backward Compatibility), so an Exact first page without
// one gets PageSize.
func (c *Call) request(p Purpose, q fallback.Query, wait time.Duration, newAttempt bool) Request {
	if p != PurposePage {
		q = fallback.MostRecentQuery().WithLimit(1)
		c.sent = Request{Purpose: p, Query: q, Form: fallback.Match, Options: q.ApplyTo(c.cfg.Base, fallback.Match), Wait: wait}
		return c.sent
	}
	if newAttempt {
		c.first, c.snapshot, c.handed = q, "", 0
		c.seen.reset()
	}
	if (q.Continue == "" || c.requests == 0) && c.cfg.Beliefs != nil {
		c.match = c.cfg.Beliefs.Match()
	}
	if (q.Continue == "" || c.requests == 0) && c.learned != MatchUnknown {
		c.match = c.learned // this call's own evidence is the newest
	}
	form := fallback.Match
	if c.match == MatchIgnored {
		form = fallback.Legacy
	}
	opts := q.ApplyTo(c.cfg.Base, form)
	if form == fallback.Legacy && q.Semantic == fallback.Exact && q.Continue == "" && q.Limit == 0 {
		opts.Limit = c.cfg.PageSize
	}
	c.sent = Request{Purpose: PurposePage, Query: q, Form: form, Options: opts, Wait: wait}
	return c.sent
}

// Next decides what follows the answer to the request in flight: it
// verifies the answer, charges the budget, looks the situation up in the
// table, and returns the end of the call or the finished next request.
//
//	send -> Next -> (Done | hand the page over | wait Next.Wait -> send Next.Next)
func (c *Call) Next(a Answer) Step {
	c.requests++
	sent, q := c.sent, c.sent.Query

	// Verify: every field is the server's.
	class, evidence := c.verify(a)

	// Look up: the situation, with the budget charged for hidden retries.
	s := Situation{Semantic: q.Semantic, HasLimit: sent.Options.Limit > 0, HasContinue: q.Continue != "", Match: c.match, Class: class, RVChecked: c.rvChecked}
	if class == fallback.TooLargeRV && sent.Purpose == PurposePage && a.Err != nil {
		c.noteTooLarge(q, a.Err)
	}
	s.WatchCacheStuck = class == fallback.TooLargeRV && (c.stalled || c.cfg.Beliefs != nil && c.cfg.Beliefs.WatchCacheStuck())
	if q.Continue != "" {
		s.Semantic = c.first.Semantic
	}
	if sent.Purpose != PurposePage {
		s.Match = MatchHonoured
	}
	b := budgetOf[class]
	if s.HasContinue && class == fallback.Gone {
		b = restartBudget
	}
	if ra, _ := fallback.RetryAfter(a.Err); b != noBudget && a.WireRequests > 1 {
		// Counted: client-go's retries inside this request.
		c.used[b] += a.WireRequests - 1
	} else if b != noBudget && a.WireRequests == 0 && ra > 0 {
		// Not counted: one hidden attempt costs at least its Retry-After; a
		// too-large answer also waits in the watch cache (up to 3s) before
		// it is sent.
		per := ra
		if class == fallback.TooLargeRV {
			per += watchCacheTooLargeWait
		}
		c.used[b] += min(int(a.Elapsed/per), 10)
	}
	if b != noBudget && c.bo == nil {
		c.bo = c.p.Backoff.New() // the call's one backoff sequence, made at its first failure
	}
	s.AttemptsLeft = b != noBudget && c.used[b] < c.limits[b] &&
		(b != backoffBudget || c.bo.GetElapsedTime() < c.p.Backoff.MaxElapsedTime)
	d := decide(s, c.p)
	st := Step{Action: d.Action, Reason: d.Reason, Source: d.Source, Row: d.index, Situation: s, Class: class}
	ev := fallback.Event{Reason: d.Reason, Action: d.Action, Attempt: c.requests, Class: class, Before: q, Err: a.Err}
	switch st.Evidence = evidence; evidence {
	case EvidenceIgnored:
		c.learned = MatchIgnored
	case EvidenceHonoured:
		c.learned = MatchHonoured
	}
	if a.NotAList {
		st.Action, st.Reason, st.Row, ev.Action, ev.Reason = fallback.Fail, fallback.ReasonNotAList, -1, fallback.Fail, fallback.ReasonNotAList
	}
	if sent.Purpose == PurposePage && st.Action != fallback.Accept {
		c.futile++
	}

	// Act: the answer of a probe.
	if sent.Purpose != PurposePage {
		ev.Before = c.after
		var checked decision
		if st.Action == fallback.Accept && sent.Purpose == PurposeCurrentRV && a.ServedRV != "" {
			checked = c.decideChecked() // the page's own row, now that its version is known to exist
		}
		switch {
		case st.Action == fallback.Accept && a.ServedRV == "":
			st.Action, st.Reason, st.Row, ev.Err = fallback.Fail, fallback.ReasonNewerRVProbeFailed, -1, ErrNoListResourceVersion
			ev.Detail = "the limit=1 read failed: " + ErrNoListResourceVersion.Error()
		case checked.Action == fallback.FallbackMostRecent:
			// The requested version exists, out of this watch cache's reach.
			c.rvChecked = true
			st.Action, st.Reason, st.Source, st.Row, ev = checked.Action, checked.Reason, checked.Source, checked.index, c.afterEvent
			ev.Detail = fmt.Sprintf("resourceVersion %s exists (the server's current is %s); %s", c.after.ResourceVersion, a.ServedRV, c.stuckDetailFor())
			st.Next = c.request(PurposePage, fallback.Query{Semantic: fallback.MostRecent, Limit: c.first.Limit}, 0, true)
		case st.Action == fallback.Accept && sent.Purpose == PurposeCurrentRV:
			// The requested version exists: a lagging member; wait and resend.
			c.rvChecked = true
			st.Action, st.Reason, ev = fallback.WaitRetryAfter, fallback.ReasonTooLargeWait, c.afterEvent
			ev.Detail = strings.TrimPrefix(fmt.Sprintf("resourceVersion %s exists (the server's current is %s); %s; waiting %s",
				c.after.ResourceVersion, a.ServedRV, ev.Detail, c.afterWait.Round(time.Millisecond)), "; ")
			ev.Detail = strings.Replace(ev.Detail, "; ; ", "; ", 1)
			st.Next = c.request(PurposePage, c.after, c.afterWait, false)
		case st.Action == fallback.Accept:
			rv, where := a.ServedRV, "ListMeta.resourceVersion of a limit=1 MostRecent list"
			if c.floor != "" && fallback.CompareRV(rv, c.floor) == fallback.Older {
				rv, where = c.floor, "the floor (newest "+rv+" is older)" // never back in time
			}
			if c.tried == nil {
				c.tried = map[string]bool{}
			}
			c.tried[rv] = true
			next := c.after
			next.ResourceVersion = rv
			st.Action, st.Reason, ev = c.afterEvent.Action, c.afterEvent.Reason, c.afterEvent
			ev.Detail = strings.TrimSuffix("newer resourceVersion "+rv+" from "+where+"; "+ev.Detail, "; ")
			st.Next = c.request(PurposePage, next, c.afterWait, c.afterAttempt)
		case st.Action == fallback.Backoff || st.Action == fallback.WaitRetryAfter:
			c.used[b]++
			ra, _ := fallback.RetryAfter(a.Err)
			wait := max(min(c.bo.NextBackOff(), c.p.Backoff.Max), min(ra, c.p.MaxRetryAfter))
			st.Next = c.request(sent.Purpose, fallback.Query{}, wait, false)
			ev.Detail = fmt.Sprintf("waiting %s", wait.Round(time.Millisecond))
		case st.Reason != fallback.ReasonRVNewerThanServer:
			st.Action, st.Reason, st.Row = fallback.Fail, fallback.ReasonNewerRVProbeFailed, -1
			ev.Detail = fmt.Sprintf("the limit=1 read of the current resourceVersion failed (%s)", class)
		}
		ev.Reason, ev.Action, ev.After = st.Reason, st.Action, st.Next.Query
		if st.Next.Purpose != PurposePage {
			ev.Reason, ev.Action = fallback.ReasonNewerRVProbeRetry, fallback.Backoff
		}
		e := ev
		st.Done, st.Event = st.Action.IsFailure(), &e
		return st
	}

	// Act: a page.
	switch {
	case st.Action == fallback.Accept:
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
		limit := sent.Options.Limit
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
	case st.Action.IsFailure():
		switch st.Reason {
		case fallback.ReasonServedOlderExhausted:
			ev.Detail = fmt.Sprintf("served %s, requested not older than %s", a.ServedRV, c.requested.ResourceVersion)
		case fallback.ReasonContinueRepeated:
			ev.Detail = fmt.Sprintf("%d page(s) of snapshot %s were handed over before the repeat", c.handed, c.snapshot)
		}
		e := ev
		st.Done, st.Event, st.Served, st.SnapshotRV = true, &e, c.first, c.snapshot
		return st
	case c.cfg.MaxRequests > 0 && c.futile >= c.cfg.MaxRequests:
		ev.Reason, ev.Action, ev.Detail = fallback.ReasonMaxRequests, fallback.Fail, fmt.Sprintf("%d requests delivered no page (Options.MaxRequests)", c.futile)
		e := ev
		st.Action, st.Reason, st.Row, st.Done, st.Event = fallback.Fail, fallback.ReasonMaxRequests, -1, true, &e
		return st
	}
	c.used[b]++

	// A restart voids the pages handed over, if the caller allows it.
	restart := d.Action == fallback.RestartListNewerRV || d.Action == fallback.RestartListUnpaginated
	refuse := ""
	switch {
	case restart && c.requested.Continue != "":
		refuse = "the caller's continue token expired; its first page is unknown, so the list cannot restart"
	case restart && c.handed > 0 && !c.cfg.CanVoidPages:
		refuse = fmt.Sprintf("%d page(s) of snapshot %s were handed over and the caller did not allow a restart (OnRestart)", c.handed, c.snapshot)
	case restart && c.handed > 0:
		st.VoidPages = true
		ev.Detail = fmt.Sprintf("%d page(s) of snapshot %s voided", c.handed, c.snapshot)
	}
	if refuse != "" {
		st.Action, st.Reason, st.Row, st.Done = fallback.Fail, fallback.ReasonRestartNotAllowed, -1, true
		ev.Action, ev.Reason, ev.Detail = st.Action, st.Reason, refuse
		e := ev
		st.Event = &e
		return st
	}

	// The next request. The floor below which no fallback may go is the
	// requested resourceVersion, raised to the snapshot already handed over
	// (a restart never serves an older snapshot than pages the caller saw).
	first := c.first
	floor := first.ResourceVersion
	if c.handed > 0 && (floor == "" || fallback.CompareRV(c.snapshot, floor) == fallback.Newer) {
		floor = c.snapshot
	}
	var next fallback.Query
	switch d.Action {
	case fallback.WaitRetryAfter, fallback.Backoff, fallback.CheckRVExists:
		next = q
	case fallback.RetryNewerRV, fallback.RestartListNewerRV:
		next = fallback.Query{Semantic: first.Semantic, Limit: first.Limit}
		if d.Action == fallback.RetryNewerRV || first.Semantic == fallback.NotOlderThan || first.Semantic == fallback.Any && c.handed > 0 && floor != "" {
			// Any may be served older than the pages already handed over.
			next.Semantic = fallback.NotOlderThan
		}
	case fallback.FallbackMostRecent:
		next = fallback.Query{Semantic: fallback.MostRecent, Limit: first.Limit}
	case fallback.RetryWithLimit:
		next = first.WithLimit(c.cfg.PageSize)
	case fallback.RestartListUnpaginated:
		next = first
		next.Limit, next.Continue = 0, ""
	}
	var wait time.Duration
	switch d.Action {
	case fallback.WaitRetryAfter, fallback.Backoff, fallback.RetryNewerRV, fallback.CheckRVExists:
		ra, _ := fallback.RetryAfter(a.Err)
		wait = min(ra, c.p.MaxRetryAfter)
		if d.Action != fallback.WaitRetryAfter || ra <= 0 {
			wait = max(min(c.bo.NextBackOff(), c.p.Backoff.Max), wait)
		}
		if d.Action != fallback.Backoff && ra > 0 {
			ev.Detail = strings.TrimPrefix(ev.Detail+"; "+fmt.Sprintf("Retry-After %s honoured (cap %s)", ra, c.p.MaxRetryAfter), "; ")
		}
	}
	newAttempt := d.Action != fallback.WaitRetryAfter && d.Action != fallback.Backoff && d.Action != fallback.CheckRVExists
	leaves := d.Action == fallback.FallbackMostRecent || d.Action == fallback.RestartListNewerRV || d.Action == fallback.RestartListUnpaginated
	if first.Semantic == fallback.Exact && leaves || d.Action == fallback.RetryNewerRV && first.Semantic != fallback.NotOlderThan ||
		d.Action == fallback.RetryWithLimit && first.Semantic != fallback.Exact {
		// The table never pairs these (TestTableExhaustive): Exact never leaves its snapshot.
		st.Action, st.Reason, st.Source, st.Row, st.Done = fallback.Fail, fallback.ReasonUnexpectedObservation, "no follow-up request exists for this action and semantic", -1, true
		ev.Action, ev.Reason = st.Action, st.Reason
		e := ev
		st.Event = &e
		return st
	}

	switch {
	case d.Action == fallback.CheckRVExists:
		// Read the current resourceVersion at once; the wait comes after.
		c.after, c.afterWait, c.afterEvent, c.afterSit = q, wait, ev, st.Situation
		c.afterEvent.Action, c.afterEvent.Reason = fallback.WaitRetryAfter, fallback.ReasonTooLargeWait
		ev.Detail = "reading the server's current resourceVersion: a requested one newer than it was never handed out"
		st.Next = c.request(PurposeCurrentRV, fallback.Query{}, 0, false)
		ev.After = st.Next.Query
		e := ev
		st.Event = &e
		return st
	case next.Semantic == fallback.NotOlderThan && next.ResourceVersion == "":
		if f := c.cfg.LastObserved; f != nil {
			if h := f(); h != "" && !c.tried[h] && (floor == "" || fallback.CompareRV(h, floor) == fallback.Newer) {
				if c.tried == nil {
					c.tried = map[string]bool{}
				}
				c.tried[h] = true
				next.ResourceVersion = h
				ev.Detail = strings.TrimSuffix("newer resourceVersion "+h+" from the caller's last observed resourceVersion; "+ev.Detail, "; ")
				break
			}
		}
		if next.ResourceVersion == "" {
			// The probe is a request of its own; the event waits for its answer.
			c.after, c.afterWait, c.afterEvent, c.floor, c.afterAttempt = next, 0, ev, floor, newAttempt
			if wait > 0 {
				c.afterEvent.Detail = strings.TrimPrefix(c.afterEvent.Detail+"; waited "+wait.Round(time.Millisecond).String(), "; ")
			}
			st.Next = c.request(PurposeNewerRV, fallback.Query{}, wait, false)
			return st
		}
	}
	st.Next = c.request(PurposePage, next, wait, newAttempt)
	ev.After = next
	if d.Reason == fallback.ReasonTooLargeCacheStuck {
		ev.Detail = c.stuckDetailFor()
	}
	if wait > 0 {
		ev.Detail = strings.TrimPrefix(ev.Detail+"; waiting "+wait.Round(time.Millisecond).String(), "; ")
	}
	e := ev
	st.Event = &e
	return st
}

// decideChecked is the table's row for the too-large page a CheckRVExists
// read was sent for, now that the read showed its resourceVersion exists.
func (c *Call) decideChecked() decision {
	s := c.afterSit
	s.RVChecked = true
	return decide(s, c.p)
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

// AcceptsListMeta reports whether Next would accept the answer to the page
// request in flight whose ListMeta has resourceVersion served and continue
// token cont, judged before its items are decoded: a caller that hands
// items over as they are decoded (lister.ItemByItem) asks it before the
// first one. It changes nothing in the call; Next still decides on the
// whole answer. Next accepts a page only when verify classes it OK (the
// table's one Accept row) and verify reads no item, so the verdict is
// exact for an answer that then decodes whole: false only when the
// ListMeta already proves the answer unacceptable (served older than a
// NotOlderThan list asks or than the caller's floor, an Exact list served
// at another resourceVersion, a continuation of another snapshot, a
// continue token already handed out). Any other request is not a page:
// true.
func (c *Call) AcceptsListMeta(served, cont string) bool {
	if c.sent.Purpose != PurposePage {
		return true
	}
	class, _ := c.verify(Answer{ServedRV: served, Continue: cont})
	return class == fallback.OK
}

// verify reads the answer to the request in flight against what was asked
// and the snapshot handed over so far: its class (the request's error, else
// what its ListMeta's resourceVersion and continue token show), and what it
// proves about resourceVersionMatch support. It reads the answer's Err,
// NotAList, ServedRV and Continue, never its items, and changes nothing:
// Next verifies every answer with it, and AcceptsListMeta asks it the same
// question of a ListMeta whose items are not decoded yet.
//
// Only a first page that carried the match (the Match wire form) is
// evidence:
//
//   - Exact(N) without limit served at another RV: ignored (KEP-2523: "verify that the
//     ResourceVersion in the ListMeta ... matches").
//   - NotOlderThan(N) with a limit answered 410: ignored (a server honouring the
//     match serves NotOlderThan, which is never 410; legacy applies Exact).
//   - NotOlderThan(N) with a limit served at an RV newer than N: honoured (a legacy
//     server applies Exact with a limit and serves exactly N).
func (c *Call) verify(a Answer) (fallback.Class, Evidence) {
	sent, q := c.sent, c.sent.Query
	class := fallback.ClassifyRequest(sent.Options, a.Err)
	switch {
	case a.Err != nil:
	case a.NotAList:
		class = fallback.Other
	case a.Continue != "" && (a.Continue == q.Continue || c.seen.has(a.Continue)):
		class = fallback.ContinueRepeated
	case q.Continue != "" && c.snapshot != "" && a.ServedRV != c.snapshot:
		class = fallback.ContinueExpired // never stitch two snapshots
	case q.Continue != "":
	case q.Semantic == fallback.Exact && a.ServedRV != q.ResourceVersion:
		class = fallback.ServedNewerThanExact
	case q.Semantic == fallback.NotOlderThan && fallback.CompareRV(a.ServedRV, q.ResourceVersion) == fallback.Older:
		class = fallback.ServedOlder
	case sent.Purpose == PurposeCurrentRV:
		// The server's current resourceVersion, from a consistent read: the
		// requested one is out of reach when no server could write up to it
		// within the rest of the too-large budget (maxRevisionsPerSecond).
		cur, cerr := strconv.ParseUint(a.ServedRV, 10, 64)
		want, werr := strconv.ParseUint(c.after.ResourceVersion, 10, 64)
		horizon := time.Duration(c.limits[tooLargeBudget]-c.used[tooLargeBudget]+1) * (c.afterWait + watchCacheTooLargeWait)
		if cerr == nil && werr == nil && want > cur && want-cur > uint64(horizon.Seconds()*maxRevisionsPerSecond) {
			class = fallback.ServedOlder
		}
	case c.requested.Semantic != fallback.Any && c.requested.ResourceVersion != "" && q.Semantic != fallback.Exact &&
		fallback.CompareRV(a.ServedRV, c.requested.ResourceVersion) == fallback.Older:
		class = fallback.ServedOlder // a fallback or a probe never goes below the caller's floor
	}
	if sent.Purpose != PurposePage || q.Continue != "" || q.ResourceVersion == "" || c.match == MatchIgnored {
		return class, NoEvidence
	}
	limited := sent.Options.Limit > 0
	switch {
	case q.Semantic == fallback.Exact && !limited && class == fallback.ServedNewerThanExact:
		return class, EvidenceIgnored
	case q.Semantic == fallback.NotOlderThan && limited && class == fallback.Gone:
		return class, EvidenceIgnored
	case q.Semantic == fallback.NotOlderThan && limited && class == fallback.OK &&
		fallback.CompareRV(a.ServedRV, q.ResourceVersion) == fallback.Newer:
		return class, EvidenceHonoured
	}
	return class, NoEvidence
}
