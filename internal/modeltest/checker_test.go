package modeltest

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// Invariants (violation kinds).
const (
	kindBackInTime   = "back-in-time"     // an object older than the version already held
	kindReappeared   = "reappeared"       // a deleted object back from an event older than its deletion
	kindOutside      = "outside-selector" // an object outside the selector or namespace held
	kindNotConverged = "not-converged"    // not the server's state within the bound after the last fault
	kindRequests     = "requests"         // more requests than stock's plus requestSlack (reflectorRequestSlack)
	kindHotLoop      = "hot-loop"         // more than hotLoopBase + hotLoopPerSecond requests a second
)

type violation struct {
	client, kind, detail string
	step                 int // index of the step being played when it was seen (-1: at the end)
}

func (v violation) String() string {
	return fmt.Sprintf("%s: %s at step %d: %s", v.client, v.kind, v.step, v.detail)
}

// checker is one client's cache as the model sees it: every change the
// client makes to its cache goes through put, remove or replace, which check
// the invariants before applying it.
type checker struct {
	client string
	scope  scope
	step   *atomic.Int64 // the run's current step
	notify func()        // wakes the run's waits
	// ended returns the first resourceVersion after rv at which the server
	// ended key's version rv (deleted it or moved it out of scope).
	ended func(key string, rv uint64) (uint64, bool)

	mu         sync.Mutex
	held       map[string]uint64 // key -> resourceVersion held
	tombs      map[string]uint64 // key -> resourceVersion at (or after) which it was deleted
	violations []violation
	changes    int
	// relisted counts reflector.New's relists (lists after its first
	// sync, which fill the store object by object) and the objects they
	// deleted because the new list no longer held them.
	relisted struct{ lists, deleted int }
}

type scope struct{ namespace, selector string }

func (s scope) matches(ns string, lbls map[string]string) bool {
	if s.namespace != "" && ns != s.namespace {
		return false
	}
	sel, err := labels.Parse(s.selector)
	return err == nil && sel.Matches(labels.Set(lbls))
}

func newChecker(client string, sc scope, step *atomic.Int64, notify func(), ended func(string, uint64) (uint64, bool)) *checker {
	return &checker{client: client, scope: sc, step: step, notify: notify, ended: ended, held: map[string]uint64{}, tombs: map[string]uint64{}}
}

func (c *checker) debug(format string, args ...any) {
	if *flagTrace {
		fmt.Printf(c.client+" "+format+"\n", args...)
	}
}

func (c *checker) violate(kind, format string, args ...any) {
	c.violations = append(c.violations, violation{client: c.client, kind: kind, detail: fmt.Sprintf(format, args...), step: int(c.step.Load())})
}

// object reads a cache entry: key, resourceVersion, namespace and labels.
func object(obj any) (key string, rv uint64, ns string, lbls map[string]string, err error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", 0, "", nil, err
	}
	rv, err = strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	return m.GetNamespace() + "/" + m.GetName(), rv, m.GetNamespace(), m.GetLabels(), err
}

// put checks and records that the cache now holds obj (added, updated, or
// in a replaced list).
func (c *checker) put(obj any, how string) {
	key, rv, ns, lbls, err := object(obj)
	c.debug("put %s %s@%d", how, key, rv)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.changed()
	if err != nil {
		c.violate(kindBackInTime, "%s: unreadable object %T: %v", how, obj, err)
		return
	}
	if !c.scope.matches(ns, lbls) {
		c.violate(kindOutside, "%s %s@%d (labels %v) is outside namespace %q, selector %q", how, key, rv, lbls, c.scope.namespace, c.scope.selector)
	}
	h, held := c.held[key]
	d, deleted := c.tombs[key]
	switch {
	case held && rv < h:
		c.violate(kindBackInTime, "%s %s@%d while %s@%d is held", how, key, rv, key, h)
	case !held && deleted && rv <= d:
		c.violate(kindReappeared, "%s %s@%d after it was deleted at %d", how, key, rv, d)
	}
	if rv > c.tombs[key] {
		delete(c.tombs, key)
	}
	c.held[key] = rv
}

// remove checks and records that the cache deleted obj after a DELETED
// event carrying the deletion's resourceVersion. One older than the object
// held is going back in time (a re-delivered DELETED of an object since
// re-created).
func (c *checker) remove(obj any, how string) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		c.removeUnknown(d.Obj, how)
		return
	}
	key, rv, _, _, err := object(obj)
	c.debug("remove %s %s@%d", how, key, rv)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.changed()
	if err != nil {
		c.violate(kindBackInTime, "%s: unreadable object %T: %v", how, obj, err)
		return
	}
	h, ok := c.held[key]
	if !ok {
		return // deleting what is not held changes nothing
	}
	if rv < h {
		c.violate(kindBackInTime, "%s %s@%d while %s@%d is held", how, key, rv, key, h)
		rv = h
	}
	delete(c.held, key)
	c.tombs[key] = max(c.tombs[key], rv)
}

