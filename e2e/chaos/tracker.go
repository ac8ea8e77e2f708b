package chaos

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/vocab"
)

// Tracker records what one informer delivered, per object key: every
// resourceVersion observed (adds, updates, deletes, list replacements) in
// order, whether the key was ever seen and whether its deletion was seen.
// It flags a resourceVersion that goes back (vocab.CompareRV Older) for
// the same key: with unique names (the writer never reuses one) that is a
// regression, an informer showing an object older than it already showed.
// Safe for concurrent use.
type Tracker struct {
	mu          sync.Mutex
	last        map[string]string // key -> last observed RV
	seen        map[string]bool   // ever observed present
	deleted     map[string]bool   // deletion observed
	regressions []string
	events      map[string]int // add/update/delete/replace/replace-delete/tombstone
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{last: map[string]string{}, seen: map[string]bool{}, deleted: map[string]bool{}, events: map[string]int{}}
}

func keyRV(obj any) (key, rv string, tombstone bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		key, tombstone = d.Key, true
		obj = d.Obj
	}
	if m, err := meta.Accessor(obj); err == nil {
		if key == "" {
			key, _ = cache.MetaNamespaceKeyFunc(obj)
		}
		rv = m.GetResourceVersion()
	}
	return key, rv, tombstone
}

// observe records rv for key; the caller holds mu.
func (t *Tracker) observe(key, rv, what string) {
	if rv == "" {
		return
	}
	if prev, ok := t.last[key]; ok && vocab.CompareRV(rv, prev) == vocab.Older {
		t.regressions = append(t.regressions, fmt.Sprintf("%s: %s %s after %s", key, what, rv, prev))
		return // keep the newest as the reference
	}
	t.last[key] = rv
}

// Added records an add (or a list item).
func (t *Tracker) Added(obj any) { t.present(obj, "add") }

// Updated records an update.
func (t *Tracker) Updated(obj any) { t.present(obj, "update") }

func (t *Tracker) present(obj any, what string) {
	key, rv, _ := keyRV(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events[what]++
	t.seen[key] = true
	if t.deleted[key] {
		t.regressions = append(t.regressions, fmt.Sprintf("%s: %s at %s after its deletion was observed", key, what, rv))
	}
	t.observe(key, rv, what)
}

// Deleted records a deletion; obj may be a cache.DeletedFinalStateUnknown.
func (t *Tracker) Deleted(obj any) {
	key, rv, tomb := keyRV(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	if tomb {
		t.events["tombstone"]++
	} else {
		t.events["delete"]++
	}
	t.deleted[key] = true
	t.observe(key, rv, "delete")
}

// DeletedKey records the deletion of key without an object (a list
// replacement that no longer contains it).
func (t *Tracker) DeletedKey(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events["replace-delete"]++
	t.deleted[key] = true
}

// Replaced counts one list replacement.
func (t *Tracker) Replaced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events["replace"]++
}

// Regressions returns every resourceVersion regression seen, in order.
func (t *Tracker) Regressions() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.regressions...)
}

// Seen reports whether key was ever observed present.
func (t *Tracker) Seen(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[key]
}

// DeleteSeen reports whether key's deletion was observed.
func (t *Tracker) DeleteSeen(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deleted[key]
}

// Events returns the event counts by kind.
func (t *Tracker) Events() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.events))
	for k, v := range t.events {
		out[k] = v
	}
	return out
}

// DeleteReport classifies the keys the writer confirmed deleted: observed
// deleted; never observed at all (created and deleted between two states the
// informer saw, which no informer guarantees to show); or observed present
// but whose deletion was never observed (a lost delete).
type DeleteReport struct {
	Observed, NeverSeen int
	Missed              []string
}

// CheckDeletes classifies deletedKeys.
func (t *Tracker) CheckDeletes(deletedKeys []string) DeleteReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r DeleteReport
	for _, k := range deletedKeys {
		switch {
		case t.deleted[k]:
			r.Observed++
		case !t.seen[k]:
			r.NeverSeen++
		default:
			r.Missed = append(r.Missed, k)
		}
	}
	sort.Strings(r.Missed)
	return r
}

// TrackingStore is a cache.Store that reports every change the reflector
// makes to a Tracker, including the deletions a list replacement implies.
// It is how steadywatch's reflector (which fills a store, not handlers) is
// observed like an informer's event handlers.
type TrackingStore struct {
	cache.Store
	T *Tracker
}

// NewTrackingStore returns a keyed store reporting to t.
func NewTrackingStore(t *Tracker) *TrackingStore {
	return &TrackingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), T: t}
}

func (s *TrackingStore) Add(obj any) error    { s.T.Added(obj); return s.Store.Add(obj) }
func (s *TrackingStore) Update(obj any) error { s.T.Updated(obj); return s.Store.Update(obj) }
func (s *TrackingStore) Delete(obj any) error { s.T.Deleted(obj); return s.Store.Delete(obj) }

// Replace reports every item as present and every key it drops as deleted.
func (s *TrackingStore) Replace(items []any, rv string) error {
	keep := make(map[string]bool, len(items))
	for _, it := range items {
		if k, err := cache.MetaNamespaceKeyFunc(it); err == nil {
			keep[k] = true
		}
		s.T.Added(it)
	}
	for _, k := range s.Store.ListKeys() {
		if !keep[k] {
			s.T.DeletedKey(k)
		}
	}
	s.T.Replaced()
	return s.Store.Replace(items, rv)
}

// Handler returns informer event handlers reporting to t (the stock
// informer's side).
func Handler(t *Tracker) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.Added(obj) },
		UpdateFunc: func(_, obj any) { t.Updated(obj) },
		DeleteFunc: func(obj any) { t.Deleted(obj) },
	}
}
