package steadywatchtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

const (
	nop = metav1.ResourceVersionMatchNotOlderThan
	ex  = metav1.ResourceVersionMatchExact
)

// TestListSemantics walks the list table of Kubernetes API Concepts,
// "Semantics for get and list", on a store at resourceVersion 5 whose
// revision 3 differs from the current state.
func TestListSemantics(t *testing.T) {
	for _, tc := range []struct {
		name      string
		o         metav1.ListOptions
		code      int32
		served    string
		rv, items string
	}{
		{"MostRecent", metav1.ListOptions{}, 200, "MostRecent", "5", "a@4 c@3"},
		{"Any", metav1.ListOptions{ResourceVersion: "0"}, 200, "Any", "5", "a@4 c@3"},
		{"Any with NotOlderThan", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: nop}, 200, "Any", "5", "a@4 c@3"},
		{"NotOlderThan serves newest", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: nop}, 200, "NotOlderThan", "5", "a@4 c@3"},
		{"NotOlderThan with limit is still NotOlderThan", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: nop, Limit: 10}, 200, "NotOlderThan", "5", "a@4 c@3"},
		{"legacy RV without limit is NotOlderThan", metav1.ListOptions{ResourceVersion: "3"}, 200, "NotOlderThan", "5", "a@4 c@3"},
		{"Exact serves history", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: ex}, 200, "Exact", "3", "a@1 b@2 c@3"},
		{"legacy RV with limit is Exact", metav1.ListOptions{ResourceVersion: "3", Limit: 10}, 200, "Exact", "3", "a@1 b@2 c@3"},
		{"Exact at the newest", metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: ex}, 200, "Exact", "5", "a@4 c@3"},
		{"Exact too large", metav1.ListOptions{ResourceVersion: "6", ResourceVersionMatch: ex}, 504, "Exact", "", ""},
		{"NotOlderThan too large", metav1.ListOptions{ResourceVersion: "9", ResourceVersionMatch: nop}, 504, "NotOlderThan", "", ""},
		{"garbage resourceVersion", metav1.ListOptions{ResourceVersion: "abc"}, 400, "Rejected", "", ""},
		{"label selector", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: ex, LabelSelector: "app=y"}, 200, "Exact", "3", "b@2"},
		{"field selector", metav1.ListOptions{FieldSelector: "metadata.name=c"}, 200, "MostRecent", "5", "c@3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := history(t, steadywatchtest.Options{})
			obj, err := s.List(context.Background(), tc.o)
			if got := code(err); got != tc.code {
				t.Fatalf("code %d (%v), want %d", got, err, tc.code)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].Served != tc.served || reqs[0].Code != int(tc.code) {
				t.Fatalf("request log %+v, want one %s answered %d", reqs, tc.served, tc.code)
			}
			if err != nil {
				return
			}
			if rv, _, _ := testfake.ListRV(t, obj); rv != tc.rv {
				t.Errorf("ListMeta.resourceVersion %s, want %s", rv, tc.rv)
			}
			if got := items(t, obj); got != tc.items {
				t.Errorf("items %q, want %q", got, tc.items)
			}
		})
	}
}

func TestTooLargeIsTheWatchCacheAnswer(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	_, err := s.List(context.Background(), metav1.ListOptions{ResourceVersion: "6", ResourceVersionMatch: ex})
	st, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsTimeout(err) {
		t.Fatalf("error %v, want a 504 Timeout", err)
	}
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("causes %+v, want ResourceVersionTooLarge", st.Status().Details)
	}
	if d, ok := apierrors.SuggestsClientDelay(err); !ok || d != 1 {
		t.Errorf("Retry-After %d (%v), want 1", d, ok)
	}
	if want := "Timeout: Too large resource version: 6, current: 5"; st.Status().Message != want { // apierrors.NewTimeoutError prefixes "Timeout: "
		t.Errorf("message %q, want %q", st.Status().Message, want)
	}
}

// TestListValidation: the query validation of a 1.34 apiserver.
func TestListValidation(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	first, err := s.List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := testfake.ListRV(t, first)
	for _, tc := range []struct {
		name string
		o    metav1.ListOptions
		code int32
		msg  string
	}{
		{"match without resourceVersion", metav1.ListOptions{ResourceVersionMatch: nop}, 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{"Exact at 0", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: ex}, 422, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{"unknown match", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: "Newest"}, 422, "Unsupported value"},
		{"match with continue", metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: nop, Continue: tok}, 422, "resourceVersionMatch is forbidden when continue is provided"},
		{"resourceVersion with continue", metav1.ListOptions{ResourceVersion: "3", Continue: tok}, 400, "specifying resource version is not allowed when using continue"},
		{"garbage continue", metav1.ListOptions{Continue: "garbage!"}, 400, "invalid continue token"},
		{"sendInitialEvents on a list", metav1.ListOptions{SendInitialEvents: ptr(true)}, 422, "sendInitialEvents is forbidden for list"},
		{"bad label selector", metav1.ListOptions{LabelSelector: "a in (b"}, 400, "unable to parse requirement"},
		{"unsupported field", metav1.ListOptions{FieldSelector: "spec.x=y"}, 400, "field label not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.List(context.Background(), tc.o)
			if got := code(err); got != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("answer %d %v, want %d containing %q", got, err, tc.code, tc.msg)
			}
			if tc.code == 422 && !strings.Contains(err.Error(), `ListOptions.meta.k8s.io "" is invalid`) {
				t.Errorf("422 message %q lacks the apiserver's prefix", err)
			}
		})
	}
}

