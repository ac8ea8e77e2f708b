package lister

import "k8s.io/apimachinery/pkg/watch"

// objectKey is an object's namespace and name; built from the strings the
// object already holds, so a lookup allocates nothing.
type objectKey struct{ namespace, name string }

// heldVersions is the resourceVersion last delivered per object since the
// last list (or streaming list): what the drop-in ListerWatcher compares a
// watch event with, so that an event older than the object already delivered
// is never delivered (docs/bad-server-data.md). ListerWatcher.mu guards it.
//
// The initial state (a list's items or a streaming list's initial events) is
// kept in plain blocks, base, not indexed: appending costs a fraction of a
// map insert and never copies (blocks grow from 64 to 4096 entries), and
// most watches never need the index. An event after it can only be older
// than its object's base version if its resourceVersion is at most floor
// (the newest version in base); such an event, or a DELETED event, builds
// the index once (base and the later events in recent merged into one map)
// and from then on every event uses that map. Until then the versions of
// later events live in recent; at worst (every object updated, none
// deleted) base and recent together hold about twice what the one map
// would.
type heldVersions struct {
	base  [][]heldEntry
	nbase int // entries in base
	floor uint64
	// recent: versions delivered after base, while index is not built.
	recent map[objectKey]uint64
	// index: base and recent merged; nil until an event needs it.
	index map[objectKey]uint64
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

// newHeldVersions starts empty.
func newHeldVersions() *heldVersions { return &heldVersions{} }

// size is how many versions are held (an object may count twice before the
// index is built).
func (h *heldVersions) size() int {
	return h.nbase + len(h.recent) + len(h.index)
}

// initial records the version of one object of the initial state.
func (h *heldVersions) initial(k objectKey, n uint64) {
	if h.index != nil || h.recent != nil {
		// Not expected once events arrived; kept correct all the same.
		h.event(k, n, watch.Added, false)
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

// event records that an event of type t for k at n is delivered, or, when
// compare is set and n is older than what was last delivered for k, reports
// it stale with the version held (and records nothing).
func (h *heldVersions) event(k objectKey, n uint64, t watch.EventType, compare bool) (held uint64, stale bool) {
	if h.index == nil {
		if r, ok := h.recent[k]; ok && t != watch.Deleted {
			if compare && n < r {
				return r, true
			}
			h.recent[k] = n
			return 0, false
		} else if !ok && t != watch.Deleted && (n > h.floor || h.nbase == 0) {
			// Newer than every version of base: it cannot be older than
			// k's, if base has k at all.
			if h.recent == nil {
				h.recent = map[objectKey]uint64{}
			}
			h.recent[k] = n
			return 0, false
		}
		h.buildIndex()
	}
	if hv, ok := h.index[k]; ok && compare && n < hv {
		return hv, true
	}
	if t == watch.Deleted {
		delete(h.index, k)
	} else {
		h.index[k] = n
	}
	return 0, false
}

// buildIndex merges base and recent (later versions win) into index.
func (h *heldVersions) buildIndex() {
	ix := make(map[objectKey]uint64, h.nbase+len(h.recent))
	for _, b := range h.base {
		for _, e := range b {
			ix[e.k] = e.n
		}
	}
	for k, n := range h.recent {
		ix[k] = n
	}
	h.index, h.base, h.nbase, h.recent = ix, nil, 0, nil
}
