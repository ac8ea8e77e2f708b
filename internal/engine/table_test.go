package engine

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/internal/policy"
	"github.com/steadywatch/steadywatch/internal/reason"

	. "github.com/steadywatch/steadywatch/fallback"
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// expected is an independent reading of KEP-2523 and the API Concepts tables, written as plain control
// flow (not as patterns), that the table must agree with cell by cell.
func expected(s Situation, p policy.Policy) (Action, reason.Code) {
	switch s.Op {
	case OpNewerRV, OpCurrentRV: // a limit=1 MostRecent read
		switch s.Class {
		case OK:
			if s.ListRV {
				return Accept, ""
			}
			return Fail, reason.NewerRVProbeFailed
		case Throttled, ServerError, Transport, NoAnswer, TooLargeRV:
			if s.AttemptsLeft {
				return Backoff, reason.NewerRVProbeRetry
			}
		case ServedOlder:
			return Fail, reason.RVNewerThanServer
		}
		return Fail, reason.NewerRVProbeFailed
	case OpRelist:
		return expectedRule(s, p), ""
	case OpWatch:
		if !s.Resumable && expectedRule(s, p) != Relist && !(s.Class == TooLargeRV && !s.AttemptsLeft) {
			return FallbackMostRecent, reason.NoResumeVersion // a watch from "" or "0" resumes nothing
		}
		return expectedRule(s, p), ""
	case OpStreamOpen, OpStreamEnd, OpWatchEnd, OpDropInAttempt, OpDropInStall, OpDropInList, OpDropInListed, OpDropInStream, OpListEnd, OpStop, OpListPlan:
		a, code, _, _ := expectedStep(s)
		return a, code
	}
	if s.NotAList && s.Class == Other {
		return Fail, reason.NotAList
	}
	a := expectedRule(s, p)
	switch {
	case a == Accept || a.IsFailure():
		return a, ""
	case !s.RequestsLeft: // Options.MaxRequests
		return Fail, reason.MaxRequests
	case (a == RestartListNewerRV || a == RestartListUnpaginated) && !s.RestartAllowed:
		return Fail, reason.RestartNotAllowed
	}
	return a, ""
}

// expectedRule is the reading of the sources alone, before the call's own
// limits.
func expectedRule(s Situation, p policy.Policy) Action {
	c := s.Class
	switch s.Op {
	case OpRelist: // the reflector's list call failed
		switch {
		case c == ServedOlder && s.AttemptsLeft:
			return Relist
		case c == ServedOlder, c == Gone && (s.Semantic == NotOlderThan || s.Semantic == Exact), c == TooLargeRV:
			return FallbackMostRecent
		}
		return Backoff
	case OpWatch: // the reflector's watch failed
		switch c {
		case TooLargeRV:
			if s.AttemptsLeft {
				return WaitRetryAfter
			}
			return FallbackMostRecent
		case Throttled, ServerError, Transport, NoAnswer:
			return Backoff
		}
		return Relist
	}
	if c == Gone && s.HasContinue {
		c = ContinueExpired
	}
	mrf := !p.DisableMostRecentFallback
	switch c {
	case OK:
		return Accept
	case Canceled, Invalid, Forbidden, NotFound, Other, ContinueRepeated:
		return Fail
	case Throttled, ServerError, Transport, NoAnswer:
		if s.AttemptsLeft {
			return Backoff
		}
		return Fail
	case Gone: // no continue token here
		switch s.Semantic {
		case NotOlderThan: // KEP-2523: retry with a newer RV, or fall back to RV=""
			if s.AttemptsLeft {
				return RetryNewerRV
			}
			if mrf {
				return FallbackMostRecent
			}
			return Fail
		case Exact: // API Concepts: Exact unavailable -> 410
			return FailExactUnavailable
		default:
			return Fail
		}
	case ContinueExpired: // API Concepts: start from the beginning or omit the limit
		if s.Semantic == Exact {
			return FailExactUnavailable // the snapshot N itself is gone
		}
		if p.ContinueExpired == policy.FailOnContinueExpired || !s.AttemptsLeft {
			return Fail
		}
		if p.ContinueExpired == policy.RestartUnpaginated {
			return RestartListUnpaginated
		}
		return RestartListNewerRV
	case ServedNewerThanExact: // KEP-2523: verify ListMeta RV; fall back to a request with limit
		if s.Semantic != Exact {
			return Fail
		}
		if s.HasLimit {
			return FailExactUnavailable
		}
		return RetryWithLimit
	case ServedOlder: // API Concepts: NotOlderThan guarantees ListMeta not older
		// A MostRecent read is the newest: older than the floor proves the
		// floor was never handed out.
		if s.Semantic == Exact || s.Semantic == MostRecent || !s.AttemptsLeft {
			return Fail
		}
		return Backoff
	case TooLargeRV: // API Concepts: 504 + Retry-After
		if s.AttemptsLeft && !s.HasContinue && (s.Semantic == NotOlderThan || s.Semantic == Exact) && !s.RVChecked {
			return CheckRVExists // does the version exist at all?
		}
		if s.AttemptsLeft && !s.HasContinue && s.Semantic == NotOlderThan && s.WatchCacheStuck &&
			p.TooLargeAfterBudget == policy.TooLargeFallbackMostRecent && mrf {
			return FallbackMostRecent // KEP-1904: this watch cache catches up only on a write of this resource
		}
		if s.AttemptsLeft {
			return WaitRetryAfter
		}
		if s.HasContinue {
			return Fail
		}
		switch s.Semantic {
		case Exact:
			return FailExactUnavailable
		case NotOlderThan:
			if p.TooLargeAfterBudget == policy.TooLargeFallbackMostRecent && mrf {
				return FallbackMostRecent
			}
		}
		return Fail
	}
	panic(fmt.Sprintf("unhandled class %v", c))
}