func TestCompactedExactIsGone(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	if err := s.Compact("4"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := s.List(ctx, metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: ex})
	if !apierrors.IsResourceExpired(err) || code(err) != 410 {
		t.Fatalf("Exact below the compaction: %v, want 410 Expired", err)
	}
	if want := "too old resource version: 3 (4)"; !strings.Contains(err.Error(), want) {
		t.Errorf("message %q, want %q", err, want)
	}
	// The compacted revision itself stays readable (etcd keeps it).
	obj, err := s.List(ctx, metav1.ListOptions{ResourceVersion: "4", ResourceVersionMatch: ex})
	if err != nil || items(t, obj) != "a@4 b@2 c@3" {
		t.Fatalf("Exact at the compaction: %v %v, want a@4 b@2 c@3", err, obj)
	}
	// NotOlderThan does not need history.
	if _, err := s.List(ctx, metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: nop}); err != nil {
		t.Errorf("NotOlderThan below the compaction: %v", err)
	}
	if err := s.Compact("99"); err == nil {
		t.Error("compacting a future revision succeeded")
	}
}

// TestPaginationIsOneSnapshot: every page of a paginated list is served
// at the first page's resourceVersion, whatever is written in between, with
// remainingItemCount.
func TestPaginationIsOneSnapshot(t *testing.T) {
	s := newCM(steadywatchtest.Options{})
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		s.MustCreate(testfake.ConfigMap(n, ""))
	}
	ctx := context.Background()
	var got []string
	var remaining []int64
	o := metav1.ListOptions{Limit: 2}
	for page := 0; ; page++ {
		obj, err := s.List(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		rv, cont, rem := testfake.ListRV(t, obj)
		if rv != "5" {
			t.Fatalf("page %d served at %s, want 5", page, rv)
		}
		got = append(got, items(t, obj))
		if rem != nil {
			remaining = append(remaining, *rem)
		}
		if cont == "" {
			break
		}
		touch(t, s, "a") // a newer revision must not leak into the snapshot
		s.MustCreate(testfake.ConfigMap(fmt.Sprintf("aa%d", page), ""))
		o = metav1.ListOptions{Limit: 2, Continue: cont}
		if page == 1 {
			o.ResourceVersion = "0" // "treated as Continue Token, Exact"
		}
	}
	if want := []string{"a@5 b@4", "c@3 d@2", "e@1"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("pages %q, want %q", got, want)
	}
	if want := []int64{3, 1}; len(remaining) != 2 || remaining[0] != want[0] || remaining[1] != want[1] {
		t.Errorf("remainingItemCount %v, want %v", remaining, want)
	}
}

func TestContinueOfCompactedSnapshotIsGone(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	ctx := context.Background()
	first, err := s.List(ctx, metav1.ListOptions{ResourceVersion: "3", ResourceVersionMatch: ex, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := testfake.ListRV(t, first)
	if err := s.Compact(""); err != nil {
		t.Fatal(err)
	}
	_, err = s.List(ctx, metav1.ListOptions{Limit: 1, Continue: tok})
	st, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsResourceExpired(err) || !strings.HasPrefix(st.Status().Message, "The provided continue parameter is too old") {
		t.Fatalf("continue after compaction: %v, want 410 with the apiserver's message", err)
	}
	// The 410 carries a token for the rest at the current resourceVersion.
	rest, err := s.List(ctx, metav1.ListOptions{Continue: st.Status().ListMeta.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _, _ := testfake.ListRV(t, rest); rv != "5" || items(t, rest) != "c@3" {
		t.Errorf("inconsistent continuation: rv %s items %q, want 5 and c@3", rv, items(t, rest))
	}
}

func TestRemainingItemCountOnlyWithoutSelectors(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	obj, err := s.List(context.Background(), metav1.ListOptions{Limit: 1, LabelSelector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, cont, rem := testfake.ListRV(t, obj); cont == "" || rem != nil {
		t.Errorf("continue %q remainingItemCount %v, want a token and none (the etcd3 store counts only without selectors)", cont, rem)
	}
}
