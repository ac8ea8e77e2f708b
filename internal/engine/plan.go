package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"
	"github.com/steadywatch/steadywatch/internal/vocab"

	"github.com/cenkalti/backoff/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
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
	Form    vocab.WireForm
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
	// Policy has its defaults applied (policy.Policy.WithDefaults, as the
	// lister's resolved Options have): Start applies none.
	Policy policy.Policy
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
	// table row the step carries out (when a limit=1 read's answer is
	// accepted, the page's row it was sent for).
	Action vocab.Action
	Reason reason.Code
	Source string
	Row    int
	// Situation is what the row matched; Class is the verified class.
	Situation Situation
	Class     vocab.Class
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

// stuckDetail explains reason.TooLargeCacheStuck in its event.
const stuckDetail = "this server's watch cache moves only when the listed resource is written " +
	"(no watch progress notifications before KEP-1904): listing the most recent state instead of waiting"

// stalledDetail explains reason.TooLargeCacheStuck when the answers showed it.
const stalledDetail = "the watch cache reported current resourceVersion %s in two answers: it is not catching up " +
	"(no watch progress notifications, KEP-1904); listing the most recent state instead of waiting"

// currentRVPattern finds the watch cache's resourceVersion in the apiserver's
// message "Too large resource version: N, current: M" (k8s.io/apiserver
// storage.NewTooLargeResourceVersionError).
var currentRVPattern = regexp.MustCompile(`current: ?([0-9]+)`)

// stuckDetailFor is the event detail of reason.TooLargeCacheStuck.
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
var budgetOf = map[vocab.Class]budget{
	vocab.Gone: newerRVBudget, vocab.ContinueExpired: restartBudget, vocab.TooLargeRV: tooLargeBudget,
	vocab.Throttled: backoffBudget, vocab.ServerError: backoffBudget, vocab.Transport: backoffBudget, vocab.NoAnswer: backoffBudget, vocab.ServedOlder: backoffBudget,
}

