package engine

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/steadywatch/steadywatch/fallback"
)

// expected is an independent reading of KEP-2523 and the API Concepts tables, written as plain control
// flow (not as patterns), that the table must agree with cell by cell.
func expected(s Situation, p Policy) Action {
	c := s.Class
	if c == Gone && s.HasContinue {
		c = ContinueExpired
	}
	mrf := !p.DisableMostRecentFallback
	switch c {
	case OK:
		return Accept
	case Canceled, Invalid, Forbidden, NotFound, Other, ContinueRepeated:
		return Fail
	case Throttled, ServerError, Transport:
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
		if p.ContinueExpired == FailOnContinueExpired || !s.AttemptsLeft {
			return Fail
		}
		if p.ContinueExpired == RestartUnpaginated {
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
		if s.Semantic == Exact || !s.AttemptsLeft {
			return Fail
		}
		return Backoff
	case TooLargeRV: // API Concepts: 504 + Retry-After
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
			if p.TooLargeAfterBudget == TooLargeFallbackMostRecent && mrf {
				return FallbackMostRecent
			}
		}
		return Fail
	}
	panic(fmt.Sprintf("unhandled class %v", c))
}

func allSituations() []Situation {
	var out []Situation
	for sem := MostRecent; sem <= Exact; sem++ {
		for _, lim := range []bool{false, true} {
			for _, cont := range []bool{false, true} {
				for m := MatchUnknown; m <= MatchIgnored; m++ {
					for _, c := range Classes() {
						for _, left := range []bool{false, true} {
							out = append(out, Situation{Semantic: sem, HasLimit: lim, HasContinue: cont, Match: m, Class: c, AttemptsLeft: left})
						}
					}
				}
			}
		}
	}
	return out
}

