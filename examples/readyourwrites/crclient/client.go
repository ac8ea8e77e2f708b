// Package crclient is a controller-runtime client.Client whose reads come
// from the manager's cache and are never older than its own writes.
//
// A controller that updates an object and reads it back from
// mgr.GetClient() may get the version before its update: the cache is fed
// by a watch and lags the server. The Client returned by New remembers the
// resourceVersion the server returned for each of its writes (per kind,
// namespace and name); a Get of such an object, or a List of such a kind,
// waits until the cache holds that version or a newer one (after a Delete:
// no longer holds the object), woken by the informer's events and, for an
// informer steadywatch built (cache.Options.NewInformer =
// reflector.NewInformerFor(cfg)), by reflector.WaitForResourceVersion,
// which also counts bookmarks. Past Options.Bound it reads from the server
// with the manager's API reader (a consistent read) and logs why.
//
//	c := crclient.New(mgr, crclient.Options{})
//
// It is package readyourwrites (of the steadywatch SDK) for
// controller-runtime; docs/consistency.md describes the guarantee.
// resourceVersions are compared as KEP-5504 defines it
// (k8s.io/apimachinery/pkg/util/resourceversion); a server whose versions
// are not comparable is read directly.
package crclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

// Options configure a Client. The zero value is ready to use.
// defaultBound is Options.Bound's default.
const defaultBound = 5 * time.Second

type Options struct {
	// Bound is the longest a read waits for the cache to catch up with the
	// Client's own write before it reads from the server instead. Default
	// 5s, as readyourwrites.Options.Bound.
	Bound time.Duration
	// Metrics receives the read waits and the server fallbacks (per kind,
	// such as "ConfigMap"). Default: none.
	Metrics metrics.Recorder
}

// Informers is the part of the manager's cache the Client reads: its
// objects and its informers.
type Informers interface {
	client.Reader
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// New returns a Client that writes with mgr.GetClient(), reads from
// mgr.GetCache() and, past the bound, from mgr.GetAPIReader().
func New(mgr manager.Manager, o Options) *Client {
	return NewFrom(mgr.GetClient(), mgr.GetCache(), mgr.GetAPIReader(), o)
}

// NewFrom returns a Client over its three parts: writer (whose Writer and
// Status methods are used; its reads are not), cached (the cache the reads
// come from) and server (a reader of the apiserver).
func NewFrom(writer client.Client, cached Informers, server client.Reader, o Options) *Client {
	if o.Bound <= 0 {
		o.Bound = defaultBound
	}
	c := &Client{Client: writer, cached: cached, server: server, bound: o.Bound, kinds: map[schema.GroupVersionKind]*kind{}}
	c.rec = o.Metrics
	return c
}

// Client is a client.Client: writes go to the server, reads to the cache,
// never older than the Client's own writes. Apply and SubResource writes
// pass through unremembered. It is safe for concurrent use.
type Client struct {
	client.Client // the writer; Get and List are overridden
	cached        Informers
	server        client.Reader
	bound         time.Duration
	rec           metrics.Recorder // nil: none

	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]*kind
}

var _ client.Client = (*Client)(nil)

// written is what the Client last wrote to one object.
type written struct {
	rv      string // "" for a delete
	deleted bool
}

// kind is what the Client wrote of one kind and what its informer showed.
type kind struct {
	informer cache.Informer // nil until the first wait registered the handler
	// Guarded by Client.mu:
	objects map[types.NamespacedName]written
	newest  string // the newest version written in the kind
	seen    string // the newest version the informer's events carried
	bad     bool   // the informer delivered a version not comparable
	changed chan struct{}
}

func (c *Client) gvk(obj client.Object) (schema.GroupVersionKind, error) {
	return c.GroupVersionKindFor(obj)
}

func (c *Client) kindOf(gvk schema.GroupVersionKind) *kind {
	k := c.kinds[gvk]
	if k == nil {
		k = &kind{objects: map[types.NamespacedName]written{}, changed: make(chan struct{})}
		c.kinds[gvk] = k
	}
	return k
}

// remember records a successful write's answer (obj, as the server
// returned it).
func (c *Client) remember(obj client.Object, deleted bool) {
	gvk, err := c.gvk(obj)
	if err != nil {
		return // not in the scheme: the cache cannot hold it either
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.kindOf(gvk)
	key := client.ObjectKeyFromObject(obj)
	if deleted {
		k.objects[key] = written{deleted: true}
		return
	}
	rv := obj.GetResourceVersion()
	k.objects[key] = written{rv: rv}
	if k.newest == "" || atLeast(rv, k.newest) {
		k.newest = rv
	}
}

// Create creates obj and remembers the version the server returned.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.track(ctx, obj)
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	c.remember(obj, false)
	return nil
}

// Update updates obj and remembers the version the server returned.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.track(ctx, obj)
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	c.remember(obj, false)
	return nil
}

