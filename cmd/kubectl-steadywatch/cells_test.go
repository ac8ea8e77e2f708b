package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The list table must be the API Concepts' table ("resourceVersionMatch and
// paging parameters for list",
// https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list),
// cell by cell.
func TestProbeCellsFollowAPIConceptsTable(t *testing.T) {
	want := map[string]string{
		"list/match=unset/paging=none/rv=unset":           SemMostRecent,
		"list/match=unset/paging=none/rv=0":               SemAny,
		"list/match=unset/paging=none/rv=N":               SemNotOlderThan,
		"list/match=unset/paging=limit/rv=unset":          SemMostRecent,
		"list/match=unset/paging=limit/rv=0":              SemAny,
		"list/match=unset/paging=limit/rv=N":              SemExact,
		"list/match=unset/paging=limit+continue/rv=unset": SemContinueToken,
		"list/match=unset/paging=limit+continue/rv=0":     SemContinueToken,
		"list/match=unset/paging=limit+continue/rv=N":     SemInvalid,
		"list/match=Exact/paging=none/rv=unset":           SemInvalid,
		"list/match=Exact/paging=none/rv=0":               SemInvalid,
		"list/match=Exact/paging=none/rv=N":               SemExact,
		"list/match=Exact/paging=limit/rv=unset":          SemInvalid,
		"list/match=Exact/paging=limit/rv=0":              SemInvalid,
		"list/match=Exact/paging=limit/rv=N":              SemExact,
		"list/match=NotOlderThan/paging=none/rv=unset":    SemInvalid,
		"list/match=NotOlderThan/paging=none/rv=0":        SemAny,
		"list/match=NotOlderThan/paging=none/rv=N":        SemNotOlderThan,
		"list/match=NotOlderThan/paging=limit/rv=unset":   SemInvalid,
		"list/match=NotOlderThan/paging=limit/rv=0":       SemAny,
		"list/match=NotOlderThan/paging=limit/rv=N":       SemNotOlderThan,
		"watch/rv=unset":                                  SemStateMostRecent,
		"watch/rv=0":                                      SemStateAny,
		"watch/rv=N":                                      SemStartExact,
	}
	ids := map[string]bool{}
	for _, c := range probeCells() {
		if ids[c.ID] {
			t.Errorf("duplicate cell id %s", c.ID)
		}
		ids[c.ID] = true
		if _, ok := satisfiedBy[c.Expected]; !ok {
			t.Errorf("%s: expected %q has no satisfiedBy entry", c.ID, c.Expected)
		}
		if w, ok := want[c.ID]; ok && c.Expected != w {
			t.Errorf("%s: expected %s, the API Concepts say %s", c.ID, c.Expected, w)
		}
		// Footnote [1]: with the match ignored, a cell is its match-unset twin.
		if c.Kind == KindList && c.Match != "" {
			twin := "list/match=unset/paging=" + c.Paging + "/rv=" + rvLabel(c.RV)
			if c.ExpectedIfMatchIgnored != want[twin] {
				t.Errorf("%s: expectedIfMatchIgnored %s, want %s (cell %s)", c.ID, c.ExpectedIfMatchIgnored, want[twin], twin)
			}
		}
	}
	for id := range want {
		if !ids[id] {
			t.Errorf("cell %s missing", id)
		}
	}
	if len(ids) != 33 {
		t.Errorf("%d cells, want 33", len(ids))
	}
}

