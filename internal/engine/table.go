package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/steadywatch/steadywatch/internal/policy"

	"github.com/steadywatch/steadywatch/internal/reason"
	//lint:ignore ST1001 the table reads in the KEP's vocabulary (OK, Gone, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the table reads in the KEP's vocabulary (Accept, RetryNewerRV, Gone, ...), row by row
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// yes and no are the values a pattern over a bool allows; nil allows both.
var (
	yes = []bool{true}
	no  = []bool{false}
)

// when is a pattern over (Situation, Policy). Nil slices match everything;
// op must be equal (its zero value is OpPage).
type when struct {
	op           Op
	classes      []Class
	semantics    []Semantic
	limit        []bool
	cont         []bool
	attemptsLeft []bool
	rvChecked    []bool
	cacheStuck   []bool
	// mostRecentFallback matches !Policy.DisableMostRecentFallback.
	mostRecentFallback []bool
	continueExpired    []policy.ContinueExpiredPolicy
	tooLarge           []policy.TooLargePolicy
	// The call's own conditions (OpPage) and the limit=1 reads' (OpNewerRV,
	// OpCurrentRV).
	notAList       []bool
	requestsLeft   []bool
	restartAllowed []bool
	listRV         []bool
	// A reflector step's conditions (OpWatch, OpStreamOpen, OpStreamEnd,
	// OpWatchEnd).
	endings    []Ending
	rejected   []bool
	noResponse []bool
	resumable  []bool
	progressed []bool
	short      []bool
	// A reflector's failed list call's (OpRelist).
	retriesSpent []bool
	// A reflector's list plan's (OpListPlan).
	initial, retrying, paginate, pageSize, objectStore, retriesInside []bool
	cacheReads                                                        []CacheReads
	probe                                                             []PlanProbe
}

func (w when) matches(s Situation, p policy.Policy) bool {
	return w.op == s.Op &&
		(w.classes == nil || slices.Contains(w.classes, s.Class)) &&
		(w.semantics == nil || slices.Contains(w.semantics, s.Semantic)) &&
		(w.limit == nil || slices.Contains(w.limit, s.HasLimit)) &&
		(w.cont == nil || slices.Contains(w.cont, s.HasContinue)) &&
		(w.attemptsLeft == nil || slices.Contains(w.attemptsLeft, s.AttemptsLeft)) &&
		(w.rvChecked == nil || slices.Contains(w.rvChecked, s.RVChecked)) &&
		(w.cacheStuck == nil || slices.Contains(w.cacheStuck, s.WatchCacheStuck)) &&
		(w.mostRecentFallback == nil || slices.Contains(w.mostRecentFallback, !p.DisableMostRecentFallback)) &&
		(w.continueExpired == nil || slices.Contains(w.continueExpired, p.ContinueExpired)) &&
		(w.tooLarge == nil || slices.Contains(w.tooLarge, p.TooLargeAfterBudget)) &&
		(w.notAList == nil || slices.Contains(w.notAList, s.NotAList)) &&
		(w.requestsLeft == nil || slices.Contains(w.requestsLeft, s.RequestsLeft)) &&
		(w.restartAllowed == nil || slices.Contains(w.restartAllowed, s.RestartAllowed)) &&
		(w.listRV == nil || slices.Contains(w.listRV, s.ListRV)) &&
		(w.endings == nil || slices.Contains(w.endings, s.Ending)) &&
		(w.rejected == nil || slices.Contains(w.rejected, s.Rejected)) &&
		(w.noResponse == nil || slices.Contains(w.noResponse, s.NoResponse)) &&
		(w.resumable == nil || slices.Contains(w.resumable, s.Resumable)) &&
		(w.progressed == nil || slices.Contains(w.progressed, s.Progressed)) &&
		(w.short == nil || slices.Contains(w.short, s.Short)) &&
		(w.retriesSpent == nil || slices.Contains(w.retriesSpent, s.RetriesSpent)) &&
		(w.initial == nil || slices.Contains(w.initial, s.Initial)) &&
		(w.retrying == nil || slices.Contains(w.retrying, s.Retrying)) &&
		(w.paginate == nil || slices.Contains(w.paginate, s.Paginate)) &&
		(w.pageSize == nil || slices.Contains(w.pageSize, s.PageSize)) &&
		(w.objectStore == nil || slices.Contains(w.objectStore, s.ObjectStore)) &&
		(w.retriesInside == nil || slices.Contains(w.retriesInside, s.RetriesInside)) &&
		(w.cacheReads == nil || slices.Contains(w.cacheReads, s.CacheReads)) &&
		(w.probe == nil || slices.Contains(w.probe, s.Probe))
}