func allPolicies() []Policy {
	var out []Policy
	for _, dis := range []bool{false, true} {
		for _, ce := range []ContinueExpiredPolicy{RestartNewerRV, RestartUnpaginated, FailOnContinueExpired} {
			for _, tl := range []TooLargePolicy{TooLargeFallbackMostRecent, TooLargeFail} {
				out = append(out, Policy{DisableMostRecentFallback: dis, ContinueExpired: ce, TooLargeAfterBudget: tl})
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
			ns := s.normalize()
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
			if want := expected(s, p); d.Action != want {
				t.Errorf("%v policy %+v: table says %v (%s), the sources say %v", s, p, d.Action, d.Reason, want)
			}
			checkSafety(t, s, p, d)
		}
	}
	for i, u := range rowsUsed {
		if u == 0 {
			t.Errorf("row %d (%s) never matches: dead rule", i, table[i].Reason)
		}
	}
	if n != 4*2*2*3*len(Classes())*2*12 {
		t.Fatalf("enumerated %d situations", n)
	}
	t.Logf("%d situations x policies checked against %d rows", n, len(table))
}

func checkSafety(t *testing.T, s Situation, p Policy, d decision) {
	t.Helper()
	// Only a plain OK is ever accepted: never a mismatched Exact, never data
	// older than requested, never an error.
	if d.Action == Accept && s.Class != OK {
		t.Errorf("%v: accepts class %v", s, s.Class)
	}
	// Exact never falls back to another semantic or snapshot.
	if s.Semantic == Exact {
		switch d.Action {
		case RetryNewerRV, FallbackMostRecent, RestartListNewerRV, RestartListUnpaginated:
			t.Errorf("%v: Exact leaves its snapshot via %v", s, d.Action)
		}
	}
	// A NotOlderThan list never falls back to Any (which may serve older data).
	// Every follow-up request keeps the floor: build it and check.
	const floor, newer = "100", "150"
	first := Query{Semantic: s.Semantic, Limit: 0}
	switch s.Semantic {
	case NotOlderThan, Exact:
		first.ResourceVersion = floor
	}
	if s.HasLimit {
		first.Limit = 10
	}
	cur := first
	if s.HasContinue {
		cur = Query{Semantic: MostRecent, Limit: 10, Continue: "tok"}
	}
	next, ok := nextQuery(d.Action, cur, first, 50)
	if ok && next.Semantic == NotOlderThan && next.ResourceVersion == "" {
		next.ResourceVersion = newer // the executor fills it from a probe (Step.ProbeNewerRV)
	}
	wantsNext := d.Action != Accept && d.Action != Fail && d.Action != FailExactUnavailable
	if ok != wantsNext {
		t.Fatalf("%v: nextQuery(%v) ok=%v, want %v", s, d.Action, ok, wantsNext)
	}
	if !ok {
		return
	}
	if err := next.Validate(); err != nil {
		t.Errorf("%v: %v produces an invalid query: %v", s, d.Action, err)
	}
	if s.Semantic == NotOlderThan && next.Continue == "" {
		switch next.Semantic {
		case MostRecent: // consistent read: newest
		case NotOlderThan:
			if CompareRV(next.ResourceVersion, floor) == Older {
				t.Errorf("%v: %v lowers the floor to %s", s, d.Action, next.ResourceVersion)
			}
		default:
			t.Errorf("%v: %v turns NotOlderThan into %v", s, d.Action, next.Semantic)
		}
	}
	if d.Action == RestartListNewerRV || d.Action == RestartListUnpaginated || d.Action == RetryNewerRV || d.Action == FallbackMostRecent {
		if next.Continue != "" {
			t.Errorf("%v: %v keeps a continue token of the old snapshot", s, d.Action)
		}
	}
	for _, form := range []WireForm{Match, Legacy} {
		o := next.ListOptions(form)
		if o.Continue != "" && (o.ResourceVersion != "" || o.ResourceVersionMatch != "") {
			t.Errorf("%v: %v sends RV/match with continue: %+v", s, d.Action, o)
		}
	}
}

func TestTableRowsCiteSources(t *testing.T) {
	seen := map[ReasonCode]bool{}
	for i, r := range table {
		if r.Reason == "" || r.Source == "" {
			t.Errorf("row %d has no reason or source", i)
		}
		if len(r.when.classes) == 0 {
			t.Errorf("row %d matches every class", i)
		}
		if strings.Contains(string(r.Reason), " ") {
			t.Errorf("row %d reason %q has a space", i, r.Reason)
		}
		seen[r.Reason] = true
	}
	for _, must := range []ReasonCode{ReasonRule1RetryNewerRV, ReasonRule1FallbackMostRecent, ReasonRule2RetryWithLimit,
		ReasonContinueExpiredRestart, ReasonContinueExpiredUnpaginated, ReasonTooLargeWait, ReasonTooLargeFallbackMostRecent} {
		if !seen[must] {
			t.Errorf("no row with reason %s", must)
		}
	}
}

func TestEvidenceOf(t *testing.T) {
	cases := []struct {
		s      Situation
		served Comparison
		want   Evidence
	}{
		{Situation{Semantic: Exact, Class: ServedNewerThanExact}, Newer, EvidenceIgnored},
		{Situation{Semantic: Exact, Class: ServedNewerThanExact, Match: MatchIgnored}, Newer, NoEvidence}, // match not sent
		{Situation{Semantic: Exact, HasLimit: true, Class: ServedNewerThanExact}, Newer, NoEvidence},
		{Situation{Semantic: NotOlderThan, HasLimit: true, Class: Gone}, Incomparable, EvidenceIgnored},
		{Situation{Semantic: NotOlderThan, HasLimit: true, HasContinue: true, Class: Gone}, Incomparable, NoEvidence},
		{Situation{Semantic: NotOlderThan, HasLimit: false, Class: Gone}, Incomparable, NoEvidence},
		{Situation{Semantic: NotOlderThan, HasLimit: true, Class: OK}, Newer, EvidenceHonoured},
		{Situation{Semantic: NotOlderThan, HasLimit: true, Class: OK}, Same, NoEvidence},
		{Situation{Semantic: NotOlderThan, HasLimit: false, Class: OK}, Newer, NoEvidence},
		{Situation{Semantic: Exact, Class: OK}, Same, NoEvidence},
	}
	for _, c := range cases {
		if got := EvidenceOf(c.s, c.served); got != c.want {
			t.Errorf("EvidenceOf(%v, %v) = %v, want %v", c.s, c.served, got, c.want)
		}
	}
}
