package watchpipe

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/watch"
)

// refHeld is the plain-map model heldVersions must match: one map, every
// initial version written into it, every event compared against it, and a
// deletion kept as a tombstone (negative) that rejects events at or below
// it (a repeated DELETED at the same version excepted).
type refHeld map[objectKey]int64

func (r refHeld) event(k objectKey, n uint64, t watch.EventType, compare bool) (uint64, bool) {
	if h, ok := r[k]; ok && compare {
		switch {
		case h >= 0 && int64(n) < h:
			return uint64(h), true
		case h < 0 && (int64(n) < -h || (int64(n) == -h && t != watch.Deleted)):
			return uint64(-h), true
		}
	}
	if t == watch.Deleted {
		r[k] = -int64(n)
	} else {
		r[k] = int64(n)
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
		h := newHeldVersions(hist%2 == 0, 1000, 0)
		ref := refHeld{}
		for i, n := 0, rng.IntN(8)+rng.IntN(2)*rng.IntN(300); i < n; i++ {
			k, v := key(), uint64(1+rng.IntN(50))
			h.initial(k, strconv.FormatUint(v, 10), v, true)
			ref[k] = int64(v)
		}
		for i, n := 0, rng.IntN(30); i < n; i++ {
			k, v, typ, compare := key(), uint64(1+rng.IntN(100)), types[rng.IntN(len(types))], rng.IntN(8) != 0
			gotHeld, gotStale := h.event(k, strconv.FormatUint(v, 10), v, true, typ, compare)
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
	h := newHeldVersions(false, 10, 0)
	for i := range 100 {
		h.initial(objectKey{"ns", string(rune('a' + i%26))}, "", uint64(10+i), true)
	}
	for i := range 100 {
		if _, stale := h.event(objectKey{"ns", string(rune('a' + i%26))}, "", uint64(200+i), true, watch.Modified, true); stale {
			t.Fatalf("event %d reported stale", i)
		}
	}
	if h.index != nil {
		t.Fatal("index built although no event could be older than its object")
	}
	// An event at or below the newest initial version needs the index, and
	// is compared with the object's own version.
	if held, stale := h.event(objectKey{"ns", "zz"}, "", 50, true, watch.Modified, true); stale {
		t.Fatalf("unknown object reported stale (held %d)", held)
	}
	if h.index == nil {
		t.Fatal("index not built for an event below the floor")
	}
	if held, stale := h.event(objectKey{"ns", "a"}, "", 150, true, watch.Modified, true); !stale || held != 278 {
		t.Fatalf("a at 150 after a at 278: got (%d, %v), want (278, true)", held, stale)
	}
}

// Tombstones are bounded: past the bound the oldest deletion is forgotten,
// and a re-created object's old tombstone does not evict its live entry.
func TestHeldVersionsTombstonesAreBounded(t *testing.T) {
	h := newHeldVersions(true, 2, 0)
	del := func(name string, n uint64) { h.event(objectKey{"ns", name}, "", n, true, watch.Deleted, true) }
	stale := func(name string, n uint64) bool {
		_, s := h.event(objectKey{"ns", name}, "", n, true, watch.Modified, true)
		return s
	}
	del("a", 10)
	h.event(objectKey{"ns", "a"}, "", 11, true, watch.Added, true) // re-created
	del("b", 12)
	del("c", 13) // the ring holds a@10 (stale entry), b@12: a's is evicted, a stays live
	if !stale("a", 5) {
		t.Fatal("re-created a lost its live version when its old tombstone was evicted")
	}
	if !stale("b", 9) || !stale("c", 9) {
		t.Fatal("tombstones within the bound forgot a deletion")
	}
	del("d", 14) // evicts b
	if stale("b", 9) {
		t.Fatal("more tombstones kept than the bound")
	}
	if h.live != 2 {
		t.Fatalf("live %d, want 2 (a, and b recorded again once forgotten)", h.live)
	}
}