// Wait says whether a reflector waits before the request a row leads to
// (rows of OpRelist and OpWatch; the list executor's waits follow the action).
type Wait int

const (
	// WaitByAction: a list executor's row; the wait follows the action
	// (Retry-After or backoff for retries, none for fallbacks).
	WaitByAction Wait = iota
	// WaitBackoff: the next backoff delay, or the server's Retry-After when
	// longer (capped by lister.Options.MaxRetryAfter).
	WaitBackoff
	// WaitNone: at once.
	WaitNone
	// WaitIfRepeated: at once, unless the previous (re)fill saw no watch
	// event since (then a backoff delay): a server that answers every watch
	// with 410 does not get list+watch pairs as fast as it answers them.
	WaitIfRepeated
	// WaitBackoffOnly: the next backoff delay; a Retry-After is not read.
	WaitBackoffOnly
	// WaitNoProgress: the drop-in's next watch attempt waits the next delay
	// of its no-progress backoff (client-go's reflector defaults: 800ms
	// doubling to 30s, jittered, reset after two minutes without failure).
	WaitNoProgress
	// WaitRegress: the next backoff delay, or the next of a backoff that
	// only Backoff.ResetAfter without a regression resets, when longer: a
	// server that re-delivers older events after every re-sync meets a
	// growing delay although each round makes progress in between.
	WaitRegress
	// WaitAfterCallRetries: as WaitBackoff, and never shorter than
	// Backoff.Max: the list call's own retries already waited up to it
	// between failed requests.
	WaitAfterCallRetries
)

func (w Wait) String() string {
	switch w {
	case WaitNone:
		return "at once"
	case WaitIfRepeated:
		return "at once, backoff if repeated"
	case WaitBackoff:
		return "after backoff"
	case WaitBackoffOnly:
		return "after backoff (no Retry-After)"
	case WaitRegress:
		return "after regression backoff"
	case WaitAfterCallRetries:
		return "after backoff, at least Backoff.Max"
	case WaitNoProgress:
		return "next watch after no-progress backoff"
	}
	return "by action"
}

// Row is one rule: pattern, action, reason code and the public text it implements.
type Row struct {
	when   when
	Action Action
	Reason reason.Code
	// Source quotes the public text the row implements.
	Source string
	// Wait is read by the reflector only (its rows).
	Wait Wait
	// Then is the state a reflector step's row leads to (ThenByAction: the
	// action says, for the list executor's, OpRelist's and OpWatch's rows).
	Then Then
}

