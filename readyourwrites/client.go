package readyourwrites

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/rvwait"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

// defaultBound is Options.Bound's default.
const defaultBound = 5 * time.Second

// Object is a typed API object pointer, such as *corev1.ConfigMap.
type Object interface {
	runtime.Object
	metav1.Object
}

// TypedClient is the part of a client-go typed client (such as
// corev1client.ConfigMapInterface) that Client uses. UpdateStatus is used
// when the typed client has it.
type TypedClient[T Object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

type statusUpdater[T Object] interface {
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Options configure a Client. The zero value is ready to use.
type Options struct {
	// Bound is the longest a read waits for the cache to catch up with
	// the Client's own write before it reads from the server instead.
	// Default 5s; the apiserver sends a bookmark about once
	// a minute, so an idle resource may need the bound.
	Bound time.Duration
	// Metrics receives the read waits, the server fallbacks and the
	// store's resourceVersion. Default: none.
	Metrics metrics.Recorder
}

// written is what the Client last wrote to one object.
type written struct {
	rv      string // the version the server returned; "" for a delete
	deleted bool
}

// Client reads an informer's cache, never older than its own writes, and
// writes through a typed client. Create it with New. It is safe for
// concurrent use.
type Client[T Object, L runtime.Object] struct {
	typed     TypedClient[T, L]
	namespace string
	indexer   cache.Indexer
	// informer is the informer whose cache reads are served; when
	// steadywatch built it (wrappers such as shard.New's looked through),
	// reflector.WaitForResourceVersion knows the resourceVersion its indexer
	// reflects, bookmarks included; client-go's own cannot say.
	informer cache.SharedIndexInformer
	// ownWait: the informer is steadywatch's, whose reflector says which
	// version the whole store reflects (storeAtLeast).
	ownWait bool
	seen    *rvwait.Tracker
	bound   time.Duration
	name    string
	rec     metrics.Recorder // nil: none

	mu      sync.Mutex
	objects map[string]written // by namespace/name
	newest  string             // the newest version written in the resource
	deletes map[string]bool    // deleted keys not yet seen gone from the cache
}

// New returns a Client over typed (a typed client of one namespace, or of
// a cluster-scoped resource with namespace "") and informer, the informer
// of the same resource (started by the caller, as usual). New registers an
// event handler on informer to learn what its cache reflects.
func New[T Object, L runtime.Object](typed TypedClient[T, L], namespace string, informer cache.SharedIndexInformer, o Options) (*Client[T, L], error) {
	if o.Bound <= 0 {
		o.Bound = defaultBound
	}
	// Logs and metrics name the resource as package lister does
	// ("v1/configmaps").
	var zero T
	example := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(runtime.Object)
	c := &Client[T, L]{
		typed: typed, namespace: namespace, indexer: informer.GetIndexer(),
		seen: rvwait.New(), bound: o.Bound, name: lister.Options{}.Resolve(example).Name,
		objects: map[string]written{}, deletes: map[string]bool{},
	}
	c.rec = o.Metrics
	c.informer = informer
	c.ownWait = reflectsNow(informer, "")
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(obj) },
		UpdateFunc: func(_, obj any) { c.observe(obj) },
		DeleteFunc: func(obj any) { c.observe(obj) },
	}); err != nil {
		return nil, fmt.Errorf("registering the cache's event handler: %w", err)
	}
	return c, nil
}

// observe is called after the informer applied obj to its indexer.
// A watch's DELETED event carries the deletion's resourceVersion; a
// tombstone (a relist's delete) carries an old one and only wakes.
func (c *Client[T, L]) observe(obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		c.seen.Poke()
		return
	}
	if c.seen.Observe(m.GetResourceVersion()) {
		if c.rec != nil {
			c.rec.StoreResourceVersion(c.name, m.GetResourceVersion())
		}
		return
	}
	c.seen.Poke()
}

func (c *Client[T, L]) key(name string) string {
	if c.namespace == "" {
		return name
	}
	return c.namespace + "/" + name
}

// remember records a successful write's answer.
func (c *Client[T, L]) remember(obj T) T {
	key, rv := c.key(obj.GetName()), obj.GetResourceVersion()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects[key] = written{rv: rv}
	delete(c.deletes, key)
	if c.newest == "" || rvwait.AtLeast(rv, c.newest) {
		c.newest = rv
	}
	return obj
}