// removeUnknown records a deletion the cache learned from a list (an
// informer's DeletedFinalStateUnknown) whose resourceVersion the handler
// does not see: the server must have ended the version held (deleted it,
// or moved it out of scope) at some later resourceVersion, else the list
// was older than what was held.
func (c *checker) removeUnknown(obj any, how string) {
	key, _, _, _, err := object(obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.changed()
	h, ok := c.held[key]
	if err != nil || !ok {
		return
	}
	delete(c.held, key)
	end, ended := c.ended(key, h)
	if !ended {
		c.violate(kindBackInTime, "%s %s@%d by a list: the server never deleted that version (a list older than it)", how, key, h)
		return
	}
	c.tombs[key] = max(c.tombs[key], end)
}

// replace checks and records a list at resourceVersion rv that replaced the
// cache (reflector.New's store).
func (c *checker) replace(items []any, rv string, how string) {
	listRV, _ := strconv.ParseUint(rv, 10, 64)
	c.debug("replace %s at %s with %d items", how, rv, len(items))
	in := map[string]bool{}
	for _, it := range items {
		if k, _, _, _, err := object(it); err == nil {
			in[k] = true
		}
	}
	c.mu.Lock()
	for k, h := range c.held {
		if in[k] {
			continue
		}
		delete(c.held, k)
		if listRV < h {
			c.violate(kindBackInTime, "%s at %s drops %s@%d", how, rv, k, h)
			continue
		}
		c.tombs[k] = max(c.tombs[k], listRV)
	}
	c.mu.Unlock()
	for _, it := range items {
		c.put(it, how)
	}
}

// changed counts a change and wakes the run's waits. Caller holds mu.
func (c *checker) changed() {
	c.changes++
	c.notify()
}

// snapshot returns what the cache holds (key -> resourceVersion).
func (c *checker) snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]uint64, len(c.held))
	for k, v := range c.held {
		out[k] = v
	}
	return out
}

func (c *checker) found() []violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]violation(nil), c.violations...)
}

// handlers feeds an informer's notifications to the checker. An informer
// notifies after its indexer changed, in order, so the handler's view is
// the indexer's, a moment later.
func (c *checker) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.put(obj, "add") },
		UpdateFunc: func(_, obj any) { c.put(obj, "update") },
		DeleteFunc: func(obj any) { c.remove(obj, "delete") },
	}
}

// store is a cache.Store that checks every write reflector.New makes. A
// list fills it object by object (Add or Update as each object arrives,
// then Delete of each object the list no longer holds, then Bookmark with
// the list's resourceVersion): each object is checked as a watch event's
// is (never older than the version held, never back from its deletion),
// and each deletion a list makes (Delete of the very object the store
// holds; a watch's DELETED carries an object of its own) as a
// DeletedFinalStateUnknown is: the server must have ended that version.
type store struct {
	cache.Store
	c *checker
	// synced: the first list ended; later lists are relists.
	synced *atomic.Bool
}

func newStore(c *checker) store {
	return store{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), c: c, synced: &atomic.Bool{}}
}

func (s store) Add(obj any) error    { s.c.put(obj, "add"); return s.Store.Add(obj) }
func (s store) Update(obj any) error { s.c.put(obj, "update"); return s.Store.Update(obj) }
func (s store) Delete(obj any) error {
	if cur, ok, _ := s.Store.Get(obj); ok && cur == obj {
		s.c.removeUnknown(obj, "list-delete")
		s.count(&s.c.relisted.deleted)
	} else {
		s.c.remove(obj, "delete")
	}
	return s.Store.Delete(obj)
}
func (s store) Replace(items []any, rv string) error {
	s.c.replace(items, rv, "list")
	s.synced.Store(true)
	return s.Store.Replace(items, rv)
}

// Bookmark ends a list that filled the store object by object.
func (s store) Bookmark(rv string) {
	s.count(&s.c.relisted.lists)
	s.synced.Store(true)
	s.Store.Bookmark(rv)
}

// count counts one of a relist's doings (after the first sync).
func (s store) count(n *int) {
	if !s.synced.Load() {
		return
	}
	s.c.mu.Lock()
	*n++
	s.c.mu.Unlock()
}
