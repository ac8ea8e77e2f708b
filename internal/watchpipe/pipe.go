package watchpipe

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// DefaultTombstones is Config.Tombstones' default: how many deletions a
// Pipeline remembers (with their resourceVersions) between lists.
const DefaultTombstones = 4096

// Config configures a Pipeline. The zero value is the drop-in
// ListerWatcher's: lazy index, DefaultTombstones, no filter.
type Config struct {
	// Shared: the Pipeline is used from several goroutines (the drop-in
	// ListerWatcher lists and watches on client-go's goroutines, and a
	// stopped watch may still drain); its state is then guarded by a mutex.
	Shared bool
	// Indexed builds the per-object index from the start, so Live and
	// EachLive are exact (reflector.New needs both).
	Indexed bool
	// Tombstones bounds the deletions remembered; 0 means DefaultTombstones,
	// negative remembers none.
	Tombstones int
	// Filter, if set, is the client-side stage every object event passes.
	Filter Filter
}

// Verdict is what the pipeline decides for one event; the adopter acts on it.
type Verdict uint8

const (
	// Deliver: hand the event over as it is.
	Deliver Verdict = iota
	// DeliverAsDeleted: the object left the filtered set (Filter); hand the
	// event over as a DELETED event for the same object.
	DeliverAsDeleted
	// Drop: do not hand it over; the watch goes on (a bookmark whose
	// resourceVersion does not parse on a server whose versions do; an
	// ADDED event the filter does not keep).
	Drop
	// EndStale: the event is older than what was already delivered (for its
	// object, its deletion, or the watch's floor): do not hand it over, end
	// the watch and relist NotOlderThan what is held.
	EndStale
	// EndUnparsable: an object event whose resourceVersion does not parse on
	// a server whose versions do: do not hand it over (it would become the
	// resume point and fail every watch from it), end the watch and relist.
	EndUnparsable
	// AbandonStream: the initial-events-end bookmark of a streaming list
	// carries a resourceVersion that does not parse on a server whose
	// versions do: the streaming list is abandoned and a list follows.
	AbandonStream
)

var verdictNames = [...]string{"deliver", "deliver-as-deleted", "drop", "end-stale", "end-unparsable", "abandon-stream"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Pipeline is the one watch pipeline of the SDK, shared by the drop-in
// ListerWatcher and reflector.New: every watch event of either passes
// through a Watch of it, which decides (Verdict) whether it is delivered.
// It holds what both need across watches: the resourceVersion last
// delivered per object and the recent deletions (heldVersions), whether
// this server's versions parse as numbers, and the newest resourceVersion
// delivered. A list replaces the per-object state (Replace).
//
// The guarantees, for events of every type and every object, held or not:
//   - never older than the object already delivered, nor at or below its
//     deletion (kubernetes/kubernetes#73845: a watch cache re-delivering
//     history; linkerd/linkerd#1680: a proxy mixing streams);
//   - never at or below the resourceVersion the watch started from, nor
//     older than the newest event the watch delivered (a watch from a
//     resourceVersion sends only later changes, in order: Kubernetes API
//     Concepts, "Resource versions");
//   - never a resourceVersion that does not parse on a server whose
//     versions do.
//
// Only where resourceVersions parse as numbers (etcd-backed servers) is
// anything compared; opaque versions (some aggregated APIs) are delivered as
// they come.
type Pipeline struct {
	cfg Config
	mu  sync.Mutex // held when cfg.Shared

	held *heldVersions // nil: not compared (versions did not all parse)
	gen  uint64        // counts Replace calls: a watch of an older list cannot write into a newer one

	newest    string // newest resourceVersion delivered (lists, events, bookmarks)
	newestN   uint64
	newestNum bool
	// heldNum: a version of the per-object state parses (the state of a
	// streaming list or of a watch from "" or "0" before any other
	// resourceVersion was delivered).
	heldNum bool
}

// New returns an empty Pipeline.
func New(cfg Config) *Pipeline {
	if cfg.Tombstones == 0 {
		cfg.Tombstones = DefaultTombstones
	}
	return &Pipeline{cfg: cfg}
}

func (p *Pipeline) lock() {
	if p.cfg.Shared {
		p.mu.Lock()
	}
}

func (p *Pipeline) unlock() {
	if p.cfg.Shared {
		p.mu.Unlock()
	}
}

// ParseRV parses a resourceVersion as the pipeline compares it: a decimal
// number below 2^63 (etcd revisions are int64).
func ParseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil && n < 1<<63
}

// Loader fills the state a list replaces; see Pipeline.Replace.
type Loader struct {
	h      *heldVersions
	opaque bool // a version did not parse
	num    bool // a version parsed
}

