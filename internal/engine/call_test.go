package engine

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/testfake"
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// TestCallFollowUpsAreSafe drives Call.Next with random answers (every kind
// of error, pages served at random resourceVersions, continue tokens) under
// every policy switch and checks every request it returns: the table's
// safety, for the requests built from its rows. It also checks that
// AcceptsListMeta, asked before each answer's items are known, gives Next's
// verdict on every page answer without an error.
func TestCallFollowUpsAreSafe(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	errs := []error{testfake.Gone(), testfake.TooLarge(1), testfake.TooLarge(0), apierrors.NewTooManyRequests("slow", 1), apierrors.NewInternalError(errors.New("boom")),
		apierrors.NewBadRequest("bad"), apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))}
	firsts := []Query{Query{Semantic: NotOlderThan, ResourceVersion: "100"}, Query{Semantic: NotOlderThan, ResourceVersion: "100"}.WithLimit(5), Query{Semantic: Exact, ResourceVersion: "100"}, Query{Semantic: Exact, ResourceVersion: "100"}.WithLimit(5),
		Query{Semantic: MostRecent}.WithLimit(5), Query{Semantic: Any}.WithLimit(5)}
	runs := 0
	for _, p := range allPolicies() {
		for _, first := range firsts {
			for _, m := range []MatchSupport{MatchUnknown, MatchHonoured, MatchIgnored} {
				for range 30 {
					runs++
					m, stuck := m, rnd.IntN(2) == 0
					c, req, err := Start(first, Config{Policy: p.WithDefaults(), PageSize: 50, CanVoidPages: rnd.IntN(2) == 0,
						Beliefs: StaticBeliefs{MatchSupport: m, Stuck: stuck}})
					if err != nil {
						t.Fatal(err)
					}
					for step := 0; step < 40; step++ {
						checkRequest(t, first, req)
						var a Answer
						if rnd.IntN(3) == 0 {
							a.Err = errs[rnd.IntN(len(errs))]
						} else {
							a.ServedRV = strconv.Itoa(90 + rnd.IntN(30))
							a.Items = 1 + rnd.IntN(5)
							if rnd.IntN(2) == 0 {
								a.Continue = "c" + strconv.Itoa(rnd.IntN(1000))
							}
						}
						head := c.AcceptsListMeta(a.ServedRV, a.Continue)
						st := c.Next(a)
						if a.Err == nil && req.Purpose == PurposePage && head != st.Accept {
							// ItemByItem's head check and Next must agree on every answer.
							t.Fatalf("%v: answer %+v to %v: AcceptsListMeta %v, Next accepted %v (class %v)", first, a, req.Query, head, st.Accept, st.Class)
						}
						if st.Accept && st.Class != OK {
							t.Fatalf("%v: accepted class %v", first, st.Class)
						}
						if st.Accept && req.Purpose == PurposePage && req.Query.Continue == "" && first.Semantic == NotOlderThan && CompareRV(a.ServedRV, "100") == Older {
							t.Fatalf("%v: accepted a page served at %s, older than the floor", first, a.ServedRV)
						}
						if st.Done {
							break
						}
						req = st.Next
					}
				}
			}
		}
	}
	t.Logf("%d random calls", runs)
}

func checkRequest(t *testing.T, first Query, req Request) {
	t.Helper()
	q, o := req.Query, req.Options
	if err := q.Validate(); err != nil {
		t.Fatalf("%v: invalid request %v: %v", first, q, err)
	}
	if o.Continue != "" && (o.ResourceVersion != "" || o.ResourceVersionMatch != "") {
		t.Fatalf("%v: RV or match with continue: %+v", first, o)
	}
	if req.Purpose != PurposePage {
		if q != (Query{Semantic: MostRecent}).WithLimit(1) {
			t.Fatalf("%v: probe %v", first, q)
		}
		return
	}
	if q.Continue != "" {
		return
	}
	switch first.Semantic {
	case Exact: // never leaves its snapshot
		if q.Semantic != Exact || q.ResourceVersion != first.ResourceVersion {
			t.Fatalf("%v: Exact left its snapshot for %v", first, q)
		}
	case NotOlderThan: // never below the floor, never Any
		switch q.Semantic {
		case MostRecent:
		case NotOlderThan:
			if CompareRV(q.ResourceVersion, first.ResourceVersion) == Older {
				t.Fatalf("%v: lowered the floor to %v", first, q)
			}
		default:
			t.Fatalf("%v: turned NotOlderThan into %v", first, q)
		}
	}
}
