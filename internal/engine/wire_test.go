package engine

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/steadywatch/steadywatch/fallback"
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// TestFromListOptionsConceptsTable checks every cell of the API Concepts list table.
func TestFromListOptionsConceptsTable(t *testing.T) {
	type cell struct {
		match    metav1.ResourceVersionMatch
		limit    int64
		cont     string
		rv       string
		wantSem  Semantic
		wantRule Rule
	}
	NOT, EX := metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact
	cells := []cell{
		// unset, limit unset: Most Recent | Any | Not older than
		{"", 0, "", "", MostRecent, ""}, {"", 0, "", "0", Any, ""}, {"", 0, "", "7", NotOlderThan, ""},
		// unset, limit=n: Most Recent | Any | Exact
		{"", 5, "", "", MostRecent, ""}, {"", 5, "", "0", Any, ""}, {"", 5, "", "7", Exact, ""},
		// unset, limit + continue: Continue Token | Invalid | Invalid 400
		{"", 5, "c", "", MostRecent, ""}, {"", 5, "c", "0", 0, RuleContinueWithResourceVersion}, {"", 5, "c", "7", 0, RuleContinueWithResourceVersion},
		// Exact, limit unset / limit: Invalid | Invalid | Exact
		{EX, 0, "", "", 0, RuleMatchWithoutResourceVersion}, {EX, 0, "", "0", 0, RuleExactZero}, {EX, 0, "", "7", Exact, ""},
		{EX, 5, "", "", 0, RuleMatchWithoutResourceVersion}, {EX, 5, "", "0", 0, RuleExactZero}, {EX, 5, "", "7", Exact, ""},
		// NotOlderThan, limit unset / limit: Invalid | Any | Not older than
		{NOT, 0, "", "", 0, RuleMatchWithoutResourceVersion}, {NOT, 0, "", "0", Any, ""}, {NOT, 0, "", "7", NotOlderThan, ""},
		{NOT, 5, "", "", 0, RuleMatchWithoutResourceVersion}, {NOT, 5, "", "0", Any, ""}, {NOT, 5, "", "7", NotOlderThan, ""},
		// match with continue: not in the table (continue unset only)
		{EX, 5, "c", "", 0, RuleContinueWithMatch}, {NOT, 5, "c", "", 0, RuleContinueWithMatch},
		{"", 0, "c", "", 0, RuleContinueWithoutLimit},
		{"Newest", 0, "", "7", 0, RuleUnknownMatch},
		{"", -1, "", "", 0, RuleNegativeLimit},
	}
	for _, c := range cells {
		o := metav1.ListOptions{ResourceVersion: c.rv, ResourceVersionMatch: c.match, Limit: c.limit, Continue: c.cont}
		q, err := FromListOptions(o)
		if c.wantRule != "" {
			var iq *InvalidQueryError
			if !errors.As(err, &iq) || iq.Rule != c.wantRule {
				t.Errorf("%+v: got %v %v, want rule %s", o, q, err, c.wantRule)
			}
			continue
		}
		if err != nil || q.Semantic != c.wantSem || q.Limit != c.limit || q.Continue != c.cont {
			t.Errorf("%+v: got %v %v, want %v", o, q, err, c.wantSem)
			continue
		}
		if err := q.Validate(); err != nil {
			t.Errorf("%+v: FromListOptions returned an invalid query: %v", o, err)
		}
		// Round trip: the Match form means the same thing to a server.
		back, err := FromListOptions(ListOptions(q, Match))
		if err != nil || back.Semantic != q.Semantic || back.ResourceVersion != q.ResourceVersion {
			t.Errorf("%+v: round trip %v -> %+v -> %v %v", o, q, ListOptions(q, Match), back, err)
		}
	}
}

