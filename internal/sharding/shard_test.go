package sharding_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	shard "github.com/steadywatch/steadywatch/internal/sharding"
)

const half = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"

func TestParseAcceptsTheApiserversForm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want shard.Selector
	}{
		{"", shard.Selector{}},
		{half, shard.Selector{Field: shard.FieldUID, Ranges: []shard.Range{{0, 1 << 63}}}},
		{"shardRange(object.metadata.namespace,'0x8000000000000000','0x10000000000000000')",
			shard.Selector{Field: shard.FieldNamespace, Ranges: []shard.Range{{1 << 63, 0}}}},
		{half + " || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
			shard.Selector{Field: shard.FieldUID, Ranges: []shard.Range{{0, 1 << 63}, {3 << 62, 0}}}},
	} {
		got, err := shard.Parse(tc.in)
		if err != nil || got.String() != tc.want.String() || len(got.Ranges) != len(tc.want.Ranges) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := shard.Parse(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("String() of %q does not round-trip: %q, %v", tc.in, got.String(), err)
		}
	}
}

func TestParseRejectsWhatTheApiserverRejects(t *testing.T) {
	for _, in := range []string{
		"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",  // field
		"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",                  // 16 digits
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",   // start < end
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",   // empty range
		"shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",   // hex
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",    // paren
		"shardRange(object.metadata.uid, 0x0000000000000000, '0x8000000000000000')",     // quotes
		"shardRange(object.metadata.uid, '0X0000000000000000', '0x8000000000000000')",   // prefix
		"shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')", // 2^64 as start
		half + " && " + half,
		half + " || shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')", // two fields
		"true",
	} {
		_, err := shard.Parse(in)
		var se *shard.SelectorError
		if !errors.Is(err, shard.ErrInvalidSelector) || !errors.As(err, &se) || se.Selector == "" {
			t.Errorf("Parse(%q) = %v, want a *SelectorError", in, err)
		}
	}
}

// The client-side decision must be the apiserver's: compare with
// k8s.io/apimachinery/pkg/sharding's Matches on random UIDs and ranges.
func TestMatchesIsTheApiserversDecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		a, b := rng.Uint64(), rng.Uint64()
		if a > b {
			a, b = b, a
		}
		if a == b {
			continue
		}
		r := shard.Range{Start: a, End: b}
		if i%7 == 0 {
			r.End = 0 // to the end of the space
		}
		sel := shard.Selector{Field: shard.FieldUID, Ranges: []shard.Range{r}}
		ref := apisharding.NewSelector(apisharding.ShardRangeRequirement{Key: shard.FieldUID,
			Start: fmt.Sprintf("0x%016x", r.Start), End: endHex(r.End)})
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprintf("uid-%d-%d", i, rng.Int()))}}
		got, err := sel.Matches(cm)
		want, rerr := ref.Matches(cm)
		if err != nil || rerr != nil || got != want {
			t.Fatalf("range %v, uid %s: Matches = %v (%v), apimachinery says %v (%v)", r, cm.UID, got, err, want, rerr)
		}
	}
}

func endHex(e uint64) string {
	if e == 0 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", e)
}