var (
	allButExact = []Semantic{MostRecent, Any, NotOlderThan}
	noRV        = []Semantic{MostRecent, Any}
	onlyNOT     = []Semantic{NotOlderThan}
	onlyExact   = []Semantic{Exact}
	cls         = func(c ...Class) []Class { return c }
	restarting  = []policy.ContinueExpiredPolicy{policy.RestartNewerRV, policy.RestartUnpaginated}
	withRV      = []Semantic{NotOlderThan, Exact}

	srcRule1    = SourceKEP2523 + ", Backward Compatibility; " + SourceResourceVersions + `: "When using resourceVersionMatch=NotOlderThan and limit is set, clients must handle HTTP 410 "Gone" responses. For example, the client might retry with a newer resourceVersion or fall back to resourceVersion=""."`
	srcRule2    = SourceKEP2523 + ", Backward Compatibility; " + SourceResourceVersions + `: "When using resourceVersionMatch=Exact and limit is unset, clients must verify that the collection's .metadata.resourceVersion matches the requested resourceVersion ... the client might fall back to a request with limit set."`
	srcExact410 = SourceResourceVersions + `, Exact: "If the provided resourceVersion is unavailable, the server responds with HTTP 410 "Gone"."`
	srcContinue = SourceChunks + `: "a continue token will expire ... and return a 410 Gone ... the client will need to start from the beginning or omit the limit parameter."`
	srcTooLarge = SourceResourceVersions + `, Unavailable resource versions: "timeout with a 504 (Gateway Timeout) ... respond with a Retry-After response header"`
	srcNOT      = SourceResourceVersions + `, Not older than: "guarantees that the collection's .metadata.resourceVersion is not older than the requested resourceVersion"`
	srcWatch410 = SourceResourceVersions + `, and "Efficient detection of changes": "the API server may return 410 Gone ... clearing their local cache, performing a new get or list operation, and starting the watch from the resourceVersion that was returned."`
	srcStuck    = srcTooLarge + "; KEP-1904, efficient watch resumption (https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/1904-efficient-watch-resumption): " +
		`without etcd progress notifications "watch cache may stuck being synced to resource version not being version of any object of a given type" (kubernetes/kubernetes#91073); ` +
		SourceKEP2523 + `: fall back to resourceVersion="" (served resourceVersion still verified)`
	srcRelist   = "the lister already applied its own rules to this list; the reflector lists again after a backoff, as client-go's Reflector.ListAndWatch does (kubernetes/kubernetes#86430)"
	srcRepeated = SourceChunks + ": each continue token names the next chunk; a token handed out twice is a loop (apache/iceberg-go#1484, boto/botocore#3778)"
)

// table is every decision of a list call and of a reflector step, one row
// per rule. Rows are disjoint: for every (Situation, Policy) exactly one row
// matches (the exhaustive test enumerates them all), so the order does not
// matter. It is read through Rows (a copy): nothing outside this file can
// change it. It is the rules below (rules), with the call's own limits
// applied to every follow-up row (withCallLimits), then the limit=1 reads'
// rows (probeRows), the reflector's own outcomes (stepRows), the drop-in
// ListerWatcher's choices about what client-go asks of it (dropInRows), and
// a reflector's list's end and stop (listEndRows), and its choice of the
// list it sends (listPlanRows).
var table = slices.Concat(withCallLimits(rules), probeRows, stepRows, dropInRows, listEndRows, listPlanRows)

