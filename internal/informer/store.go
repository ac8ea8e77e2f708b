package informer

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"

	"k8s.io/client-go/tools/cache"
)

// store is the cache.Store the Source fills: each write updates the
// informer's indexer and hands the handlers the notification client-go's
// informer would derive from the same change (its processDeltas): an Add
// or Update of an object the indexer holds is an update, of one it does
// not hold an add; a Delete is a delete with the deleted object;
// DeleteAbsent (an object a complete list no longer holds) a delete with a
// cache.DeletedFinalStateUnknown tombstone carrying the stored object, as
// client-go gives a Replace's deletions. Reads go to the indexer.
//
// Every write holds the informer's blockDeltas, so that a handler added
// while it runs sees each change once.
type store struct {
	inf *Informer
	// transform is the informer's SetTransform, fixed when Run starts.
	transform cache.TransformFunc
	// listed: a list was applied whole (ListApplied): adds are no longer
	// part of the initial list.
	listed bool
}

var _ cache.Store = (*store)(nil)

func (s *store) transformed(obj any) (any, error) {
	if s.transform == nil {
		return obj, nil
	}
	if _, tomb := obj.(cache.DeletedFinalStateUnknown); tomb {
		return obj, nil
	}
	return s.transform(obj)
}

// Add implements cache.Store.
func (s *store) Add(obj any) error { return s.upsert(obj) }

// Update implements cache.Store.
func (s *store) Update(obj any) error { return s.upsert(obj) }

func (s *store) upsert(obj any) error {
	obj, err := s.transformed(obj)
	if err != nil {
		return err
	}
	inf := s.inf
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	if old, exists, err := inf.indexer.Get(obj); err == nil && exists {
		if err := inf.indexer.Update(obj); err != nil {
			return err
		}
		inf.onUpdate(old, obj)
		return nil
	}
	if err := inf.indexer.Add(obj); err != nil {
		return err
	}
	inf.onAdd(obj, !s.listed)
	return nil
}

// Delete implements cache.Store: a watch's deletion, handed to the
// handlers with the object the event carries.
func (s *store) Delete(obj any) error {
	obj, err := s.transformed(obj)
	if err != nil {
		return err
	}
	inf := s.inf
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	if err := inf.indexer.Delete(obj); err != nil {
		return err
	}
	inf.onDelete(obj)
	return nil
}

// DeleteAbsent deletes obj, held by the store, because a complete list no
// longer holds it: the handlers get a cache.DeletedFinalStateUnknown
// carrying it (the deletion itself was not seen).
func (s *store) DeleteAbsent(obj any) error {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	inf := s.inf
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	if err := inf.indexer.Delete(obj); err != nil {
		return err
	}
	inf.onDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
	return nil
}

// ListApplied says a list was applied whole: the first time, the informer
// has synced.
func (s *store) ListApplied(string) {
	inf := s.inf
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	if !s.listed {
		s.listed = true
		close(inf.synced)
	}
}

// Unchanged returns the object the store holds as namespace/name when it
// is at resourceVersion rv, which names one write in etcd: a list that
// holds namespace/name at rv holds this very object, and need not decode it
// again (KeepUnchanged).
func (s *store) Unchanged(namespace, name, rv string) (any, bool) {
	if rv == "" {
		return nil, false
	}
	obj, ok, err := s.inf.indexer.GetByKey(cache.NewObjectName(namespace, name).String())
	if err != nil || !ok {
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetResourceVersion() != rv || m.GetNamespace() != namespace || m.GetName() != name {
		return nil, false
	}
	return obj, true
}

// KeepUnchanged says a list holds obj (returned by Unchanged) unchanged:
// the handlers get an update from obj to itself, which goes only to those
// whose resync is due (onUpdate), as client-go's informer hands them a
// relisted object of an unchanged resourceVersion. The indexer keeps obj
// as it is: the transform ran on it when it was stored, and client-go runs
// it once per object (cache.TransformFunc need not be idempotent).
func (s *store) KeepUnchanged(obj any) {
	inf := s.inf
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	inf.onUpdate(obj, obj)
}

// resync hands every stored object to the handlers whose resync is due,
// as an update from the object to itself.
func (s *store) resync() {
	inf := s.inf
	inf.blockDeltas.Lock()
	defer inf.blockDeltas.Unlock()
	for _, obj := range inf.indexer.List() {
		inf.onUpdate(obj, obj)
	}
}

// Resync implements cache.Store: as a periodic resync.
func (s *store) Resync() error {
	s.resync()
	return nil
}

// Replace implements cache.Store, as a list applied object by object
// (the Source never calls it): every object added or updated, then every
// stored object absent from list deleted with a tombstone.
func (s *store) Replace(list []any, rv string) error {
	keep := make(map[string]bool, len(list))
	var errs []error
	for _, obj := range list {
		if err := s.upsert(obj); err != nil {
			errs = append(errs, err)
			continue
		}
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			keep[k] = true
		}
	}
	for _, obj := range s.inf.indexer.List() {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil && !keep[k] {
			errs = append(errs, s.DeleteAbsent(obj))
		}
	}
	s.Bookmark(rv)
	s.ListApplied(rv)
	return errors.Join(errs...)
}

// List implements cache.Store.
func (s *store) List() []any { return s.inf.indexer.List() }

// ListKeys implements cache.Store.
func (s *store) ListKeys() []string { return s.inf.indexer.ListKeys() }

// Get implements cache.Store.
func (s *store) Get(obj any) (any, bool, error) { return s.inf.indexer.Get(obj) }

// GetByKey implements cache.Store.
func (s *store) GetByKey(key string) (any, bool, error) { return s.inf.indexer.GetByKey(key) }

// LastStoreSyncResourceVersion implements cache.Store.
func (s *store) LastStoreSyncResourceVersion() string {
	return s.inf.indexer.LastStoreSyncResourceVersion()
}

// Bookmark implements cache.Store.
func (s *store) Bookmark(rv string) { s.inf.indexer.Bookmark(rv) }