// Create creates obj and remembers the version the server returned.
func (c *Client[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out, err := c.typed.Create(ctx, obj, opts)
	if err != nil {
		return out, err
	}
	return c.remember(out), nil
}

// Update updates obj and remembers the version the server returned.
func (c *Client[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out, err := c.typed.Update(ctx, obj, opts)
	if err != nil {
		return out, err
	}
	return c.remember(out), nil
}

// UpdateStatus updates obj's status subresource and remembers the version
// the server returned. It fails for a typed client without UpdateStatus.
func (c *Client[T, L]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	su, ok := any(c.typed).(statusUpdater[T])
	if !ok {
		var zero T
		return zero, fmt.Errorf("the typed client of %s has no UpdateStatus", c.name)
	}
	out, err := su.UpdateStatus(ctx, obj, opts)
	if err != nil {
		return out, err
	}
	return c.remember(out), nil
}

// Patch patches the object and remembers the version the server returned.
func (c *Client[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out, err := c.typed.Patch(ctx, name, pt, data, opts, subresources...)
	if err != nil {
		return out, err
	}
	return c.remember(out), nil
}

// Delete deletes the object; reads of it then wait until the cache no
// longer holds it (an object with finalizers stays until they are removed,
// so such reads reach the bound and read the server).
func (c *Client[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := c.typed.Delete(ctx, name, opts); err != nil {
		return err
	}
	key := c.key(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects[key] = written{deleted: true}
	c.deletes[key] = true
	return nil
}

// Get returns the named object from the cache. When the Client wrote it,
// the answer is never older than that write: Get waits until the cache
// holds the written version or a newer one (or, after a delete, no longer
// holds it), and past Options.Bound reads the server. A missing object is
// a NotFound error, as from the server.
func (c *Client[T, L]) Get(ctx context.Context, name string) (T, error) {
	key := c.key(name)
	c.mu.Lock()
	w, mine := c.objects[key]
	c.mu.Unlock()
	var zero T
	if !mine {
		obj, ok, err := c.cached(key)
		if err != nil || ok {
			return obj, err
		}
		return zero, c.notFound(name)
	}
	var obj T
	var exists bool
	ready := func() (bool, error) {
		for again := false; ; again = true {
			var err error
			if obj, exists, err = c.cached(key); err != nil {
				return false, err
			}
			switch {
			case w.deleted:
				return !exists, nil
			case exists:
				if !rvwait.Comparable(obj.GetResourceVersion()) {
					return false, &rvwait.IncomparableError{ResourceVersion: obj.GetResourceVersion()}
				}
				return rvwait.AtLeast(obj.GetResourceVersion(), w.rv), nil
			case again:
				// Absent from a store that reflects our write: deleted
				// by another writer since.
				return true, nil
			case !c.storeAtLeast(w.rv):
				return false, nil
			}
			// The store reflects our write, but the object may have been
			// applied between the two reads: read it again.
		}
	}
	live, err := c.wait(ctx, "get", name, ready)
	if err != nil {
		return zero, err
	}
	if live {
		return c.typed.Get(ctx, name, metav1.GetOptions{}) // resourceVersion "": a consistent read
	}
	if !exists {
		return zero, c.notFound(name)
	}
	if w.deleted {
		c.forget(key, w)
	}
	return obj, nil
}

// List returns the cache's objects of the Client's namespace that match
// selector (nil: all). It waits until the cache reflects the newest
// version the Client wrote in the resource and no longer holds the
// objects it deleted, and past Options.Bound lists from the server.
func (c *Client[T, L]) List(ctx context.Context, selector labels.Selector) ([]T, error) {
	if selector == nil {
		selector = labels.Everything()
	}
	c.mu.Lock()
	newest := c.newest
	var deleted []string
	for k := range c.deletes {
		deleted = append(deleted, k)
	}
	c.mu.Unlock()
	var reached atomic.Bool // the informer's own wait saw the store reach newest
	if newest != "" && !c.storeAtLeast(newest) {
		wctx, cancel := context.WithTimeout(ctx, c.bound)
		defer cancel()
		go func() {
			// An informer that cannot wait (client-go's own) answers
			// ErrNoResourceVersionWait at once: the cache's events decide.
			if reflector.WaitForResourceVersion(wctx, c.informer, newest) == nil {
				reached.Store(true)
				c.seen.Poke()
			}
		}()
	}
	ready := func() (bool, error) {
		if _, err := c.seen.Current(); err != nil {
			return false, err
		}
		if newest != "" && !reached.Load() && !c.storeAtLeast(newest) {
			return false, nil
		}
		for _, k := range deleted {
			if _, ok, _ := c.indexer.GetByKey(k); ok {
				return false, nil
			}
		}
		return true, nil
	}
	live, err := c.wait(ctx, "list", "", ready)
	if err != nil {
		return nil, err
	}
	if live {
		return c.listServer(ctx, selector)
	}
	c.mu.Lock()
	for _, k := range deleted { // seen gone: no later read waits for them
		if w := c.objects[k]; w.deleted {
			delete(c.objects, k)
			delete(c.deletes, k)
		}
	}
	c.mu.Unlock()
	return c.listCache(selector)
}

// storeAtLeast reports whether the cache reflects rv or newer: what the
// event handler saw, or the store's own LastStoreSyncResourceVersion
// (client-go stores with the AtomicFIFO gate, which counts bookmarks).
func (c *Client[T, L]) storeAtLeast(rv string) bool {
	if c.ownWait {
		// steadywatch's informer applies a relist object by object: an
		// event of the relist at a newer version does not mean the objects
		// before it in resourceVersion order are applied yet. Its reflector
		// knows the version the whole store reflects; ask it without
		// waiting.
		return reflectsNow(c.informer, rv)
	}
	if have, err := c.seen.Current(); err == nil && have != "" && rvwait.AtLeast(have, rv) {
		return true
	}
	return rvwait.AtLeast(c.indexer.LastStoreSyncResourceVersion(), rv)
}

// wait waits until ready, woken by the cache's changes, for at most the
// bound. It returns live=true when the read must go to the server.
func (c *Client[T, L]) wait(ctx context.Context, op, name string, ready func() (bool, error)) (live bool, err error) {
	var start time.Time
	var timer *time.Timer
	for {
		changed := c.seen.Changed() // before the check: no wakeup is lost
		ok, err := ready()
		if err != nil {
			return true, c.fallback(ctx, op, name, reason.ReadIncomparable, start, err)
		}
		if ok {
			if !start.IsZero() && c.rec != nil {
				c.rec.ReadWait(c.name, time.Since(start), "cache")
			}
			return false, nil
		}
		if start.IsZero() {
			start = time.Now()
			timer = time.NewTimer(c.bound)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-timer.C:
			return true, c.fallback(ctx, op, name, reason.ReadBound, start, nil)
		case <-ctx.Done():
			return false, fmt.Errorf("waiting for the cache of %s to reflect this client's own write: %w", c.name, context.Cause(ctx))
		}
	}
}

// fallback logs and counts a read that goes to the server; it returns nil.
func (c *Client[T, L]) fallback(ctx context.Context, op, name string, why reason.Code, start time.Time, cause error) error {
	waited := time.Duration(0)
	if !start.IsZero() {
		waited = time.Since(start)
	}
	klog.FromContext(ctx).Info("Reading from the server: the cache does not reflect this client's own write",
		"resource", c.name, "op", op, "name", name, "reason", string(why), "waited", waited, "err", cause)
	if c.rec != nil {
		c.rec.ReadFallback(c.name, string(why))
		if !start.IsZero() {
			c.rec.ReadWait(c.name, waited, "server")
		}
	}
	return nil
}

func (c *Client[T, L]) forget(key string, w written) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objects[key] == w {
		delete(c.objects, key)
		delete(c.deletes, key)
	}
}

func (c *Client[T, L]) cached(key string) (T, bool, error) {
	var zero T
	item, ok, err := c.indexer.GetByKey(key)
	if err != nil || !ok {
		return zero, false, err
	}
	obj, isT := item.(T)
	if !isT {
		return zero, false, fmt.Errorf("cache of %s holds a %T under %s", c.name, item, key)
	}
	return obj, true, nil
}

func (c *Client[T, L]) listCache(selector labels.Selector) ([]T, error) {
	var items []any
	if c.namespace != "" {
		var err error
		if items, err = c.indexer.ByIndex(cache.NamespaceIndex, c.namespace); err != nil {
			items = nil
			for _, it := range c.indexer.List() {
				if m, err := meta.Accessor(it); err == nil && m.GetNamespace() == c.namespace {
					items = append(items, it)
				}
			}
		}
	} else {
		items = c.indexer.List()
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		obj, ok := it.(T)
		if !ok {
			return nil, fmt.Errorf("cache of %s holds a %T", c.name, it)
		}
		if selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out, nil
}

func (c *Client[T, L]) listServer(ctx context.Context, selector labels.Selector) ([]T, error) {
	l, err := c.typed.List(ctx, metav1.ListOptions{LabelSelector: selector.String()}) // resourceVersion "": a consistent list
	if err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		obj, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("list of %s holds a %T", c.name, o)
		}
		out = append(out, obj)
	}
	return out, nil
}

func (c *Client[T, L]) notFound(name string) error {
	var zero T
	example := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(runtime.Object)
	res, _ := lister.ResourceOf(example)
	return apierrors.NewNotFound(res.GroupResource(), name)
}

// reflectsNow reports, without waiting, whether informer is one steadywatch
// built whose store already reflects rv ("" asks only whether it can say).
func reflectsNow(informer cache.SharedInformer, rv string) bool {
	now, cancel := context.WithCancel(context.Background())
	cancel()
	return reflector.WaitForResourceVersion(now, informer, rv) == nil
}