// rules are the rows of KEP-2523 and the API Concepts page, before the
// call's own limits.
var rules = []Row{
	// Success and errors that are never retried.
	{when{classes: cls(OK)}, Accept, reason.OK, SourceResourceVersions + ", Semantics for get and list", WaitByAction, ThenByAction},
	{when{classes: cls(Canceled)}, Fail, reason.ContextDone, "the caller's context ended; never retried", WaitByAction, ThenByAction},
	{when{classes: cls(Invalid)}, Fail, reason.Invalid, SourceResourceVersions + ", list table: Invalid, HTTP 400 Bad Request", WaitByAction, ThenByAction},
	{when{classes: cls(Forbidden, NotFound)}, Fail, reason.NotRetriable, "not a resourceVersion condition; never retried", WaitByAction, ThenByAction},
	{when{classes: cls(Other), notAList: no}, Fail, reason.NotRetriable, "not a resourceVersion condition; never retried", WaitByAction, ThenByAction},
	{when{classes: cls(Other), notAList: yes}, Fail, reason.NotAList, SourceResourceVersions + `: a list's answer carries ListMeta (metadata.resourceVersion, continue); a 200 without it is not a list`, WaitByAction, ThenByAction},

	// 429 / 5xx / transport: bounded jittered backoff.
	{when{classes: cls(Throttled), attemptsLeft: yes}, Backoff, reason.ThrottledBackoff, "429 Too Many Requests (Retry-After honoured, capped by lister.Options.MaxRetryAfter)", WaitByAction, ThenByAction},
	{when{classes: cls(ServerError), attemptsLeft: yes}, Backoff, reason.ServerErrorBackoff, "5xx (Retry-After honoured, capped by lister.Options.MaxRetryAfter)", WaitByAction, ThenByAction},
	{when{classes: cls(Transport), attemptsLeft: yes}, Backoff, reason.TransportBackoff, "connection refused/reset, EOF, timeout", WaitByAction, ThenByAction},
	{when{classes: cls(NoAnswer), attemptsLeft: yes}, Backoff, reason.NoAnswerBackoff, "no answer within lister.Options.ResponseTimeout (a real apiserver answers within its --request-timeout, 60s by default, or with a 504)", WaitByAction, ThenByAction},
	{when{classes: cls(Throttled, ServerError, Transport, NoAnswer), attemptsLeft: no}, Fail, reason.RetriesExhausted, "bounded retries (5, within 30s)", WaitByAction, ThenByAction},

	// Rule 1: NotOlderThan answered 410 (the server ignored the match and applied legacy Exact).
	{when{classes: cls(Gone), cont: no, semantics: onlyNOT, attemptsLeft: yes}, RetryNewerRV, reason.Rule1RetryNewerRV, srcRule1, WaitByAction, ThenByAction},
	{when{classes: cls(Gone), cont: no, semantics: onlyNOT, attemptsLeft: no, mostRecentFallback: yes}, FallbackMostRecent, reason.Rule1FallbackMostRecent, srcRule1, WaitByAction, ThenByAction},
	{when{classes: cls(Gone), cont: no, semantics: onlyNOT, attemptsLeft: no, mostRecentFallback: no}, Fail, reason.Rule1Exhausted, srcRule1, WaitByAction, ThenByAction},
	{when{classes: cls(Gone), cont: no, semantics: onlyExact}, FailExactUnavailable, reason.ExactGone, srcExact410, WaitByAction, ThenByAction},
	{when{classes: cls(Gone), cont: no, semantics: noRV}, Fail, reason.GoneUnexpected, SourceResourceVersions + ": MostRecent and Any are not answered with 410", WaitByAction, ThenByAction},

	// Continue-token expiry: never stitch pages from two snapshots.
	{when{classes: cls(ContinueExpired), semantics: onlyExact}, FailExactUnavailable, reason.ContinueExpiredExact, srcContinue, WaitByAction, ThenByAction},
	{when{classes: cls(ContinueExpired), semantics: allButExact, attemptsLeft: yes, continueExpired: []policy.ContinueExpiredPolicy{policy.RestartNewerRV}}, RestartListNewerRV, reason.ContinueExpiredRestart, srcContinue, WaitByAction, ThenByAction},
	{when{classes: cls(ContinueExpired), semantics: allButExact, attemptsLeft: yes, continueExpired: []policy.ContinueExpiredPolicy{policy.RestartUnpaginated}}, RestartListUnpaginated, reason.ContinueExpiredUnpaginated, srcContinue, WaitByAction, ThenByAction},
	{when{classes: cls(ContinueExpired), semantics: allButExact, attemptsLeft: no, continueExpired: restarting}, Fail, reason.ContinueExpiredExhausted, srcContinue, WaitByAction, ThenByAction},
	{when{classes: cls(ContinueExpired), semantics: allButExact, continueExpired: []policy.ContinueExpiredPolicy{policy.FailOnContinueExpired}}, Fail, reason.ContinueExpiredFail, srcContinue, WaitByAction, ThenByAction},

	// A continue token the server already handed out: broken pagination, never followed.
	{when{classes: cls(ContinueRepeated)}, Fail, reason.ContinueRepeated, srcRepeated, WaitByAction, ThenByAction},

	// Rule 2: Exact answered at another resourceVersion.
	{when{classes: cls(ServedNewerThanExact), semantics: onlyExact, limit: no}, RetryWithLimit, reason.Rule2RetryWithLimit, srcRule2, WaitByAction, ThenByAction},
	{when{classes: cls(ServedNewerThanExact), semantics: onlyExact, limit: yes}, FailExactUnavailable, reason.Rule2MismatchWithLimit, srcRule2, WaitByAction, ThenByAction},
	{when{classes: cls(ServedNewerThanExact), semantics: allButExact}, Fail, reason.UnexpectedObservation, "the executor flags this only for Exact", WaitByAction, ThenByAction},

	// Served older than the NotOlderThan floor: never accepted.
	{when{classes: cls(ServedOlder), semantics: onlyExact}, Fail, reason.UnexpectedObservation, "the executor reports Exact mismatches as ServedNewerThanExact", WaitByAction, ThenByAction},
	{when{classes: cls(ServedOlder), semantics: []Semantic{Any, NotOlderThan}, attemptsLeft: yes}, Backoff, reason.ServedOlderRetry, srcNOT, WaitByAction, ThenByAction},
	{when{classes: cls(ServedOlder), semantics: []Semantic{Any, NotOlderThan}, attemptsLeft: no}, Fail, reason.ServedOlderExhausted, srcNOT, WaitByAction, ThenByAction},
	// A consistent (MostRecent) read is the newest state: older than the
	// floor proves the requested resourceVersion newer than anything the
	// server has ever handed out. No retry can succeed; say so at once.
	{when{classes: cls(ServedOlder), semantics: []Semantic{MostRecent}}, Fail, reason.RVNewerThanServer, srcNOT + "; " + SourceResourceVersions + `, Most recent: "Return data at the most recent resource version"`, WaitByAction, ThenByAction},

	// 504 "Too large resource version".
	// The first one on a request with a resourceVersion: does that version
	// exist at all? A consistent read answers it in one request.
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: withRV, rvChecked: no}, CheckRVExists, reason.TooLargeCheckRV, srcTooLarge + "; " + srcNOT, WaitByAction, ThenByAction},
	// It exists: the server's watch cache is behind it and catches up, unless
	// it advances only on writes of this resource (no watch progress
	// notifications): then a NotOlderThan list reads the newest state at once.
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: onlyExact, rvChecked: yes}, WaitRetryAfter, reason.TooLargeWait, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: onlyNOT, rvChecked: yes, cacheStuck: no}, WaitRetryAfter, reason.TooLargeWait, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: onlyNOT, rvChecked: yes, cacheStuck: yes, tooLarge: []policy.TooLargePolicy{policy.TooLargeFallbackMostRecent}, mostRecentFallback: yes}, FallbackMostRecent, reason.TooLargeCacheStuck, srcStuck, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: onlyNOT, rvChecked: yes, cacheStuck: yes, tooLarge: []policy.TooLargePolicy{policy.TooLargeFallbackMostRecent}, mostRecentFallback: no}, WaitRetryAfter, reason.TooLargeWait, srcTooLarge + "; the MostRecent fallback is disabled (Policy.DisableMostRecentFallback)", WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: onlyNOT, rvChecked: yes, cacheStuck: yes, tooLarge: []policy.TooLargePolicy{policy.TooLargeFail}}, WaitRetryAfter, reason.TooLargeWait, srcTooLarge + "; Policy.TooLargeAfterBudget is TooLargeFail", WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: no, semantics: noRV}, WaitRetryAfter, reason.TooLargeWait, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: yes, cont: yes}, WaitRetryAfter, reason.TooLargeWait, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: yes}, Fail, reason.TooLargeExhausted, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: noRV}, Fail, reason.TooLargeExhausted, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyExact}, FailExactUnavailable, reason.TooLargeExactUnavailable, srcTooLarge + "; " + srcExact410, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyNOT, tooLarge: []policy.TooLargePolicy{policy.TooLargeFallbackMostRecent}, mostRecentFallback: yes}, FallbackMostRecent, reason.TooLargeFallbackMostRecent, srcTooLarge + `; ` + SourceKEP2523 + `: fall back to resourceVersion="" (served resourceVersion still verified)`, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyNOT, tooLarge: []policy.TooLargePolicy{policy.TooLargeFallbackMostRecent}, mostRecentFallback: no}, Fail, reason.TooLargeExhausted, srcTooLarge, WaitByAction, ThenByAction},
	{when{classes: cls(TooLargeRV), attemptsLeft: no, cont: no, semantics: onlyNOT, tooLarge: []policy.TooLargePolicy{policy.TooLargeFail}}, Fail, reason.TooLargeExhausted, srcTooLarge, WaitByAction, ThenByAction},

	// The reflector's list call failed (OpRelist), after the lister's own
	// rules above: what refills the store next.
	{when{op: OpRelist, classes: cls(ServedOlder), attemptsLeft: yes}, Relist, reason.StaleList, srcNOT + "; a lagging member catches up, or the request lands on a fresher one", WaitBackoff, ThenByAction},
	{when{op: OpRelist, classes: cls(ServedOlder), attemptsLeft: no}, FallbackMostRecent, reason.StaleList, SourceResourceVersions + `, Most recent: a consistent read is never older than anything the server served`, WaitBackoff, ThenByAction},
	{when{op: OpRelist, classes: cls(Gone), semantics: withRV}, FallbackMostRecent, reason.ListGone, srcWatch410, WaitNone, ThenByAction},
	{when{op: OpRelist, classes: cls(Gone), semantics: noRV}, Backoff, reason.ListError, SourceResourceVersions + ": MostRecent and Any are not answered with 410", WaitBackoff, ThenByAction},
	{when{op: OpRelist, classes: cls(TooLargeRV)}, FallbackMostRecent, reason.TooLargeRV, srcTooLarge + "; a consistent read is never older than the store", WaitBackoff, ThenByAction},
	{when{op: OpRelist, classes: cls(OK, Canceled, Invalid, Forbidden, NotFound, Other, ContinueExpired, ContinueRepeated, ServedNewerThanExact)}, Backoff, reason.ListError, srcRelist, WaitBackoff, ThenByAction},
	{when{op: OpRelist, classes: cls(Throttled, ServerError, Transport, NoAnswer), retriesSpent: no}, Backoff, reason.ListError, srcRelist, WaitBackoff, ThenByAction},
	{when{op: OpRelist, classes: cls(Throttled, ServerError, Transport, NoAnswer), retriesSpent: yes}, Backoff, reason.ListError, srcRelist + "; " + srcCallRetriesSpent, WaitAfterCallRetries, ThenByAction},

	// The reflector's watch failed (OpWatch).
	{when{op: OpWatch, classes: cls(Gone)}, Relist, reason.WatchGone, srcWatch410 + "; NotOlderThan the held resourceVersion is served from the watch cache and never goes back in time", WaitIfRepeated, ThenByAction},
	{when{op: OpWatch, classes: cls(TooLargeRV), attemptsLeft: yes, resumable: yes}, WaitRetryAfter, reason.TooLargeRV, srcTooLarge + "; this member's watch cache is behind the held resourceVersion (HA)", WaitBackoff, ThenByAction},
	{when{op: OpWatch, classes: cls(TooLargeRV), attemptsLeft: no}, FallbackMostRecent, reason.TooLargeRV, srcTooLarge, WaitBackoff, ThenByAction},
	{when{op: OpWatch, classes: cls(Throttled, ServerError, Transport, NoAnswer), resumable: yes}, Backoff, reason.Retry, "the server is busy or unreachable: the held resourceVersion is still good; watch again from it after a backoff", WaitBackoff, ThenByAction},
	// A watch from "" or "0" resumes nothing: list MostRecent instead of watching again.
	{when{op: OpWatch, classes: cls(TooLargeRV), attemptsLeft: yes, resumable: no}, FallbackMostRecent, reason.NoResumeVersion, srcNoResume, WaitBackoff, ThenSyncMostRecent},
	{when{op: OpWatch, classes: cls(Throttled, ServerError, Transport, NoAnswer), resumable: no}, FallbackMostRecent, reason.NoResumeVersion, srcNoResume, WaitBackoff, ThenSyncMostRecent},
	{when{op: OpWatch, classes: cls(OK, Canceled, Invalid, Forbidden, NotFound, Other, ContinueExpired, ContinueRepeated, ServedNewerThanExact, ServedOlder)}, Relist, reason.WatchError, srcWatch410 + "; any other failure: relist not older than the held resourceVersion", WaitBackoff, ThenByAction},
}