// expectedStep is an independent reading of the reflector's own outcomes
// (KEP-3157's streaming list, a watch's end), as the reflector decided them
// in code before they were rows: action, reason, wait and next state.
func expectedStep(s Situation) (Action, reason.Code, Wait, Then) {
	switch s.Op {
	case OpStreamOpen:
		switch {
		case s.Rejected:
			return Relist, reason.StreamRejected, WaitNone, ThenListSame
		case s.Class == Invalid:
			return Relist, reason.StreamFailed, WaitNone, ThenListSame
		case s.Semantic == NotOlderThan && s.NoResponse:
			return FallbackMostRecent, reason.StreamFailed, WaitBackoffOnly, ThenListMostRecent
		case s.Semantic == NotOlderThan && (s.Class == TooLargeRV || s.Class == ServerError):
			return FallbackMostRecent, reason.TooLargeRV, WaitBackoff, ThenSyncMostRecent
		}
		return Relist, reason.StreamFailed, WaitBackoff, ThenListSame
	case OpStreamEnd:
		switch s.Ending {
		case EndedOK:
			return Accept, reason.Streamed, WaitNone, ThenWatch
		case EndedStale:
			return Relist, reason.StaleList, WaitBackoffOnly, ThenListNotOlder
		case EndedStoreFailed:
			return Relist, reason.ListError, WaitBackoffOnly, ThenListSame
		case EndedCut:
			return Relist, reason.StreamFailed, WaitBackoffOnly, ThenListSame
		case EndedError:
			if s.Class == Gone {
				return FallbackMostRecent, reason.ListGone, WaitBackoffOnly, ThenStreamMostRecent
			}
			return Relist, reason.StreamFailed, WaitBackoff, ThenListSame
		case EndedIgnored:
			return Relist, reason.StreamIgnored, WaitNone, ThenListSame
		case EndedBadRV:
			return Relist, reason.BadResourceVersion, WaitBackoffOnly, ThenListSame
		}
	case OpWatchEnd:
		switch {
		case s.Ending == EndedStaleEvent:
			return Relist, reason.StaleEvent, WaitRegress, ThenSyncNotOlder
		case s.Ending == EndedBadRV:
			return Relist, reason.BadResourceVersion, WaitRegress, ThenSyncNotOlder
		case !s.Resumable:
			return FallbackMostRecent, reason.NoResumeVersion, WaitBackoffOnly, ThenSyncMostRecent
		case s.Ending == EndedStalled:
			return Accept, reason.Stalled, WaitNone, ThenWatchAgain
		case s.Progressed:
			return Accept, reason.WatchClosed, WaitNone, ThenWatchAgain
		case !s.Short:
			return Backoff, reason.WatchClosed, WaitBackoffOnly, ThenWatchAgain
		case s.AttemptsLeft:
			return Backoff, reason.ShortWatch, WaitBackoffOnly, ThenWatchAgain
		}
		return Relist, reason.ShortWatch, WaitBackoffOnly, ThenSyncNotOlder
	case OpDropInAttempt:
		if s.Progressed {
			return Accept, reason.OK, WaitNone, ThenWatchAgain
		}
		return Backoff, reason.NoProgressBackoff, WaitNoProgress, ThenWatchAgain
	case OpDropInStall:
		return Accept, reason.WatchStalled, WaitNone, ThenWatchAgain
	case OpDropInList:
		unserved := s.Class == TooLargeRV || s.Class == ServerError || s.Class == NoAnswer
		if unserved && s.Semantic == NotOlderThan {
			return FallbackMostRecent, reason.UnservedRVMostRecent, WaitNone, ThenListMostRecent
		}
		return Accept, reason.OK, WaitNone, ThenListSame
	case OpDropInListed:
		if s.Class == ServedOlder && s.Semantic != Exact {
			return Relist, reason.StaleListReasked, WaitNone, ThenListNotOlder
		}
		return Accept, reason.OK, WaitNone, ThenListSame
	case OpDropInStream:
		if s.Rejected {
			return Relist, reason.StreamRejected, WaitNone, ThenListSame
		}
		return Accept, reason.OK, WaitNone, ThenWatch
	case OpListEnd: // list, then watch from the list's resourceVersion
		if s.Ending == EndedOK {
			return Accept, reason.Listed, WaitNone, ThenWatchAgain
		}
		return Backoff, reason.ListError, WaitBackoffOnly, ThenListSame
	case OpStop:
		return Accept, reason.ContextDone, WaitNone, ThenStop
	case OpListPlan:
		return Accept, reason.OK, WaitNone, expectedPlan(s)
	}
	panic(fmt.Sprintf("no reading for %v", s))
}

