package watchpipe

import "k8s.io/apimachinery/pkg/watch"

// objectKey is an object's namespace and name; built from the strings the
// object already holds, so a lookup allocates nothing.
type objectKey struct{ namespace, name string }

// entry is what the index holds for one object: the resourceVersion last
// delivered (rv as sent, n parsed) and whether the object is live, live with
// a version that does not parse (never compared), or deleted at n (a
// tombstone).
type entry struct {
	rv   string
	n    uint64
	kind entryKind
}

type entryKind uint8

const (
	live entryKind = iota
	opaque
	gone
)

// heldVersions is the resourceVersion last delivered per object since the
// last list (or streaming list), and a bounded memory of recent deletions:
// what the pipeline compares a watch event with, so that an event older than
// the object already delivered, or older than its deletion, is never
// delivered.
//
// In lazy mode (the drop-in ListerWatcher, whose lists can be large and whose
// watches rarely need an index) the initial state is kept in plain blocks,
// base, not indexed: appending costs a fraction of a map insert and never
// copies (blocks grow from 64 to 4096 entries). An event after it can only be
// older than its object's base version if its resourceVersion is at most
// floor (the newest version in base); such an event, or a DELETED event,
// builds the index once (base and the later events in recent merged into one
// map) and from then on every event uses that map. In indexed mode (the
// reflector, which needs every key at once for its item count and its
// consistency check) the index is built from the start.
//
// Tombstones: an object deleted at d stays in the index as a tombstone, so
// that an event for it at a resourceVersion below d (or at d, other than the
// DELETED itself) is rejected, until a list replaces the state. At most
// maxTombstones are kept; the oldest deletion is forgotten first. Past that
// bound the watch's floor still holds (see Watch): no event at or below the
// resourceVersion the watch started from, or older than the newest event it
// delivered, is ever delivered.
type heldVersions struct {
	base  [][]heldEntry
	nbase int // entries in base
	floor uint64
	// recent: versions delivered after base, while index is not built.
	recent map[objectKey]*entry
	// index: base and recent merged; nil until an event needs it (lazy
	// mode) or from the start (indexed mode).
	index map[objectKey]*entry
	// The maps' entries live in blocks (slab, the block being filled) and
	// are updated in place, so that an event costs one map lookup; freed
	// ones are reused.
	slab []entry
	free []*entry
	// live counts the index's entries that are not tombstones.
	live int
	// tombs is a ring of the tombstones in the order they were made, for
	// evicting the oldest; head is the oldest, ntombs how many are in it.
	tombs         []heldEntry
	head, ntombs  int
	maxTombstones int
}

type heldEntry struct {
	k objectKey
	n uint64
}

// Block sizes of base: the first holds minHeldBlock entries, each next one
// twice the previous, up to maxHeldBlock (160 KiB).
const (
	minHeldBlock = 64
	maxHeldBlock = 4096
)

// newHeldVersions starts empty; indexed builds the index at once.
func newHeldVersions(indexed bool, maxTombstones int, sizeHint int) *heldVersions {
	h := &heldVersions{maxTombstones: maxTombstones}
	if indexed {
		h.index = make(map[objectKey]*entry, sizeHint)
	}
	return h
}

// newEntry returns a place for e: a freed one, or the next of the block
// being filled (blocks grow like base's).
func (h *heldVersions) newEntry(e entry) *entry {
	if n := len(h.free); n > 0 {
		p := h.free[n-1]
		h.free = h.free[:n-1]
		*p = e
		return p
	}
	if len(h.slab) == cap(h.slab) {
		h.slab = make([]entry, 0, min(max(2*cap(h.slab), minHeldBlock), maxHeldBlock))
	}
	h.slab = append(h.slab, e)
	return &h.slab[len(h.slab)-1]
}

// dropEntry removes k, whose entry is p, from the index.
func (h *heldVersions) dropEntry(k objectKey, p *entry) {
	delete(h.index, k)
	*p = entry{}
	h.free = append(h.free, p)
}

// size is how many versions are held (an object may count twice before the
// index is built; tombstones count).
func (h *heldVersions) size() int {
	return h.nbase + len(h.recent) + len(h.index)
}