// Add records one item of the list.
func (l *Loader) Add(namespace, name, rv string) {
	n, ok := ParseRV(rv)
	l.num = l.num || ok
	l.opaque = l.opaque || !ok
	if !ok && !l.h.isIndexed() {
		return
	}
	l.h.initial(objectKey{namespace, name}, rv, n, ok)
}

func (h *heldVersions) isIndexed() bool { return h.index != nil }

// Load starts a new per-object state for a list of about size items.
func (p *Pipeline) Load(size int) *Loader {
	return &Loader{h: newHeldVersions(p.cfg.Indexed, p.cfg.Tombstones, size)}
}

// Replace installs the state l loaded, from a list served at rv (nil l: an
// empty state, which the initial events of a streaming list or of a watch
// from "" or "0" fill). It returns the generation a Watch that follows
// presents. rv, if set, is recorded as delivered.
func (p *Pipeline) Replace(l *Loader, rv string) uint64 {
	var h *heldVersions
	num := false
	switch {
	case l == nil:
		h = newHeldVersions(p.cfg.Indexed, p.cfg.Tombstones, 0)
	case !l.opaque || l.h.isIndexed():
		h, num = l.h, l.num
	}
	p.lock()
	p.held, p.heldNum = h, num
	p.gen++
	gen := p.gen
	p.advanceLocked(rv)
	p.unlock()
	return gen
}

// Generation is the generation of the current per-object state.
func (p *Pipeline) Generation() uint64 {
	p.lock()
	defer p.unlock()
	return p.gen
}

// Advance records rv as delivered when it is newer than the newest one.
func (p *Pipeline) Advance(rv string) {
	p.lock()
	p.advanceLocked(rv)
	p.unlock()
}

func (p *Pipeline) advanceLocked(rv string) {
	n, ok := ParseRV(rv)
	p.advanceParsedLocked(rv, n, ok)
}

// advanceParsedLocked is advanceLocked with rv parsed (ok: it is n).
func (p *Pipeline) advanceParsedLocked(rv string, n uint64, ok bool) {
	if rv == "" {
		return
	}
	if p.newest == "" || (ok && p.newestNum && n > p.newestN) {
		// The first, or newer. Versions that do not compare (opaque ones)
		// never replace the first.
		p.newest, p.newestN, p.newestNum = rv, n, ok
	}
}

// Newest is the newest resourceVersion delivered ("" before any).
func (p *Pipeline) Newest() string {
	p.lock()
	defer p.unlock()
	return p.newest
}

// Live is the number of objects the state holds (Config.Indexed; -1
// otherwise, or while versions do not parse).
func (p *Pipeline) Live() int {
	p.lock()
	defer p.unlock()
	if p.held == nil || !p.held.isIndexed() {
		return -1
	}
	return p.held.live
}

// EachLive calls fn for every object held, with the resourceVersion last
// delivered for it (Config.Indexed).
func (p *Pipeline) EachLive(fn func(namespace, name, rv string)) {
	p.lock()
	defer p.unlock()
	if p.held == nil || !p.held.isIndexed() {
		return
	}
	for k, e := range p.held.index {
		if e.kind != gone {
			fn(k.namespace, k.name, e.rv)
		}
	}
}

// versionsParseLocked reports whether this server's versions parse as
// numbers: an object's version is held as a number, or the newest version
// delivered parses.
func (p *Pipeline) versionsParseLocked() bool {
	return p.newestNum || p.heldNum
}

// phase is the state of a Watch.
type phase uint8

const (
	// initialEvents: the synthetic ADDED events of a watch from "" or "0",
	// or the initial events of a streaming list: the state the watch starts
	// from, in no order. They are recorded, not compared; their versions
	// are not a resume point.
	initialEvents phase = iota
	// following: events after the snapshot: each is compared.
	following
)

// Watch is one watch's passage through the pipeline: a small state machine
// (initialEvents, then following). It is used from one goroutine.
type Watch struct {
	p     *Pipeline
	gen   uint64
	phase phase
	// min: an object event must be at least this (the snapshot + 1, then
	// the newest event delivered, or a bookmark + 1); 0 while nothing is
	// known. floor is the resourceVersion that set it, for the logs.
	min, floor uint64
	// initialMax: the newest version among the initial events; the floor
	// once they end.
	initialMax uint64
	// lastN, lastOK: the last event's resourceVersion, parsed (LastParsed).
	lastN  uint64
	lastOK bool
}

// LastParsed is the resourceVersion of the last event passed to Event or
// Bookmark, as parsed there (ok: it parses), so that an adopter does not
// parse it again.
func (w *Watch) LastParsed() (n uint64, ok bool) { return w.lastN, w.lastOK }