func TestObserveList(t *testing.T) {
	refs := listRefs{Old: "100", LatestBefore: "110", Token: "108", Future: "1000110"}
	cells := map[string]cell{}
	for _, c := range probeCells() {
		cells[c.ID] = c
	}
	for _, tc := range []struct {
		cell, served, observed, relation string
	}{
		{"list/match=Exact/paging=none/rv=N", "100", SemExact, "exact"},
		{"list/match=Exact/paging=none/rv=N", "110", SemNotOlderThan, "newer"},
		{"list/match=NotOlderThan/paging=none/rv=N", "99", SemOlder, "older"},
		{"list/match=unset/paging=none/rv=unset", "110", SemMostRecent, "exact"},
		{"list/match=unset/paging=none/rv=unset", "111", SemMostRecent, "newer"},
		{"list/match=unset/paging=none/rv=unset", "109", SemStale, "older"},
		{"list/match=unset/paging=none/rv=0", "50", SemAny, "older"},
		{"list/match=unset/paging=limit+continue/rv=unset", "108", SemContinueToken, "exact"},
		{"list/match=unset/paging=limit+continue/rv=0", "110", SemNewSnapshot, "newer"},
		{"list/match=Exact/paging=none/rv=N", "abc", SemError, "incomparable"},
	} {
		c, ok := cells[tc.cell]
		if !ok {
			t.Fatalf("no cell %s", tc.cell)
		}
		obs, rel, _ := observeList(c, tc.served, refs)
		if obs != tc.observed || rel != tc.relation {
			t.Errorf("%s served at %s: got %s/%s, want %s/%s", tc.cell, tc.served, obs, rel, tc.observed, tc.relation)
		}
	}
}

func TestVerdict(t *testing.T) {
	exactNoLimit := cell{Match: metav1.ResourceVersionMatchExact, Expected: SemExact, ExpectedIfMatchIgnored: SemNotOlderThan}
	notOlderLimit := cell{Match: metav1.ResourceVersionMatchNotOlderThan, Expected: SemNotOlderThan, ExpectedIfMatchIgnored: SemExact}
	invalid := cell{Match: metav1.ResourceVersionMatchExact, Expected: SemInvalid, ExpectedIfMatchIgnored: SemMostRecent}
	unsetMostRecent := cell{Expected: SemMostRecent}
	for _, tc := range []struct {
		name     string
		c        cell
		observed string
		want     string
	}{
		{"exact honoured", exactNoLimit, SemExact, VerdictAsSpecified},
		{"exact ignored (v1.18)", exactNoLimit, SemNotOlderThan, VerdictMatchIgnored},
		{"exact gone", exactNoLimit, SemGone, VerdictDiffers},
		{"NotOlderThan served exactly N keeps its guarantee", notOlderLimit, SemExact, VerdictAsSpecified},
		{"invalid accepted by a server without the match", invalid, SemMostRecent, VerdictMatchIgnored},
		{"invalid rejected", invalid, SemInvalid, VerdictAsSpecified},
		{"no match: no legacy excuse", unsetMostRecent, SemStale, VerdictDiffers},
		{"bookmark optional", cell{Expected: SemMayBookmark}, SemNoBookmark, VerdictAsSpecified},
		{"streaming ignored", cell{Expected: SemInitialEventsEnd}, SemNoInitialEventsEnd, VerdictDiffers},
	} {
		if got := verdict(tc.c, tc.observed); got != tc.want {
			t.Errorf("%s: verdict %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestObserveWatch(t *testing.T) {
	for _, tc := range []struct {
		rv   string
		obs  watchObservation
		want string
	}{
		{RVUnset, watchObservation{InitialState: true, CompleteState: true, ChangesAfterOld: true}, SemStateMostRecent},
		{RVUnset, watchObservation{InitialState: true}, SemStateAny},
		{RVZero, watchObservation{InitialState: true, CompleteState: true}, SemStateAny},
		{RVOld, watchObservation{ChangesAfterOld: true}, SemStartExact},
		{RVOld, watchObservation{InitialState: true, CompleteState: true}, SemStateMostRecent},
		{RVOld, watchObservation{}, SemNoEvents},
	} {
		if got := observeWatch(cell{RV: tc.rv}, tc.obs); got != tc.want {
			t.Errorf("rv %q %+v: %s, want %s", tc.rv, tc.obs, got, tc.want)
		}
	}
}