// Patch patches obj and remembers the version the server returned.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.track(ctx, obj)
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	c.remember(obj, false)
	return nil
}

// Delete deletes obj; reads of it then wait until the cache no longer
// holds it (an object with finalizers stays until they are removed, so
// such reads reach the bound and read the server).
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.track(ctx, obj)
	if err := c.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	c.remember(obj, true)
	return nil
}

// Status returns the status writer; its Update and Patch remember the
// version the server returned.
func (c *Client) Status() client.SubResourceWriter {
	return statusWriter{SubResourceWriter: c.Client.Status(), c: c}
}

type statusWriter struct {
	client.SubResourceWriter
	c *Client
}

func (s statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.c.track(ctx, obj)
	if err := s.SubResourceWriter.Update(ctx, obj, opts...); err != nil {
		return err
	}
	s.c.remember(obj, false)
	return nil
}

func (s statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.c.track(ctx, obj)
	if err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	s.c.remember(obj, false)
	return nil
}

// track registers the event handler of obj's kind before the Client writes
// it, so that the events of the write are seen (a handler added later is
// told of the objects present, not of those deleted since). It does not
// wait for the informer to sync; when it fails, the first read retries.
func (c *Client) track(ctx context.Context, obj client.Object) {
	gvk, err := c.gvk(obj)
	if err != nil {
		return
	}
	if _, err := c.watch(ctx, gvk, obj, cache.BlockUntilSynced(false)); err != nil {
		log.FromContext(ctx).Info("Reads after this write may wait until the bound", "kind", gvk.Kind, "err", err)
	}
}

// watch registers, once per kind, the event handler that wakes waits.
func (c *Client) watch(ctx context.Context, gvk schema.GroupVersionKind, obj client.Object, opts ...cache.InformerGetOption) (*kind, error) {
	c.mu.Lock()
	k := c.kindOf(gvk)
	registered := k.informer != nil
	c.mu.Unlock()
	if registered {
		return k, nil
	}
	inf, err := c.cached.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, fmt.Errorf("getting the informer of %s: %w", gvk.Kind, err)
	}
	c.mu.Lock()
	if k.informer != nil { // another read registered it meanwhile
		c.mu.Unlock()
		return k, nil
	}
	k.informer = inf
	c.mu.Unlock()
	observe := func(o any) {
		if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		rv := ""
		if m, err := meta.Accessor(o); err == nil {
			rv = m.GetResourceVersion()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case rv == "" || rv == "0":
		case !comparable(rv):
			k.bad = true
		case k.seen == "" || atLeast(rv, k.seen):
			k.seen = rv
		}
		close(k.changed)
		k.changed = make(chan struct{})
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, o any) { observe(o) },
		DeleteFunc: observe,
	}); err != nil {
		c.mu.Lock()
		k.informer = nil // the next read or write tries again
		c.mu.Unlock()
		return nil, fmt.Errorf("registering the event handler of %s: %w", gvk.Kind, err)
	}
	return k, nil
}

// Get reads obj from the cache. When the Client wrote it, the answer is
// never older than that write; see the package documentation.
func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := c.gvk(obj)
	if err != nil {
		return c.cached.Get(ctx, key, obj, opts...)
	}
	c.mu.Lock()
	w, mine := c.kindOf(gvk).objects[key]
	c.mu.Unlock()
	if !mine {
		return c.cached.Get(ctx, key, obj, opts...)
	}
	k, err := c.watch(ctx, gvk, obj)
	if err != nil {
		return err
	}
	var getErr error
	ready := func() (bool, error) {
		getErr = c.cached.Get(ctx, key, obj, opts...)
		exists := getErr == nil
		if getErr != nil && !apierrors.IsNotFound(getErr) {
			return false, getErr
		}
		switch {
		case w.deleted:
			return !exists, nil
		case exists:
			rv := obj.GetResourceVersion()
			if !comparable(rv) {
				return false, errIncomparable
			}
			return atLeast(rv, w.rv), nil
		default: // gone after our write: deleted by another writer since?
			seen, _ := c.seen(k)
			return seen != "" && atLeast(seen, w.rv), nil
		}
	}
	live, err := c.wait(ctx, k, gvk, "get", key.String(), w.rv, ready)
	if err != nil {
		return err
	}
	if live {
		return c.server.Get(ctx, key, obj, opts...) // resourceVersion "": a consistent read
	}
	if w.deleted {
		c.mu.Lock()
		if k.objects[key] == w {
			delete(k.objects, key)
		}
		c.mu.Unlock()
	}
	return getErr
}