const (
	srcMaxRequests = "Options.MaxRequests bounds the requests that deliver no page: a server that answers every request with a retryable failure costs a bounded number of requests"
	srcRestart     = SourceChunks + ": a restart starts from the first page; pages of the old snapshot already handed over are void only if the caller allows it (OnRestart), and a caller's own continue token names no first page"
	srcProbe       = SourceKEP2523 + `, Backward Compatibility: "the client might retry with a newer resourceVersion"; a limit=1 MostRecent list reads the newest one (its ListMeta.resourceVersion)`
)

// withCallLimits applies the call's own limits to the list rules: every row
// of OpPage that sends a follow-up request becomes two, one for a call with
// requests left (Config.MaxRequests) and one failing with
// reason.MaxRequests; a restart row becomes two again, one for a call that
// may restart and one failing with reason.RestartNotAllowed.
func withCallLimits(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.when.op != OpPage || r.Action == Accept || r.Action.IsFailure() {
			out = append(out, r)
			continue
		}
		spent := r
		spent.when.requestsLeft, spent.Action, spent.Reason, spent.Source = no, Fail, reason.MaxRequests, srcMaxRequests
		r.when.requestsLeft = yes
		if r.Action == RestartListNewerRV || r.Action == RestartListUnpaginated {
			refused := r
			refused.when.restartAllowed, refused.Action, refused.Reason, refused.Source = no, Fail, reason.RestartNotAllowed, srcRestart
			r.when.restartAllowed = yes
			out = append(out, r, refused, spent)
			continue
		}
		out = append(out, r, spent)
	}
	return out
}