// expectedPlan is an independent reading of the list a reflector sends to
// (re)fill its store, as the reflector chose it in code before it was rows.
func expectedPlan(s Situation) Then {
	switch s.Probe {
	case ProbeRV:
		if s.RetriesInside {
			return ThenPlanPages
		}
		return ThenPlanNotOlderProbed
	case ProbeNoRV:
		return ThenPlanPages
	}
	switch {
	case s.Semantic == NotOlderThan && s.Paginate && !s.Initial && s.ObjectStore && s.PageSize:
		return ThenPlanPages
	case s.Semantic == NotOlderThan:
		return ThenPlanWhole
	case s.Semantic != MostRecent || s.HasContinue || s.Retrying || s.Paginate || !s.PageSize:
		return ThenPlanPages
	case s.CacheReads == CacheReadsNotAsked:
		return ThenPlanAskServer
	case s.CacheReads == CacheReadsYes:
		return ThenPlanWhole
	case s.CacheReads == CacheReadsNo, s.RetriesInside:
		return ThenPlanPages
	}
	return ThenPlanProbe
}

// listPlanSituations enumerates a reflector's list plans: every field a
// row of OpListPlan matches varies. The class stays OK: a plan is made
// before any answer, and every row of OpListPlan matches every class
// (TestListPlanRowsReadNoClass), so no other class can change the row.
func listPlanSituations() []Situation {
	var out []Situation
	bools := []bool{false, true}
	for sem := MostRecent; sem <= Exact; sem++ {
		for _, c := range []Class{OK} {
			for _, cont := range bools {
				for _, initial := range bools {
					for _, retrying := range bools {
						for _, paginate := range bools {
							for _, pageSize := range bools {
								for _, objects := range bools {
									for _, inside := range bools {
										for cr := CacheReadsNotAsked; cr <= CacheReadsNo; cr++ {
											for pr := ProbeNotSent; pr <= ProbeNoRV; pr++ {
												out = append(out, Situation{Op: OpListPlan, Semantic: sem, Class: c, HasContinue: cont, Initial: initial,
													Retrying: retrying, Paginate: paginate, PageSize: pageSize, ObjectStore: objects, RetriesInside: inside,
													CacheReads: cr, Probe: pr})
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// expectedRelistWait is an independent reading of the wait before a
// reflector lists again after a failed list call: at once after a 410 at a
// resourceVersion (MostRecent is answered), never sooner than the call's
// own retries' longest wait after they were spent on a transient failure,
// a backoff otherwise.
func expectedRelistWait(s Situation) Wait {
	switch {
	case s.Class == Gone && (s.Semantic == NotOlderThan || s.Semantic == Exact):
		return WaitNone
	case s.RetriesSpent && (s.Class == Throttled || s.Class == ServerError || s.Class == Transport || s.Class == NoAnswer):
		return WaitAfterCallRetries
	}
	return WaitBackoff
}

// stepSituations enumerates the reflector's own outcomes: every field a
// row of the op may match varies, the others stay zero.
func stepSituations() []Situation {
	var out []Situation
	bools := []bool{false, true}
	var ops []Op
	for op := OpStreamOpen; op <= OpDropInStream; op++ {
		ops = append(ops, op)
	}
	for _, op := range append(ops, OpListEnd, OpStop) {
		endings, openOnly, watchOnly, progressedOnly := []Ending{EndedOK}, []bool{false}, []bool{false}, []bool{false}
		switch op {
		case OpDropInAttempt:
			progressedOnly = bools
		case OpStreamOpen:
			openOnly = bools
		case OpDropInStream:
			openOnly = bools // Rejected only; NoResponse is matched by no row of it
		case OpStreamEnd:
			endings = streamEndings
		case OpListEnd:
			endings = listEndEndings
		case OpWatchEnd:
			endings, watchOnly, progressedOnly = watchEndings, bools, bools
		}
		for sem := MostRecent; sem <= Exact; sem++ {
			for _, c := range Classes() {
				for _, left := range bools {
					for _, e := range endings {
						for _, rejected := range openOnly {
							for _, noResponse := range openOnly {
								for _, resumable := range watchOnly {
									for _, progressed := range progressedOnly {
										for _, short := range watchOnly {
											out = append(out, Situation{Op: op, Semantic: sem, Class: c, AttemptsLeft: left, Ending: e,
												Rejected: rejected, NoResponse: noResponse, Resumable: resumable, Progressed: progressed, Short: short})
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// allSituations enumerates every situation: every field a row of the op
// may match varies, the others stay zero (TestTableRowsCiteSources checks
// that no row matches a field its op does not vary).
func allSituations() []Situation {
	var out []Situation
	bools := []bool{false, true}
	for op := OpPage; op <= OpCurrentRV; op++ {
		pageOnly, probeOnly, watchOnly, relistOnly := []bool{false}, []bool{false}, []bool{false}, []bool{false}
		if op == OpRelist {
			relistOnly = bools
		}
		if op == OpWatch {
			watchOnly = bools
		}
		if op == OpPage {
			pageOnly = bools
		}
		if op == OpNewerRV || op == OpCurrentRV {
			probeOnly = bools
		}
		for sem := MostRecent; sem <= Exact; sem++ {
			for _, lim := range bools {
				for _, cont := range bools {
					for m := MatchUnknown; m <= MatchIgnored; m++ {
						for _, c := range Classes() {
							for _, left := range bools {
								for _, checked := range bools {
									for _, stuck := range bools {
										for _, notAList := range pageOnly {
											for _, reqs := range pageOnly {
												for _, restart := range pageOnly {
													for _, listRV := range probeOnly {
														for _, resumable := range watchOnly {
															for _, spent := range relistOnly {
																out = append(out, Situation{Op: op, Semantic: sem, HasLimit: lim, HasContinue: cont, Match: m, Class: c,
																	AttemptsLeft: left, RVChecked: checked, WatchCacheStuck: stuck,
																	NotAList: notAList, RequestsLeft: reqs, RestartAllowed: restart, ListRV: listRV, Resumable: resumable,
																	RetriesSpent: spent})
															}
														}
													}
												}
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return append(append(out, stepSituations()...), listPlanSituations()...)
}

func allPolicies() []policy.Policy {
	var out []policy.Policy
	for _, dis := range []bool{false, true} {
		for _, ce := range []policy.ContinueExpiredPolicy{policy.RestartNewerRV, policy.RestartUnpaginated, policy.FailOnContinueExpired} {
			for _, tl := range []policy.TooLargePolicy{policy.TooLargeFallbackMostRecent, policy.TooLargeFail} {
				out = append(out, policy.Policy{DisableMostRecentFallback: dis, ContinueExpired: ce, TooLargeAfterBudget: tl})
			}
		}
	}
	return out
}

// TestTableExhaustive walks the full cross product of Situation fields and
// policy switches and checks (a) exactly one row matches, (b) its action is
// the independent reading of the sources, (c) the safety properties hold.
func TestTableExhaustive(t *testing.T) {
	rowsUsed := make([]int, len(table))
	n := 0
	for _, p := range allPolicies() {
		for _, s := range allSituations() {
			n++
			ns := s
			if ns.Op == OpPage && ns.Class == Gone && ns.HasContinue {
				ns.Class = ContinueExpired
			}
			var matched []int
			for i, r := range table {
				if r.when.matches(ns, p) {
					matched = append(matched, i)
				}
			}
			if len(matched) != 1 {
				t.Fatalf("%v policy %+v: %d rows match (%v), want exactly 1", s, p, len(matched), matched)
			}
			rowsUsed[matched[0]]++
			d := decide(s, p)
			if d.index != matched[0] {
				t.Fatalf("%v: decide chose row %d, matching row is %d", s, d.index, matched[0])
			}
			if want, reason := expected(s, p); d.Action != want || reason != "" && d.Reason != reason {
				t.Errorf("%v policy %+v: table says %v (%s), the sources say %v (%s)", s, p, d.Action, d.Reason, want, reason)
			}
			if s.Op >= OpStreamOpen {
				if _, _, wait, then := expectedStep(s); d.Wait != wait || d.Then != then {
					t.Errorf("%v: table says %s, %s; the reading says %s, %s", s, d.Wait, d.Then, wait, then)
				}
			} else if s.Op == OpRelist && d.Wait != expectedRelistWait(s) {
				t.Errorf("%v: table says %s; the reading says %s", s, d.Wait, expectedRelistWait(s))
			} else if d.Then != ThenByAction && !(s.Op == OpWatch && !s.Resumable) {
				t.Errorf("%v: row %d names a next state its action does not leave to the reflector", s, d.index)
			}
			checkSafety(t, s, p, d)
		}
	}
	for i, u := range rowsUsed {
		if u == 0 {
			t.Errorf("row %d (%s) never matches: dead rule", i, table[i].Reason)
		}
	}
	perOp := 4 * 2 * 2 * 3 * len(Classes()) * 2 * 2 * 2 * 12
	perStep := 4 * len(Classes()) * 2 * 12
	perPlan := 4 * 2 * 2 * 2 * 2 * 2 * 2 * 2 * 4 * 3 * 12
	if n != perOp*(8+2+2+2+2)+perStep*(4+len(streamEndings)+len(watchEndings)*8+2+1+1+1+4+len(listEndEndings)+1)+perPlan {
		t.Fatalf("enumerated %d situations", n)
	}
	t.Logf("%d situations x policies checked against %d rows", n, len(table))
}

func checkSafety(t *testing.T, s Situation, p policy.Policy, d decision) {
	t.Helper()
	// Only a plain OK is ever accepted: never a mismatched Exact, never data
	// older than requested, never an error.
	if d.Action == Accept && s.Class != OK && s.Op < OpStreamOpen {
		t.Errorf("%v: accepts class %v", s, s.Class)
	}
	// A reflector never gives up: it relists or watches again.
	if (s.Op == OpRelist || s.Op >= OpWatch && s.Op != OpNewerRV && s.Op != OpCurrentRV) && d.Action.IsFailure() {
		t.Errorf("%v: a reflector row fails", s)
	}
	// The follow-up queries exist only for these pairs (Call.nextQuery).
	if s.Op == OpPage && (d.Action == RetryNewerRV && s.Semantic != NotOlderThan || d.Action == RetryWithLimit && s.Semantic != Exact) {
		t.Errorf("%v: %v has no follow-up query for %v", s, d.Action, s.Semantic)
	}
	// Exact never falls back to another semantic or snapshot.
	if s.Op == OpPage && s.Semantic == Exact {
		switch d.Action {
		case RetryNewerRV, FallbackMostRecent, RestartListNewerRV, RestartListUnpaginated:
			t.Errorf("%v: Exact leaves its snapshot via %v", s, d.Action)
		}
	}
	// The follow-up requests (their floors, their continue tokens) are
	// built by Call.Next: TestCallFollowUpsAreSafe and
	// TestCallFollowUpsKeepTheFloor drive them.
}

// TestListPlanRowsReadNoClass checks that every row of OpListPlan matches
// every class: a list plan is made before any answer.
func TestListPlanRowsReadNoClass(t *testing.T) {
	for i, r := range table {
		if r.when.op == OpListPlan && len(r.when.classes) != len(Classes()) {
			t.Errorf("row %d (op list-plan) matches classes %v", i, r.when.classes)
		}
	}
}

func TestTableRowsCiteSources(t *testing.T) {
	seen := map[reason.Code]bool{}
	for i, r := range table {
		if r.Reason == "" || r.Source == "" {
			t.Errorf("row %d has no reason or source", i)
		}
		if r.Action != Accept && r.Action.IsFallback() != (r.Action != Fail && r.Action != FailExactUnavailable && r.Action != Backoff && r.Action != WaitRetryAfter) {
			t.Errorf("row %d: %v is not classified as a fallback consistently", i, r.Action)
		}
		listRow := r.when.op == OpPage || r.when.op == OpNewerRV || r.when.op == OpCurrentRV
		if listRow != (r.Wait == WaitByAction) {
			t.Errorf("row %d: a list row's wait follows its action; a reflector row states its wait", i)
		}
		if r.when.op != OpPage && (r.when.notAList != nil || r.when.requestsLeft != nil || r.when.restartAllowed != nil) ||
			r.when.op != OpNewerRV && r.when.op != OpCurrentRV && r.when.listRV != nil ||
			r.when.op != OpStreamOpen && r.when.op != OpDropInStream && r.when.rejected != nil ||
			r.when.op != OpStreamOpen && r.when.noResponse != nil ||
			r.when.op != OpStreamEnd && r.when.op != OpWatchEnd && r.when.op != OpListEnd && r.when.endings != nil ||
			r.when.op != OpRelist && r.when.retriesSpent != nil ||
			r.when.op != OpWatch && r.when.op != OpWatchEnd && r.when.resumable != nil ||
			r.when.op != OpWatchEnd && r.when.op != OpDropInAttempt && r.when.progressed != nil ||
			r.when.op != OpWatchEnd && r.when.short != nil ||
			r.when.op != OpListPlan && (r.when.initial != nil || r.when.retrying != nil || r.when.paginate != nil || r.when.pageSize != nil ||
				r.when.objectStore != nil || r.when.retriesInside != nil || r.when.cacheReads != nil || r.when.probe != nil) {
			t.Errorf("row %d matches a field allSituations does not vary for op %s", i, r.when.op)
		}
		if len(r.when.classes) == 0 {
			t.Errorf("row %d matches every class", i)
		}
		if strings.Contains(string(r.Reason), " ") {
			t.Errorf("row %d reason %q has a space", i, r.Reason)
		}
		seen[r.Reason] = true
	}
	for _, must := range []reason.Code{reason.Rule1RetryNewerRV, reason.Rule1FallbackMostRecent, reason.Rule2RetryWithLimit,
		reason.ContinueExpiredRestart, reason.ContinueExpiredUnpaginated, reason.TooLargeWait, reason.TooLargeFallbackMostRecent, reason.TooLargeCacheStuck} {
		if !seen[must] {
			t.Errorf("no row with reason %s", must)
		}
	}
}

// TestEvidenceOf checks what a first page's answer proves about
// resourceVersionMatch support (Call.verify): only a request that carried
// the match and no continue token is evidence.
func TestEvidenceOf(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version")
	notOlder := Query{Semantic: NotOlderThan, ResourceVersion: "20", Limit: 500}
	exact := Query{Semantic: Exact, ResourceVersion: "20"}
	cases := []struct {
		q      Query
		match  MatchSupport
		err    error
		served string
		want   Evidence
	}{
		{exact, MatchUnknown, nil, "30", EvidenceIgnored},
		{exact, MatchIgnored, nil, "30", NoEvidence}, // match not sent
		{exact.WithLimit(500), MatchUnknown, nil, "30", NoEvidence},
		{notOlder, MatchUnknown, gone, "", EvidenceIgnored},
		{notOlder, MatchHonoured, gone, "", EvidenceIgnored},
		{Query{Semantic: NotOlderThan, ResourceVersion: "20", Limit: 500, Continue: "t"}, MatchUnknown, gone, "", NoEvidence},
		{Query{Semantic: NotOlderThan, ResourceVersion: "20"}, MatchUnknown, gone, "", NoEvidence},
		{notOlder, MatchUnknown, nil, "30", EvidenceHonoured},
		{notOlder, MatchUnknown, nil, "20", NoEvidence},
		{Query{Semantic: NotOlderThan, ResourceVersion: "20"}, MatchUnknown, nil, "30", NoEvidence},
		{exact, MatchUnknown, nil, "20", NoEvidence},
	}
	for _, c := range cases {
		call := Call{match: c.match, sent: Request{Purpose: PurposePage, Query: c.q, Options: ApplyTo(c.q, metav1.ListOptions{}, Match)}}
		if _, got := call.verify(Answer{Err: c.err, ServedRV: c.served}); got != c.want {
			t.Errorf("%s (match %s) answered %q, err %v: evidence %v, want %v", c.q, c.match, c.served, c.err, got, c.want)
		}
	}
}