// Call is one list call's state: its budgets, its backoff, the snapshot
// being handed over and the request in flight. It is not safe for
// concurrent use: one per call.
type Call struct {
	cfg       Config
	p         policy.Policy
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
	// probe is the limit=1 read in flight, if any, and the page it serves.
	probe probe
	// tooLargeAt and tooLargeCur are the requested and the reported current
	// resourceVersion of the last "too large" page; stalled: two such answers
	// for one request reported the same current one (the cache did not move).
	tooLargeAt, tooLargeCur string
	stalled                 bool
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

// Start validates q and returns the call and its first request. The call
// is a value so that an executor can keep it in its own frame (no
// allocation per list call); use it through its address, never copied
// after Next.
func Start(q fallback.Query, cfg Config) (Call, Request, error) {
	if err := q.Validate(); err != nil {
		return Call{}, Request{}, err
	}
	p := cfg.Policy
	if cfg.PageSize <= 0 {
		cfg.PageSize = vocab.DefaultLegacyExactLimit
	}
	c := Call{cfg: cfg, p: p, requested: q}
	c.limits = [numBudgets]int{newerRVBudget: max(p.MaxNewerRVRetries, 0), restartBudget: max(p.MaxListRestarts, 0),
		tooLargeBudget: max(p.MaxTooLargeRetries, 0), backoffBudget: max(p.Backoff.MaxRetries, 0)}
	if f := cfg.LastObserved; f != nil && q.ResourceVersion != "" {
		// A version the caller has seen is known to exist: no check needed.
		h := f()
		c.rvChecked = h != "" && (vocab.CompareRV(h, q.ResourceVersion) == vocab.Newer || vocab.CompareRV(h, q.ResourceVersion) == vocab.Same)
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
		q = fallback.Query{Semantic: fallback.MostRecent}.WithLimit(1)
		c.sent = Request{Purpose: p, Query: q, Form: vocab.Match, Options: ApplyTo(q, c.cfg.Base, vocab.Match), Wait: wait}
		return c.sent
	}
	if newAttempt {
		c.first, c.snapshot, c.handed = q, "", 0
		c.seen.few, c.seen.n = [16]string{}, 0
		clear(c.seen.more)
	}
	if (q.Continue == "" || c.requests == 0) && c.cfg.Beliefs != nil {
		c.match = c.cfg.Beliefs.Match()
	}
	if (q.Continue == "" || c.requests == 0) && c.learned != MatchUnknown {
		c.match = c.learned // this call's own evidence is the newest
	}
	form := vocab.Match
	if c.match == MatchIgnored {
		form = vocab.Legacy
	}
	opts := ApplyTo(q, c.cfg.Base, form)
	if form == vocab.Legacy && q.Semantic == fallback.Exact && q.Continue == "" && q.Limit == 0 {
		opts.Limit = c.cfg.PageSize
	}
	c.sent = Request{Purpose: PurposePage, Query: q, Form: form, Options: opts, Wait: wait}
	return c.sent
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
	return class == vocab.OK
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
func (c *Call) verify(a Answer) (vocab.Class, Evidence) {
	sent, q := c.sent, c.sent.Query
	class := Classify(a.Err)
	switch {
	case class == vocab.Gone && sent.Options.Continue != "":
		class = vocab.ContinueExpired // a 410 on a request that carried a continue token
	case a.Err != nil:
	case a.NotAList:
		class = vocab.Other
	case a.Continue != "" && (a.Continue == q.Continue || c.seen.has(a.Continue)):
		class = vocab.ContinueRepeated
	case q.Continue != "" && c.snapshot != "" && a.ServedRV != c.snapshot:
		class = vocab.ContinueExpired // never stitch two snapshots
	case q.Continue != "":
	case q.Semantic == fallback.Exact && a.ServedRV != q.ResourceVersion:
		class = vocab.ServedNewerThanExact
	case q.Semantic == fallback.NotOlderThan && vocab.CompareRV(a.ServedRV, q.ResourceVersion) == vocab.Older:
		class = vocab.ServedOlder
	case sent.Purpose == PurposeCurrentRV:
		// The server's current resourceVersion, from a consistent read: the
		// requested one is out of reach when no server could write up to it
		// within the rest of the too-large budget (maxRevisionsPerSecond).
		cur, cerr := strconv.ParseUint(a.ServedRV, 10, 64)
		want, werr := strconv.ParseUint(c.probe.page.ResourceVersion, 10, 64)
		horizon := time.Duration(c.limits[tooLargeBudget]-c.used[tooLargeBudget]+1) * (c.probe.wait + watchCacheTooLargeWait)
		if cerr == nil && werr == nil && want > cur && want-cur > uint64(horizon.Seconds()*maxRevisionsPerSecond) {
			class = vocab.ServedOlder
		}
	case c.requested.Semantic != fallback.Any && c.requested.ResourceVersion != "" && q.Semantic != fallback.Exact &&
		vocab.CompareRV(a.ServedRV, c.requested.ResourceVersion) == vocab.Older:
		class = vocab.ServedOlder // a fallback or a probe never goes below the caller's floor
	}
	if sent.Purpose != PurposePage || q.Continue != "" || q.ResourceVersion == "" || c.match == MatchIgnored {
		return class, NoEvidence
	}
	limited := sent.Options.Limit > 0
	switch {
	case q.Semantic == fallback.Exact && !limited && class == vocab.ServedNewerThanExact:
		return class, EvidenceIgnored
	case q.Semantic == fallback.NotOlderThan && limited && class == vocab.Gone:
		return class, EvidenceIgnored
	case q.Semantic == fallback.NotOlderThan && limited && class == vocab.OK &&
		vocab.CompareRV(a.ServedRV, q.ResourceVersion) == vocab.Newer:
		return class, EvidenceHonoured
	}
	return class, NoEvidence
}