// probeRows answer a limit=1 MostRecent read (OpNewerRV, OpCurrentRV): the
// read the call sends for a newer resourceVersion (rule 1, list restarts) or
// to learn whether a "too large" one exists (CheckRVExists).
var probeRows = func() []Row {
	var out []Row
	for _, op := range []Op{OpNewerRV, OpCurrentRV} {
		out = append(out,
			Row{when{op: op, classes: cls(OK), listRV: yes}, Accept, reason.OK, srcProbe, WaitByAction, ThenByAction},
			Row{when{op: op, classes: cls(OK), listRV: no}, Fail, reason.NewerRVProbeFailed, srcProbe + "; an answer without ListMeta.resourceVersion names none", WaitByAction, ThenByAction},
			Row{when{op: op, classes: cls(Throttled, ServerError, Transport, NoAnswer, TooLargeRV), attemptsLeft: yes}, Backoff, reason.NewerRVProbeRetry, srcProbe + "; retried after a backoff", WaitByAction, ThenByAction},
			Row{when{op: op, classes: cls(ServedOlder)}, Fail, reason.RVNewerThanServer, srcNOT + "; " + SourceResourceVersions + `, Most recent: a consistent read older than the requested resourceVersion proves it was never handed out`, WaitByAction, ThenByAction},
			Row{when{op: op, classes: cls(Throttled, ServerError, Transport, NoAnswer, TooLargeRV), attemptsLeft: no}, Fail, reason.NewerRVProbeFailed, srcProbe + "; bounded retries (5, within 30s)", WaitByAction, ThenByAction},
			Row{when{op: op, classes: cls(Canceled, Invalid, Forbidden, NotFound, Other, Gone, ContinueExpired, ContinueRepeated, ServedNewerThanExact)}, Fail, reason.NewerRVProbeFailed, srcProbe + "; any other failure ends the call", WaitByAction, ThenByAction},
		)
	}
	return out
}()

