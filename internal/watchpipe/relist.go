package watchpipe

import "k8s.io/apimachinery/pkg/watch"

// Relist is one list (or streaming list) whose objects an adopter applies
// to its store one by one, as they arrive, instead of collecting them for
// one Replace: the store never holds the old contents and the whole new
// list at once. It compares each object with what the pipeline holds, so
// that no object goes back in time, records it as delivered, and builds
// the list's own per-object state on the side; at the list's end the
// adopter deletes what Has does not report and installs that state with
// Pipeline.Replace(r.Loader(), rv), which leaves the pipeline exactly as a
// Replace of the whole list would have.
//
// A Relist needs Config.Indexed (reflector.New's pipeline): Has reads the
// list's index. It is used from one goroutine, with no watch of the same
// Pipeline open.
type Relist struct {
	p    *Pipeline
	next *Loader
}

// Relist begins a list of about size objects applied object by object.
func (p *Pipeline) Relist(size int) *Relist {
	p.lock()
	if p.held == nil {
		// Nothing delivered yet (the first list), or opaque versions: an
		// empty state, which records what this list delivers.
		p.held = newHeldVersions(p.cfg.Indexed, p.cfg.Tombstones, size)
	}
	p.unlock()
	return &Relist{p: p, next: p.Load(size)}
}

// Item decides one object of the list: Deliver, or EndStale when it is
// older than the version already delivered for it, or not newer than its
// deletion (held is that version): applying it would take the object back
// in time. A delivered object is recorded as delivered and in the list's
// state. live reports whether the object was held (live) before it: the
// adopter updates it rather than adding it.
func (r *Relist) Item(namespace, name, rv string) (v Verdict, held uint64, live bool) {
	n, ok := ParseRV(rv)
	k := objectKey{namespace, name}
	p := r.p
	p.lock()
	if h := p.held; h != nil {
		if h.index != nil {
			e, found := h.index[k]
			live = found && e.kind != gone
		}
		t := watch.Added
		if live {
			t = watch.Modified
		}
		if held, stale := h.event(k, rv, n, ok, t, true); stale {
			p.unlock()
			return EndStale, held, live
		}
		p.heldNum = p.heldNum || ok
	}
	p.unlock()
	r.next.Add(namespace, name, rv)
	return Deliver, 0, live
}

// Restart begins the list's state afresh: the lister restarted the list
// (a new snapshot follows). What was delivered stays held until the end
// decides (Has).
func (r *Relist) Restart() { r.next = r.p.Load(0) }

// Has reports whether the list delivered the object namespace/name (since
// Restart): what the adopter's store holds and the list does not is what it
// deletes at the list's end.
func (r *Relist) Has(namespace, name string) bool {
	e, ok := r.next.h.index[objectKey{namespace, name}]
	return ok && e.kind != gone
}

// Len is the number of objects the list delivered (since Restart).
func (r *Relist) Len() int { return r.next.h.live }

// Loader is the list's state, for Pipeline.Replace at its end.
func (r *Relist) Loader() *Loader { return r.next }