func TestVerifyReadsShardInfo(t *testing.T) {
	sel, err := shard.Parse(half)
	if err != nil {
		t.Fatal(err)
	}
	typed := func(info *metav1.ShardInfo) *corev1.ConfigMapList {
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: info}}
	}
	unstr := func(info any) *unstructured.UnstructuredList {
		u := &unstructured.UnstructuredList{Object: map[string]any{"metadata": map[string]any{}}}
		if info != nil {
			u.Object["metadata"].(map[string]any)["shardInfo"] = info
		}
		return u
	}
	respaced := "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')"
	check := func(name string, mode shard.Mode, err error, want shard.Mode, wantErr error) {
		t.Helper()
		if mode != want || !errors.Is(err, wantErr) {
			t.Errorf("%s: Verify = %q, %v; want %q, %v", name, mode, err, want, wantErr)
		}
	}
	m, err := shard.Verify(typed(nil), sel)
	check("typed, no shardInfo", m, err, shard.ModeClient, nil)
	m, err = shard.Verify(typed(&metav1.ShardInfo{Selector: respaced}), sel)
	check("typed, echoed", m, err, shard.ModeServer, nil)
	m, err = shard.Verify(typed(&metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"}), sel)
	check("typed, other selector", m, err, "", shard.ErrShardInfoMismatch)
	m, err = shard.Verify(unstr(nil), sel)
	check("unstructured, no shardInfo", m, err, shard.ModeClient, nil)
	m, err = shard.Verify(unstr(map[string]any{"selector": half}), sel)
	check("unstructured, echoed", m, err, shard.ModeServer, nil)
	m, err = shard.Verify(unstr("garbage"), sel)
	check("unstructured, malformed shardInfo", m, err, "", shard.ErrShardInfoMismatch)
	m, err = shard.Verify(&unstructured.UnstructuredList{Object: map[string]any{}}, sel)
	check("unstructured, no metadata", m, err, shard.ModeClient, nil)
}

func TestFilterKeepsExactlyTheSelected(t *testing.T) {
	sel, _ := shard.Parse(half)
	list := &corev1.ConfigMapList{}
	want := 0
	for i := range 200 {
		cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: types.UID(fmt.Sprintf("u%d", i))}}
		if ok, _ := sel.Matches(&cm); ok {
			want++
		}
		list.Items = append(list.Items, cm)
	}
	dropped, err := shard.Filter(list, sel)
	if err != nil || len(list.Items) != want || dropped != 200-want || want == 0 || want == 200 {
		t.Fatalf("Filter kept %d dropped %d (%v); want %d kept", len(list.Items), dropped, err, want)
	}
	for i := range list.Items {
		if ok, _ := sel.Matches(&list.Items[i]); !ok {
			t.Fatalf("kept %s outside the selector", list.Items[i].Name)
		}
	}
}

func TestAssignCoversEverySliceOnceBalancedAndStable(t *testing.T) {
	const n = shard.DefaultSlices
	for members := 1; members <= 8; members++ {
		names := make([]string, members)
		for i := range names {
			names[i] = fmt.Sprintf("operator-%d", i)
		}
		a := shard.Assign(names, n)
		rev := slices.Clone(names)
		slices.Reverse(rev)
		b := shard.Assign(rev, n)
		seen := make([]int, n)
		most := 0
		for _, m := range names {
			if !slices.Equal(a[m], b[m]) {
				t.Fatalf("%d members: the map depends on the order of members", members)
			}
			for _, s := range a[m] {
				seen[s]++
			}
			most = max(most, len(a[m]))
		}
		for s, c := range seen {
			if c != 1 {
				t.Fatalf("%d members: slice %d assigned %d times", members, s, c)
			}
		}
		if most > (n+members-1)/members {
			t.Fatalf("%d members: one holds %d slices, more than ceil(%d/%d)", members, most, n, members)
		}
		if members > 1 {
			// One member leaves: the others keep most of their slices.
			rest := shard.Assign(names[1:], n)
			kept := 0
			for _, m := range names[1:] {
				for _, s := range a[m] {
					if slices.Contains(rest[m], s) {
						kept++
					}
				}
			}
			if held := n - len(a[names[0]]); kept < held*3/4 {
				t.Fatalf("%d members, one leaves: only %d of %d slices kept their owner", members, kept, held)
			}
		}
	}
}

func TestSelectorOfMergesAdjacentSlices(t *testing.T) {
	s, ok := shard.SelectorOf(shard.FieldUID, []int{3, 0, 1, 2}, 4)
	if !ok || s.String() != "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')" {
		t.Fatalf("all four slices: %q, %v", s.String(), ok)
	}
	s, _ = shard.SelectorOf(shard.FieldUID, []int{0, 2}, 4)
	if len(s.Ranges) != 2 || !s.MatchesHash(0) || s.MatchesHash(1<<62) || !s.MatchesHash(1<<63) {
		t.Fatalf("slices 0 and 2 of 4: %q", s.String())
	}
	if _, err := shard.Parse(s.String()); err != nil {
		t.Fatalf("SelectorOf's selector does not parse: %v", err)
	}
	if _, ok := shard.SelectorOf(shard.FieldUID, nil, 4); ok {
		t.Fatal("no slices must not make a selector")
	}
}
