package lister

import (
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/watch"
)

// refHeld is the plain-map model heldVersions must match: one map, every
// initial version written into it, every event compared against it.
type refHeld map[objectKey]uint64

func (r refHeld) event(k objectKey, n uint64, t watch.EventType, compare bool) (uint64, bool) {
	if h, ok := r[k]; ok && compare && n < h {
		return h, true
	}
	if t == watch.Deleted {
		delete(r, k)
	} else {
		r[k] = n
	}
	return 0, false
}

// TestHeldVersionsMatchesMap drives heldVersions and the plain map with the
// same random initial states and events (a few keys, versions that go back
// and forth, deletions, events at, below and above the initial floor) and
// requires the same answer for every event.
func TestHeldVersionsMatchesMap(t *testing.T) {
	types := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}
	for hist := uint64(0); hist < 2000; hist++ {
		rng := rand.New(rand.NewPCG(hist, 7))
		keys := 1 + rng.IntN(6)
		key := func() objectKey { return objectKey{"ns", string(rune('a' + rng.IntN(keys)))} }
		h := newHeldVersions()
		ref := refHeld{}
		for i, n := 0, rng.IntN(8)+rng.IntN(2)*rng.IntN(300); i < n; i++ {
			k, v := key(), uint64(1+rng.IntN(50))
			h.initial(k, v)
			ref[k] = v
		}
		for i, n := 0, rng.IntN(30); i < n; i++ {
			k, v, typ, compare := key(), uint64(1+rng.IntN(100)), types[rng.IntN(len(types))], rng.IntN(8) != 0
			gotHeld, gotStale := h.event(k, v, typ, compare)
			wantHeld, wantStale := ref.event(k, v, typ, compare)
			if gotHeld != wantHeld || gotStale != wantStale {
				t.Fatalf("history %d, event %d (%s %v at %d, compare=%v): got (%d, %v), want (%d, %v)",
					hist, i, typ, k, v, compare, gotHeld, gotStale, wantHeld, wantStale)
			}
		}
		if h.size() == 0 && len(ref) != 0 {
			t.Fatalf("history %d: heldVersions holds nothing, the model %d objects", hist, len(ref))
		}
	}
}

// The common case never builds the index: a streaming list's initial
// events, then events newer than all of them.
func TestHeldVersionsIndexOnlyWhenNeeded(t *testing.T) {
	h := newHeldVersions()
	for i := range 100 {
		h.initial(objectKey{"ns", string(rune('a' + i%26))}, uint64(10+i))
	}
	for i := range 100 {
		if _, stale := h.event(objectKey{"ns", string(rune('a' + i%26))}, uint64(200+i), watch.Modified, true); stale {
			t.Fatalf("event %d reported stale", i)
		}
	}
	if h.index != nil {
		t.Fatal("index built although no event could be older than its object")
	}
	// An event at or below the newest initial version needs the index, and
	// is compared with the object's own version.
	if held, stale := h.event(objectKey{"ns", "zz"}, 50, watch.Modified, true); stale {
		t.Fatalf("unknown object reported stale (held %d)", held)
	}
	if h.index == nil {
		t.Fatal("index not built for an event below the floor")
	}
	if held, stale := h.event(objectKey{"ns", "a"}, 150, watch.Modified, true); !stale || held != 278 {
		t.Fatalf("a at 150 after a at 278: got (%d, %v), want (278, true)", held, stale)
	}
}