// initial records the version of one object of the initial state (parses:
// rv is the number n).
func (h *heldVersions) initial(k objectKey, rv string, n uint64, parses bool) {
	if h.index != nil || h.recent != nil {
		h.event(k, rv, n, parses, watch.Added, false)
		return
	}
	last := len(h.base) - 1
	if last < 0 || len(h.base[last]) == cap(h.base[last]) {
		size := minHeldBlock
		if last >= 0 {
			size = min(2*cap(h.base[last]), maxHeldBlock)
		}
		h.base = append(h.base, make([]heldEntry, 0, size))
		last++
	}
	h.base[last] = append(h.base[last], heldEntry{k, n})
	h.nbase++
	h.floor = max(h.floor, n)
}

// event records that an event of type t for k at rv (parses: the number n)
// is delivered, or, when compare is set and it is older than what was last
// delivered for k (or not newer than k's deletion), reports it stale with
// the version held (and records nothing).
func (h *heldVersions) event(k objectKey, rv string, n uint64, parses bool, t watch.EventType, compare bool) (held uint64, stale bool) {
	if h.index == nil {
		if r, ok := h.recent[k]; ok && t != watch.Deleted && parses {
			if compare && n < r.n {
				return r.n, true
			}
			r.n = n
			return 0, false
		} else if !ok && t != watch.Deleted && parses && (n > h.floor || h.nbase == 0) {
			// Newer than every version of base: it cannot be older than
			// k's, if base has k at all.
			if h.recent == nil {
				h.recent = map[objectKey]*entry{}
			}
			h.recent[k] = h.newEntry(entry{n: n})
			return 0, false
		}
		h.buildIndex()
	}
	e, ok := h.index[k]
	if ok && compare && parses {
		switch e.kind {
		case live:
			if n < e.n {
				return e.n, true
			}
		case gone:
			if n < e.n || (n == e.n && t != watch.Deleted) {
				return e.n, true
			}
		}
	}
	wasLive := ok && e.kind != gone
	if wasLive && t == watch.Deleted {
		h.live--
	} else if !wasLive && t != watch.Deleted {
		h.live++
	}
	kind := live
	switch {
	case t == watch.Deleted && (!parses || h.maxTombstones <= 0):
		// Nothing to compare a later event with: forgotten.
		if ok {
			h.dropEntry(k, e)
		}
		return 0, false
	case t == watch.Deleted:
		kind, rv = gone, ""
		h.pushTomb(k, n)
	case !parses:
		kind = opaque
	}
	if ok {
		*e = entry{rv: rv, n: n, kind: kind}
	} else {
		h.index[k] = h.newEntry(entry{rv: rv, n: n, kind: kind})
	}
	return 0, false
}

// pushTomb remembers that k was deleted at n, forgetting the oldest
// tombstone when maxTombstones are kept.
func (h *heldVersions) pushTomb(k objectKey, n uint64) {
	if h.ntombs == h.maxTombstones {
		old := h.tombs[h.head]
		if e, ok := h.index[old.k]; ok && e.kind == gone && e.n == old.n && old.k != k {
			h.dropEntry(old.k, e)
		}
		h.tombs[h.head] = heldEntry{k, n}
		h.head = (h.head + 1) % h.maxTombstones
		return
	}
	if len(h.tombs) < h.maxTombstones {
		h.tombs = append(h.tombs, heldEntry{k, n})
	} else {
		h.tombs[(h.head+h.ntombs)%h.maxTombstones] = heldEntry{k, n}
	}
	h.ntombs++
}

// buildIndex merges base and recent (later versions win) into index.
func (h *heldVersions) buildIndex() {
	ix := make(map[objectKey]*entry, h.nbase+len(h.recent))
	for _, b := range h.base {
		for _, e := range b {
			if p, ok := ix[e.k]; ok {
				p.n = e.n
			} else {
				ix[e.k] = h.newEntry(entry{n: e.n})
			}
		}
	}
	for k, p := range h.recent {
		if q, ok := ix[k]; ok {
			q.n = p.n
			*p = entry{}
			h.free = append(h.free, p)
		} else {
			ix[k] = p
		}
	}
	h.index, h.base, h.nbase, h.recent = ix, nil, 0, nil
	h.live = len(ix)
}
