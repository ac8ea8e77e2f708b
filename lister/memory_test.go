package lister

import (
	"context"
	"runtime"
	"testing"

	"github.com/steadywatch/steadywatch/internal/knobs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
)

// A list whose first page holds 2 objects and claims 1,048,576 more must not
// allocate for the claim: memory follows the items that arrive (the server's
// remainingItemCount is untrusted input).
func TestListMemoryFollowsArrivedItems(t *testing.T) {
	claim := int64(1 << 20)
	first := cmList("10", "c", "a", "b")
	first.RemainingItemCount = &claim
	s := &scripted{t: t, answers: []func(metav1.ListOptions) (kruntime.Object, error){
		func(metav1.ListOptions) (kruntime.Object, error) { return first, nil },
		page("10", "", "c", "d"),
	}}
	l := New(s, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()}))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	obj, _, err := l.List(context.Background(), fallback.AnyQuery().WithLimit(2))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(obj); len(got) != 4 {
		t.Fatalf("items %v", got)
	}
	// Two pages of ConfigMaps and the bookkeeping of one call take well under
	// 1 MiB; reserving the claim would take about 288 MiB.
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("List allocated %d bytes for 4 objects (the first page claimed %d more)", d, claim)
	}
}

func TestGrowCapIsBoundedByArrivedItems(t *testing.T) {
	for _, c := range []struct {
		need      int
		remaining int64
		want      int
	}{
		{4, 1 << 20, 80},     // a huge claim: capped at twenty times what arrived
		{4, -1, 8},           // no claim: double, as append
		{4, 1, 5},            // one left: exactly enough
		{500, 0, 500},        // the last page
		{1000, 2500, 3500},   // a claim within the cap: exactly enough
		{1000, 3000, 4000},   // a claim within the cap
		{1000, 19000, 20000}, // at the cap
		{1000, 50000, 20000}, // past it
	} {
		if got := growCap(c.need, c.remaining); got != c.want {
			t.Errorf("growCap(%d, %d) = %d, want %d", c.need, c.remaining, got, c.want)
		}
	}
}
