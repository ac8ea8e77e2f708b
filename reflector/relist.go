package reflector

import (
	"context"
	"errors"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// A list or streaming list fills the store object by object, as its objects
// arrive (snapshot), where the store allows it with the events a Replace
// would produce (objectStore); every other store gets one Replace.

// objectStore returns store as a cache.Store that a list may fill object by
// object: Add or Update for each object as it arrives, then Delete for
// each object the list no longer holds. A cache.Store or cache.Indexer
// (and a type that embeds one) has no events: a Replace and those calls
// leave the same contents. A queue (cache.Queue: DeltaFIFO, RealFIFO,
// FIFO) turns a Replace into Replaced or Sync deltas and
// DeletedFinalStateUnknown tombstones that carry the last known object
// (RealFIFO queues the deletions first); calls object by object would give
// its consumer other deltas, so a queue gets one Replace. So does a
// cache.UndeltaStore, which pushes its whole contents on every call.
func objectStore(store cache.ReflectorStore) (cache.Store, bool) {
	switch store.(type) {
	case cache.Queue, *cache.UndeltaStore:
		return nil, false
	}
	s, ok := store.(cache.Store)
	return s, ok
}

// storeBookmarker is client-go's cache.Store since v0.36: Bookmark sets
// LastStoreSyncResourceVersion, which its Add, Update and Delete also set
// from each object written. A list that fills the store object by object
// ends with Bookmark(the list's resourceVersion).
type storeBookmarker interface{ Bookmark(rv string) }

// listStore is a store that is told more than a cache.Store about the
// lists that fill it (steadywatch's own informer, internal/informer):
// DeleteAbsent instead of Delete for an object a complete list no longer
// holds (its handlers get a cache.DeletedFinalStateUnknown, as client-go's
// informer gives a Replace's deletions), and ListApplied(rv) once a list
// is applied whole and the reflector reports it synced.
type listStore interface {
	DeleteAbsent(obj any) error
	ListApplied(rv string)
}

// unchangedStore is a listStore that can keep an object a list holds at the
// version it already holds (steadywatch's own informer): Unchanged returns
// the stored object when namespace/name is held at resourceVersion rv, and
// KeepUnchanged hands its handlers what an Update with an object of the same
// version would, without writing it. A list then need not decode the
// objects that did not change (knobs.Lister.Unchanged).
type unchangedStore interface {
	Unchanged(namespace, name, rv string) (any, bool)
	KeepUnchanged(obj any)
}

// snapshot is one list or streaming list being applied to the store.
type snapshot struct {
	r *Reflector
	// whole collects the objects for one Replace when the store is not an
	// objectStore (index: their positions by key; a later one replaces an
	// earlier one of the same key); nil otherwise.
	whole []any
	index map[string]int
	// relist is the pipeline's view: each object's verdict, and the
	// objects the list no longer holds at its end.
	relist *watchpipe.Relist
	// held is the resourceVersion the store fully reflected before the
	// list (the reflector's LastSyncResourceVersion).
	held string
	// keep is the store as an unchangedStore when it is one (and relist
	// is set); nil otherwise.
	keep unchangedStore
	// applied counts the objects written to the store; listed, once
	// finished, the objects of the list; unchanged, the objects the list
	// held at the version the store holds, kept without being decoded.
	applied, listed, unchanged int
}

// begin starts a list or streaming list of about size objects.
func (r *Reflector) begin(size int) *snapshot {
	s := &snapshot{r: r, held: r.LastSyncResourceVersion()}
	if r.objects == nil {
		s.whole, s.index = make([]any, 0, size), map[string]int{}
		return s
	}
	s.relist = r.pipe.Relist(size)
	s.keep, _ = r.objects.(unchangedStore)
	return s
}

// add applies one object of the list: to the store at once (objectStore),
// or kept for the Replace at the end. An object older than the version the
// store holds for it, or than its deletion, is not applied: the list is
// older than the store (*StaleListError) and is abandoned.
func (s *snapshot) add(ctx context.Context, obj runtime.Object) error {
	r := s.r
	if !r.typeOK(ctx, obj) {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if s.relist == nil {
		k := cache.NewObjectName(m.GetNamespace(), m.GetName()).String()
		if i, dup := s.index[k]; dup {
			s.whole[i] = obj
		} else {
			s.index[k] = len(s.whole)
			s.whole = append(s.whole, obj)
		}
		return nil
	}
	live, err := s.item(ctx, m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	if err != nil {
		return err
	}
	if live {
		err = r.objects.Update(obj)
	} else {
		err = r.objects.Add(obj)
	}
	if err != nil {
		return err
	}
	s.applied++
	return nil
}

// item decides one object of the list (watchpipe.Relist.Item): a
// *StaleListError when it is older than the version the store holds for
// it, or than its deletion; else it is recorded as the list's, and live
// reports whether the store held it.
func (s *snapshot) item(ctx context.Context, namespace, name, rv string) (live bool, err error) {
	v, held, live := s.relist.Item(namespace, name, rv)
	if v == watchpipe.EndStale {
		klog.FromContext(ctx).Info("A list holds an object older than the store's: abandoning the list",
			"object", cache.NewObjectName(namespace, name), "listed", rv, "held", held)
		return false, &StaleListError{Required: strconv.FormatUint(held, 10), Served: rv}
	}
	return live, nil
}

// keepUnchanged is asked about each object of a list before it is decoded
// (knobs.Lister.Unchanged, through the lister's decode.Each.Known): when
// the store holds namespace/name at resourceVersion rv it is the same
// object, so it is decided as add decides a decoded one and then kept as
// the store holds it (unchangedStore.KeepUnchanged), and true tells the
// decoder not to decode it. An object at any other version, and every
// object of a store that cannot keep one, is decoded and added.
func (s *snapshot) keepUnchanged(ctx context.Context, namespace, name, rv string) (bool, error) {
	if s.keep == nil {
		return false, nil
	}
	obj, ok := s.keep.Unchanged(namespace, name, rv)
	if !ok {
		return false, nil
	}
	if err := s.kept(ctx, namespace, name, rv, obj); err != nil {
		return false, err
	}
	return true, nil
}

// kept decides obj, which the store holds as namespace/name at
// resourceVersion rv, as add decides a decoded object, then keeps it as
// the store holds it (unchangedStore.KeepUnchanged).
func (s *snapshot) kept(ctx context.Context, namespace, name, rv string, obj any) error {
	if _, err := s.item(ctx, namespace, name, rv); err != nil {
		return err
	}
	s.keep.KeepUnchanged(obj)
	s.unchanged++
	return nil
}

// relisting is the list in progress in listInto, for unchanged.
type relisting struct {
	ctx  context.Context
	snap *snapshot
}

// unchanged is the reflector's lister's knobs.Lister.Unchanged: the list in
// progress keeps an object its store holds at the listed version
// (snapshot.keepUnchanged); outside a list, or for another store, nothing
// is kept.
func (r *Reflector) unchanged(namespace, name, rv string) (bool, error) {
	l := r.relisting.Load()
	if l == nil {
		return false, nil
	}
	kept, err := l.snap.keepUnchanged(l.ctx, namespace, name, rv)
	if kept {
		r.unchangedKept.Add(1)
	}
	return kept, err
}

// restart discards what the list delivered: a new snapshot follows (the
// lister restarted the list). Objects already applied stay in the store
// until the end of the new snapshot deletes those it does not hold.
func (s *snapshot) restart() {
	if s.relist == nil {
		s.whole, s.index = s.whole[:0], map[string]int{}
		return
	}
	s.relist.Restart()
}

// abandon ends a list that failed after some of its objects were applied:
// the store claims no version it does not fully hold. The reflector's
// LastSyncResourceVersion stays where it was, the pipeline holds what was
// applied, and every failure of a list leads to another list, whose end
// deletes what neither holds (the next relist completes the reconciliation).
func (s *snapshot) abandon() {
	if s.relist == nil || s.applied == 0 {
		return
	}
	// client-go's cache.Store set its LastStoreSyncResourceVersion from
	// each object written: back to the version the store fully reflects
	// ("" before the first sync).
	if b, ok := s.r.objects.(storeBookmarker); ok {
		b.Bookmark(s.held)
	}
}

// len is the number of objects the list delivered.
func (s *snapshot) len() int {
	switch {
	case s.relist != nil:
		return s.relist.Len()
	case s.whole != nil:
		return len(s.whole)
	}
	return s.listed
}

// finish ends the list served at rv: a queue gets its Replace; an
// objectStore loses the objects the list no longer holds. Then the store is
// reported synced at rv, and the pipeline holds exactly the list's objects.
func (s *snapshot) finish(ctx context.Context, rv string) error {
	r := s.r
	var held *watchpipe.Loader
	if s.relist == nil {
		held = r.pipe.Load(len(s.whole))
		for _, it := range s.whole {
			if m, err := meta.Accessor(it); err == nil {
				held.Add(m.GetNamespace(), m.GetName(), m.GetResourceVersion())
			}
		}
		if err := r.store.Replace(s.whole, rv); err != nil {
			return err
		}
		s.listed, s.whole, s.index = len(s.whole), nil, nil
	} else {
		if err := s.deleteAbsent(ctx, rv); err != nil {
			s.abandon()
			return err
		}
		if b, ok := r.objects.(storeBookmarker); ok && rv != "" {
			b.Bookmark(rv)
		}
		held = s.relist.Loader()
		if s.unchanged > 0 {
			klog.FromContext(ctx).V(4).Info("Kept the listed objects the store held at the same resourceVersion without decoding them", "count", s.unchanged)
		}
	}
	r.pipe.Replace(held, rv)
	r.items = max(r.pipe.Live(), 0)
	r.quiet = true
	// The resourceVersion first: HasSynced never shows true before it.
	r.setRV(klog.FromContext(ctx), rv, true, r.o.Clock.Now())
	r.mu.Lock()
	r.status.Synced = true
	r.status.Items = r.items
	r.mu.Unlock()
	r.o.Metrics.Items(r.name, r.items)
	if ls, ok := r.objects.(listStore); ok {
		ls.ListApplied(rv)
	}
	return nil
}

// deleteAbsent deletes from the store every object it holds that the list
// served at rv does not hold (by namespace and name), passing the object the
// store holds to Delete. The store's own contents are read, not the
// pipeline's: a watch from "" or "0" starts the pipeline's per-object state
// afresh while the store keeps what it held. An object held at a version
// newer than rv (applied by a list abandoned since, or by a watch the
// reflector's resourceVersion did not follow) may have been created after
// rv: the list is older than the store (*StaleListError) and deletes
// nothing.
func (s *snapshot) deleteAbsent(ctx context.Context, rv string) error {
	var absent []any
	for _, obj := range s.r.objects.List() {
		m, err := meta.Accessor(obj)
		if err == nil && s.relist.Has(m.GetNamespace(), m.GetName()) {
			continue
		}
		if err == nil && isOlder(rv, m.GetResourceVersion()) {
			klog.FromContext(ctx).Info("A list lacks an object the store holds at a newer version: abandoning the list",
				"object", cache.NewObjectName(m.GetNamespace(), m.GetName()), "listed", rv, "held", m.GetResourceVersion())
			return &StaleListError{Required: m.GetResourceVersion(), Served: rv}
		}
		absent = append(absent, obj)
	}
	var errs []error
	deleted := 0
	del := s.r.objects.Delete
	if ls, ok := s.r.objects.(listStore); ok {
		del = ls.DeleteAbsent
	}
	for _, obj := range absent {
		if err := del(obj); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted++
		s.applied++
	}
	if deleted > 0 {
		klog.FromContext(ctx).V(4).Info("Deleted the objects the new list no longer holds", "count", deleted)
	}
	return errors.Join(errs...)
}