func TestListOptionsForms(t *testing.T) {
	cases := []struct {
		q            Query
		form         WireForm
		rv           string
		match        metav1.ResourceVersionMatch
		limit        int64
		legacyMeans  Semantic
		continueSent bool
	}{
		{Query{Semantic: MostRecent}, Match, "", "", 0, MostRecent, false},
		{Query{Semantic: Any}.WithLimit(3), Legacy, "0", "", 3, Any, false},
		{Query{Semantic: NotOlderThan, ResourceVersion: "9"}, Match, "9", metav1.ResourceVersionMatchNotOlderThan, 0, NotOlderThan, false},
		{Query{Semantic: NotOlderThan, ResourceVersion: "9"}, Legacy, "9", "", 0, NotOlderThan, false},
		{Query{Semantic: NotOlderThan, ResourceVersion: "9"}.WithLimit(4), Legacy, "9", "", 4, Exact, false}, // acceptable: exact 9 is not older than 9
		{Query{Semantic: Exact, ResourceVersion: "9"}, Match, "9", metav1.ResourceVersionMatchExact, 0, NotOlderThan, false},
		{Query{Semantic: Exact, ResourceVersion: "9"}, Legacy, "9", "", DefaultLegacyExactLimit, Exact, false},
		{Query{Semantic: Exact, ResourceVersion: "9"}.WithLimit(7), Legacy, "9", "", 7, Exact, false},
		{Query{Semantic: MostRecent}.WithLimit(2).WithContinue("tok"), Match, "", "", 2, MostRecent, true},
	}
	for _, c := range cases {
		o := ListOptions(c.q, c.form)
		if o.ResourceVersion != c.rv || o.ResourceVersionMatch != c.match || o.Limit != c.limit || (o.Continue != "") != c.continueSent {
			t.Errorf("%v %v: got %+v", c.q, c.form, o)
		}
		// What a legacy server (ignoring the match) makes of it.
		o.ResourceVersionMatch = ""
		legacy, err := FromListOptions(o)
		if err != nil || legacy.Semantic != c.legacyMeans {
			t.Errorf("%v %v: a legacy server reads %v %v, want %v", c.q, c.form, legacy, err, c.legacyMeans)
		}
	}
	base := metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "3", ResourceVersionMatch: "Exact", Continue: "x"}
	o := ApplyTo(Query{Semantic: MostRecent}, base, Match)
	if o.LabelSelector != "a=b" || o.ResourceVersion != "" || o.ResourceVersionMatch != "" || o.Continue != "" {
		t.Errorf("ApplyTo kept stale fields or lost selectors: %+v", o)
	}
}

func FuzzValidate(f *testing.F) {
	f.Add(0, "", int64(0), "")
	f.Add(3, "0", int64(5), "")
	f.Add(2, "12", int64(-1), "tok")
	f.Fuzz(func(t *testing.T, sem int, rv string, limit int64, cont string) {
		q := Query{Semantic: Semantic(sem), ResourceVersion: rv, Limit: limit, Continue: cont}
		err := q.Validate()
		if err != nil {
			var iq *InvalidQueryError
			if !errors.As(err, &iq) || !errors.Is(err, ErrInvalidQuery) || iq.Rule.Citation() == "" {
				t.Fatalf("untyped or uncited error %T %v", err, err)
			}
			_ = err.Error()
			return
		}
		// A valid query's wire options never carry RV or match with continue,
		// and the server reads the Match form back as the same semantic.
		for _, form := range []WireForm{Match, Legacy} {
			o := ListOptions(q, form)
			if o.Continue != "" && (o.ResourceVersion != "" || o.ResourceVersionMatch != "") {
				t.Fatalf("%v: RV/match with continue: %+v", q, o)
			}
		}
		back, err := FromListOptions(ListOptions(q, Match))
		if err != nil {
			t.Fatalf("%v: wire form rejected: %v", q, err)
		}
		if q.Semantic == NotOlderThan && q.ResourceVersion == "0" {
			if back.Semantic != Any {
				t.Fatalf("NotOlderThan(0) read back as %v", back)
			}
		} else if back.Semantic != q.Semantic || back.ResourceVersion != q.ResourceVersion || back.Continue != q.Continue {
			t.Fatalf("%v read back as %v", q, back)
		}
	})
}

func FuzzFromListOptions(f *testing.F) {
	f.Add("", "", int64(0), "")
	f.Add("0", "Exact", int64(1), "")
	f.Add("5", "NotOlderThan", int64(0), "c")
	f.Fuzz(func(t *testing.T, rv, match string, limit int64, cont string) {
		o := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatch(match), Limit: limit, Continue: cont}
		q, err := FromListOptions(o)
		if err != nil {
			var iq *InvalidQueryError
			if !errors.As(err, &iq) || !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("untyped error %T %v", err, err)
			}
			_ = err.Error()
			return
		}
		if err := q.Validate(); err != nil {
			t.Fatalf("%+v accepted as %v which does not validate: %v", o, q, err)
		}
	})
}