// List reads list from the cache. When the Client wrote objects of the
// list's kind, it waits until the cache reflects the newest version it
// wrote and no longer holds the objects it deleted; past the bound it
// lists from the server.
func (c *Client) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := c.GroupVersionKindFor(list)
	if err != nil || !strings.HasSuffix(gvk.Kind, "List") {
		return c.cached.List(ctx, list, opts...)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	c.mu.Lock()
	kk := c.kindOf(gvk)
	newest := kk.newest
	var deleted []types.NamespacedName
	for key, w := range kk.objects {
		if w.deleted {
			deleted = append(deleted, key)
		}
	}
	c.mu.Unlock()
	if newest == "" && len(deleted) == 0 {
		return c.cached.List(ctx, list, opts...)
	}
	example, err := c.Scheme().New(gvk)
	if err != nil {
		return c.cached.List(ctx, list, opts...)
	}
	obj, ok := example.(client.Object)
	if !ok {
		return c.cached.List(ctx, list, opts...)
	}
	k, err := c.watch(ctx, gvk, obj)
	if err != nil {
		return err
	}
	ready := func() (bool, error) {
		seen, bad := c.seen(k)
		if bad {
			return false, errIncomparable
		}
		if newest != "" && (seen == "" || !atLeast(seen, newest)) {
			return false, nil
		}
		for _, key := range deleted {
			probe := obj.DeepCopyObject().(client.Object)
			if err := c.cached.Get(ctx, key, probe); err == nil {
				return false, nil
			} else if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	}
	live, err := c.wait(ctx, k, gvk, "list", "", newest, ready)
	if err != nil {
		return err
	}
	if live {
		return c.server.List(ctx, list, opts...) // resourceVersion "": a consistent list
	}
	c.mu.Lock()
	for _, key := range deleted { // seen gone: no later read waits for them
		if k.objects[key].deleted {
			delete(k.objects, key)
		}
	}
	c.mu.Unlock()
	return c.cached.List(ctx, list, opts...)
}

// seen returns the newest version the kind's informer showed and whether
// it delivered one that is not comparable.
func (c *Client) seen(k *kind) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return k.seen, k.bad
}

var errIncomparable = errors.New("the server's resourceVersions are not comparable (KEP-5504)")

// wait waits until ready, woken by the informer's events (and, for a
// steadywatch informer, by its store reaching rv), for at most the bound.
// It returns live=true when the read must go to the server.
func (c *Client) wait(ctx context.Context, k *kind, gvk schema.GroupVersionKind, op, name, rv string, ready func() (bool, error)) (bool, error) {
	var start time.Time
	var timer *time.Timer
	for {
		c.mu.Lock()
		changed := k.changed // before the check: no wakeup is lost
		c.mu.Unlock()
		ok, err := ready()
		if errors.Is(err, errIncomparable) {
			return true, c.fallback(ctx, gvk, op, name, "incomparable", start, err)
		}
		if err != nil {
			return false, err
		}
		if ok {
			if !start.IsZero() && c.rec != nil {
				c.rec.ReadWait(gvk.Kind, time.Since(start), "cache")
			}
			return false, nil
		}
		if start.IsZero() {
			start = time.Now()
			timer = time.NewTimer(c.bound)
			defer timer.Stop()
			if rv != "" {
				c.storeWait(ctx, k, rv)
			}
		}
		select {
		case <-changed:
		case <-timer.C:
			return true, c.fallback(ctx, gvk, op, name, "bound", start, nil)
		case <-ctx.Done():
			return false, fmt.Errorf("waiting for the cache of %s to reflect this client's own write: %w", gvk.Kind, context.Cause(ctx))
		}
	}
}

// storeWait starts, for an informer steadywatch built, a wait for its store
// to reflect rv (a bookmark counts, which no event handler sees); when it
// does, rv counts as seen. For any other informer it does nothing.
func (c *Client) storeWait(ctx context.Context, k *kind, rv string) {
	c.mu.Lock()
	inf, ok := k.informer.(toolscache.SharedInformer)
	c.mu.Unlock()
	if !ok {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.bound)
	go func() {
		defer cancel()
		if reflector.WaitForResourceVersion(wctx, inf, rv) != nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if k.seen == "" || atLeast(rv, k.seen) {
			k.seen = rv
		}
		close(k.changed)
		k.changed = make(chan struct{})
	}()
}

// fallback logs and counts a read that goes to the server; it returns nil.
func (c *Client) fallback(ctx context.Context, gvk schema.GroupVersionKind, op, name, reason string, start time.Time, cause error) error {
	waited := time.Duration(0)
	if !start.IsZero() {
		waited = time.Since(start)
	}
	log.FromContext(ctx).Info("Reading from the server: the cache does not reflect this client's own write",
		"kind", gvk.Kind, "op", op, "name", name, "reason", reason, "waited", waited, "err", cause)
	if c.rec != nil {
		c.rec.ReadFallback(gvk.Kind, reason)
		if !start.IsZero() {
			c.rec.ReadWait(gvk.Kind, waited, "server")
		}
	}
	return nil
}

func comparable(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// atLeast reports whether have is rv or newer; false when either is not
// comparable.
func atLeast(have, rv string) bool {
	n, err := resourceversion.CompareResourceVersion(have, rv)
	return err == nil && n >= 0
}