// Rows returns a copy of the table, for docs and tests.
func Rows() []Row { return slices.Clone(table) }

// decision is the row that matched.
type decision struct {
	Row
	index int // -1 if none matched (the exhaustive test proves it impossible)
}

// decide returns the one row matching s under p (only p's enum and bool
// fields are read). A 410 on a list request with a continue token is
// ContinueExpired before lookup.
func decide(s Situation, p policy.Policy) decision {
	if s.Op == OpPage && s.Class == Gone && s.HasContinue {
		s.Class = ContinueExpired
	}
	for i, r := range table {
		if r.when.matches(s, p) {
			return decision{Row: r, index: i}
		}
	}
	return decision{Row: Row{Action: Fail, Reason: reason.NotRetriable, Source: "no row matched"}, index: -1}
}

// Decision is a row's answer for the reflector (OpRelist, OpWatch,
// OpStreamOpen, OpStreamEnd, OpWatchEnd).
type Decision struct {
	Action Action
	Reason reason.Code
	Wait   Wait
	Then   Then
	Row    int
}

// Decide returns the row for one of the reflector's situations; the list
// executor's situations go through Call.
func Decide(s Situation, p policy.Policy) Decision {
	d := decide(s, p)
	return Decision{Action: d.Action, Reason: d.Reason, Wait: d.Wait, Then: d.Then, Row: d.index}
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
	cond := func(name string, c []bool) {
		if len(c) == 1 && c[0] {
			parts = append(parts, name+"=yes")
		} else if len(c) == 1 {
			parts = append(parts, name+"=no")
		}
	}
	if w.op != OpPage {
		parts = append(parts, "op="+w.op.String())
	}
	switch all := Classes(); {
	case len(w.classes) == len(all):
	case 2*len(w.classes) > len(all): // the few it does not match read better
		var not []Class
		for _, c := range all {
			if !slices.Contains(w.classes, c) {
				not = append(not, c)
			}
		}
		parts = append(parts, "class≠"+strings.Join(names(not), "|"))
	default:
		list("class", names(w.classes))
	}
	list("semantic", names(w.semantics))
	cond("limit", w.limit)
	cond("continue", w.cont)
	cond("attemptsLeft", w.attemptsLeft)
	cond("rvChecked", w.rvChecked)
	cond("watchCacheStuck", w.cacheStuck)
	cond("mostRecentFallbackAllowed", w.mostRecentFallback)
	cond("notAList", w.notAList)
	cond("requestsLeft", w.requestsLeft)
	cond("restartAllowed", w.restartAllowed)
	cond("listRV", w.listRV)
	list("ending", names(w.endings))
	cond("rejected", w.rejected)
	cond("noResponse", w.noResponse)
	cond("resumable", w.resumable)
	cond("progressed", w.progressed)
	cond("short", w.short)
	cond("retriesSpent", w.retriesSpent)
	cond("initial", w.initial)
	cond("retrying", w.retrying)
	cond("PaginateLists", w.paginate)
	cond("pageSize", w.pageSize)
	cond("objectStore", w.objectStore)
	cond("retriesInside", w.retriesInside)
	list("consistentListFromCache", names(w.cacheReads))
	list("probe", names(w.probe))
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