// Watch begins a watch sent with resourceVersion from. From "" or "0" (the
// synthetic ADDED events of the current state come first) the per-object
// state starts empty; streaming tells that the watch is a streaming list
// (sendInitialEvents), whose initial events fill an empty state until
// EndInitial. Otherwise the watch follows the current state, and no event at
// or below from is delivered.
func (p *Pipeline) Watch(from string, streaming bool) *Watch {
	w := &Watch{p: p}
	if streaming || from == "" || from == "0" {
		// Of a watch from "" or "0", the backlog ends at the first event
		// that is not an ADDED; of a streaming list, at EndInitial.
		w.gen = p.Replace(nil, "")
		w.phase = initialEvents
		return w
	}
	w.gen = p.Generation()
	w.phase = following
	if n, ok := ParseRV(from); ok {
		w.raise(n, n+1)
	}
	return w
}

// Following reports whether the initial events are over: the watch's
// resourceVersions are a resume point.
func (w *Watch) Following() bool { return w.phase == following }

// follow ends the initial events: from now on every event is compared, and
// none may be older than the newest initial event.
func (w *Watch) follow() {
	if w.phase == initialEvents {
		w.phase = following
		w.raise(w.initialMax, w.initialMax)
	}
}

// raise sets the floor to min, set by the resourceVersion rv, unless it is
// higher already.
func (w *Watch) raise(rv, min uint64) {
	if min > w.min {
		w.min, w.floor = min, rv
	}
}

// Bookmark decides a bookmark at rv: Drop when rv does not parse on a server
// whose versions do (AbandonStream for the initial-events-end bookmark of
// a streaming list), Deliver otherwise. A delivered bookmark ends the
// initial events of a watch from "" or "0" and raises the floor.
func (w *Watch) Bookmark(rv string, initialEventsEnd bool) Verdict {
	n, ok := ParseRV(rv)
	w.lastN, w.lastOK = n, ok
	p := w.p
	p.lock()
	bad := !ok && p.versionsParseLocked()
	if !bad {
		p.advanceParsedLocked(rv, n, ok)
	}
	p.unlock()
	switch {
	case bad && initialEventsEnd:
		return AbandonStream
	case bad:
		return Drop
	}
	w.follow()
	if ok {
		w.raise(n, n+1)
	}
	return Deliver
}

// Event decides one object event (ADDED, MODIFIED or DELETED) for m and
// records it when it is delivered. held is the version the event was older
// than (EndStale). It allocates nothing.
func (w *Watch) Event(t watch.EventType, m metav1.Object) (v Verdict, held uint64) {
	if f := w.p.cfg.Filter; f != nil { // the filter stage, when there is one
		switch v = FilterEvent(f, t, m); v {
		case Drop:
			return Drop, 0
		case DeliverAsDeleted:
			t = watch.Deleted
		}
	}
	rv := m.GetResourceVersion()
	n, ok := ParseRV(rv)
	w.lastN, w.lastOK = n, ok
	if t != watch.Added {
		w.follow() // the backlog of a watch from "" or "0" ended
	}
	compare := w.phase == following
	if compare && ok && n < w.min {
		return EndStale, w.floor
	}
	p := w.p
	p.lock()
	if !ok && rv != "" && p.versionsParseLocked() {
		p.unlock()
		return EndUnparsable, 0
	}
	if p.held != nil && p.gen == w.gen {
		if !ok && !p.held.isIndexed() {
			p.held = nil // opaque versions: nothing is compared until the next list
		} else {
			k := objectKey{m.GetNamespace(), m.GetName()}
			if !compare {
				p.held.initial(k, rv, n, ok)
				p.heldNum = p.heldNum || ok
			} else if held, stale := p.held.event(k, rv, n, ok, t, true); stale {
				p.unlock()
				return EndStale, held
			}
		}
	}
	if compare {
		// The initial events (in no order) are not a resume point; their
		// end (a bookmark, or the first later event) advances it.
		p.advanceParsedLocked(rv, n, ok)
	}
	p.unlock()
	switch {
	case !ok:
	case compare:
		w.raise(n, n)
	default:
		w.initialMax = max(w.initialMax, n)
	}
	return v, 0
}

// Unreadable marks the list as one whose items could not all be read:
// nothing is compared until the next list.
func (l *Loader) Unreadable() { l.opaque = true }

// Unparsable reports whether rv does not parse while this server's
// versions do (a resourceVersion that must never become a resume point).
func (p *Pipeline) Unparsable(rv string) bool {
	if _, ok := ParseRV(rv); ok {
		return false
	}
	p.lock()
	defer p.unlock()
	return p.versionsParseLocked()
}
