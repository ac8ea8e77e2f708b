package sharding

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Handler wraps an informer's event handler so that an object leaving the
// range (its slice moved to another member, the cache relisted the new range
// and dropped it) is not reported as deleted: a controller told "deleted"
// for a live object it merely stopped owning would run its finalizer logic
// on it. Deletions of objects in the current range, and every add and
// update, pass unchanged. inRange is the range the cache now holds (a
// Membership's CacheSelector, or the Selector given to Wrap).
func Handler(h cache.ResourceEventHandler, inRange func() Selector) cache.ResourceEventHandler {
	return handler{h: h, inRange: inRange}
}

type handler struct {
	h       cache.ResourceEventHandler
	inRange func() Selector
}

func (w handler) OnAdd(obj any, isInInitialList bool) { w.h.OnAdd(obj, isInInitialList) }
func (w handler) OnUpdate(oldObj, newObj any)         { w.h.OnUpdate(oldObj, newObj) }

func (w handler) OnDelete(obj any) {
	o := obj
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if sel := w.inRange(); !sel.Empty() {
		if rob, ok := o.(runtime.Object); ok {
			if in, err := sel.Matches(rob); err == nil && !in {
				return // left the range: not deleted
			}
		}
	}
	w.h.OnDelete(obj)
}

// WaitCovers blocks until lw's last completed list holds every range of
// want (so the objects of newly assigned slices are in the cache), or ctx
// ends: a Membership's WaitReady.
func WaitCovers(ctx context.Context, lw *ListerWatcher, want Selector) error {
	for {
		// Before the first list the zero Selector is no range held.
		listed, next, ok := lw.listedState()
		if ok && covers(listed, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("shard: the cache does not hold %q yet (it holds %q): %w", want.String(), listed.String(), ctx.Err())
		case <-next:
		}
	}
}

// covers reports whether every hash want selects, have selects too.
func covers(have, want Selector) bool {
	if have.Empty() {
		return true
	}
	if want.Empty() {
		return false
	}
	if have.Field != want.Field && len(want.Ranges) > 0 {
		return false
	}
	for _, r := range want.Ranges {
		ok := false
		for _, h := range have.Ranges {
			if h.Start <= r.Start && (h.End == 0 || (r.End != 0 && r.End <= h.End)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
