package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/sharding"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

// Options configures New.
type Options struct {
	// Leases is the client of the coordination.k8s.io/v1 Leases through
	// which the replicas find each other (clientset.CoordinationV1()).
	// Required.
	Leases coordinationclient.LeasesGetter
	// Namespace holds the member Leases, named <Group>-<Identity>. Required.
	Namespace string
	// Group names the replicas that share the objects (an operator's name,
	// a DNS label). Required.
	Group string
	// Identity is this replica's name, unique in the group. Default: the
	// host name (in a pod, the pod's name).
	Identity string
	// LeaseDuration: a replica whose Lease has not been renewed for this
	// long is gone and its objects move. A replica renews every 2/15 of it
	// and stops acting after 2/3 of it without a renewal. Default 15s (so 2s
	// and 10s: client-go's leader election defaults); at least 3s.
	LeaseDuration time.Duration
	// Metrics counts the informer's requests and fallbacks (among them
	// shard-client-filter where the server ignored the range). Default: none.
	Metrics metrics.Recorder
}

// ErrInvalidOptions matches New's errors for options it cannot run with.
var ErrInvalidOptions = errors.New("invalid shard options")

// Informer is a cache.SharedIndexInformer holding this replica's share of
// the objects. Its handlers are the delete-safe ones (an object that leaves
// the range is not reported as deleted) and receive an update for each
// object of a newly owned slice. Run or RunWithContext runs the membership
// beside the informer and leaves the group (deleting this replica's Lease,
// so its objects move at once) when it stops.
type Informer struct {
	cache.SharedIndexInformer

	m    *sharding.Membership
	lw   *sharding.ListerWatcher
	busy inflight

	mu        sync.Mutex
	handlers  map[cache.ResourceEventHandlerRegistration]*serialHandler
	lastRange string
	acting    []int
}

// New returns an informer over lw (any cache.ListerWatcher of the resource,
// e.g. cache.NewListWatchFromClient) that holds only this replica's share of
// the objects, on steadywatch's drop-in informer
// (reflector.NewSharedIndexInformer). exampleObject is the resource's type,
// as for client-go's cache.NewSharedIndexInformer. Nothing runs until Run
// or RunWithContext.
func New(lw cache.ListerWatcher, exampleObject runtime.Object, o Options) (*Informer, error) {
	var bad []string
	if lw == nil {
		bad = append(bad, "the ListerWatcher is nil")
	}
	if o.Leases == nil {
		bad = append(bad, "Leases is nil")
	}
	if o.Namespace == "" || o.Group == "" {
		bad = append(bad, "Namespace and Group are required")
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.LeaseDuration < 3*time.Second {
		bad = append(bad, fmt.Sprintf("LeaseDuration %v is below 3s", o.LeaseDuration))
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			bad = append(bad, fmt.Sprintf("Identity is empty and the host name is unknown (%v)", err))
		}
		o.Identity = host
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(bad, "; "))
	}
	s := &Informer{handlers: map[cache.ResourceEventHandlerRegistration]*serialHandler{}}
	m, err := sharding.NewMembership(sharding.MembershipOptions{
		Leases: o.Leases, Namespace: o.Namespace, Group: o.Group, Identity: o.Identity,
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.LeaseDuration * 2 / 3,
		RetryPeriod:   o.LeaseDuration * 2 / 15,
		// List before acting: newly assigned slices are acted on once the
		// cache's last complete list holds them.
		WaitReady: func(ctx context.Context, acting sharding.Selector) error {
			return sharding.WaitCovers(ctx, s.lw, acting)
		},
		// Let go of slices only after their reconciles still running end.
		Release:  s.busy.wait,
		OnChange: s.changed,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	s.m = m
	s.lw = sharding.Wrap(lw, sharding.WrapOptions{Selector: m.CacheSelector, Metrics: o.Metrics, Name: fmt.Sprintf("shard %T", exampleObject)})
	s.SharedIndexInformer = reflector.NewSharedIndexInformerWithOptions(s.lw, exampleObject, cache.SharedIndexInformerOptions{}, lister.Options{Metrics: o.Metrics})
	return s, nil
}

// Owns reports whether this replica may reconcile obj now, and if so
// returns done, to be called when that reconcile ends:
//
//	done, ok := inf.Owns(obj)
//	if !ok {
//		return nil
//	}
//	defer done()
//
// Ownership moves when replicas join or leave. A replica hands an object
// over only after the done of each reconcile of it (and of the objects of
// its slice, 1/24 of the hash space) was called; a reconcile that never
// calls done keeps that slice with this replica. When ok is false, done
// does nothing.
func (s *Informer) Owns(obj runtime.Object) (done func(), ok bool) {
	// Counted before the check: a handoff that starts between the two
	// waits for this reconcile.
	slice, ok := sliceOf(obj)
	if !ok {
		return func() {}, false
	}
	s.busy.add(slice, 1)
	if !s.m.Owns(obj) {
		s.busy.add(slice, -1)
		return func() {}, false
	}
	var once sync.Once
	return func() { once.Do(func() { s.busy.add(slice, -1) }) }, true
}

// View is what a replica knows of its group.
type View struct {
	// Members are the live replicas' identities, sorted.
	Members []string
	// Desired are the slices (of 24 equal slices of the hash space) assigned
	// to this replica: what its cache holds.
	Desired []int
	// Acting are the slices this replica owns now (Owns).
	Acting []int
	// Mode is where the range was last shown to be applied: "server" (a
	// list's shardInfo echoed the selector), "client" (the server ignored
	// it; the client filters), "" before any such answer.
	Mode string
}

// View returns what this replica knew at the end of its last membership
// round.
func (s *Informer) View() View {
	v := s.m.View()
	return View{Members: v.Members, Desired: v.Desired, Acting: v.Acting, Mode: string(s.lw.Mode())}
}

// AddEventHandler registers h as cache.SharedInformer.AddEventHandler does,
// delete-safe and with an update for each object of a newly owned slice.
func (s *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod is AddEventHandler with a resync period.
func (s *Informer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resync})
}

// AddEventHandlerWithOptions is AddEventHandler with client-go's handler
// options.
func (s *Informer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	sh := &serialHandler{h: h}
	reg, err := s.SharedIndexInformer.AddEventHandlerWithOptions(sharding.Handler(sh, s.m.CacheSelector), o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.handlers[reg] = sh
	s.mu.Unlock()
	return reg, nil
}

// RemoveEventHandler removes a handler added through s.
func (s *Informer) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	s.mu.Lock()
	delete(s.handlers, reg)
	s.mu.Unlock()
	return s.SharedIndexInformer.RemoveEventHandler(reg)
}

// Run is RunWithContext until stopCh closes.
func (s *Informer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext takes part in the group and runs the informer until ctx
// ends; it then stops acting, deletes this replica's Lease (so its slices
// move at once) and returns.
func (s *Informer) RunWithContext(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.m.Run(ctx)
	}()
	s.SharedIndexInformer.RunWithContext(ctx)
	wg.Wait()
}

// changed follows the membership: relist when the range the cache holds
// changed, and hand the objects of newly owned slices to the handlers (as
// a resync does: an update from the object to itself).
func (s *Informer) changed(v sharding.View) {
	objs, handlers := s.follow(v)
	if len(objs) > 0 && len(handlers) > 0 {
		klog.Background().V(4).Info("Handing the objects of newly owned slices to the handlers", "objects", len(objs))
	}
	for _, h := range handlers {
		for _, obj := range objs {
			h.OnUpdate(obj, obj)
		}
	}
}

// follow relists when the range changed and returns the cached objects of
// newly owned slices and the handlers to hand them to.
func (s *Informer) follow(v sharding.View) (objs []any, handlers []*serialHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.lw.CacheRange(); r != s.lastRange {
		s.lastRange = r
		s.lw.RangeChanged()
	}
	gained := slices.DeleteFunc(slices.Clone(v.Acting), func(sl int) bool { return slices.Contains(s.acting, sl) })
	s.acting = slices.Clone(v.Acting)
	if len(gained) == 0 || len(s.handlers) == 0 {
		return nil, nil
	}
	sel, _ := sharding.SelectorOf(sharding.FieldUID, gained, sharding.DefaultMembershipSlices)
	for _, obj := range s.GetStore().List() {
		if ro, ok := obj.(runtime.Object); ok {
			if in, err := sel.Matches(ro); err == nil && in {
				objs = append(objs, obj)
			}
		}
	}
	for _, h := range s.handlers {
		handlers = append(handlers, h)
	}
	return objs, handlers
}

// serialHandler calls h one event at a time: the informer's deliveries and
// the updates for newly owned slices come from different goroutines.
type serialHandler struct {
	mu sync.Mutex
	h  cache.ResourceEventHandler
}

func (h *serialHandler) OnAdd(obj any, initial bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.h.OnAdd(obj, initial)
}

func (h *serialHandler) OnUpdate(oldObj, newObj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.h.OnUpdate(oldObj, newObj)
}

func (h *serialHandler) OnDelete(obj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.h.OnDelete(obj)
}

// inflight counts the running reconciles per slice; wait returns the
// released slices some of which still run when ctx ends (none once they
// all ended).
type inflight struct {
	mu      sync.Mutex
	n       [sharding.DefaultMembershipSlices]int
	changed chan struct{} // closed when a count drops to 0
}

func (f *inflight) add(slice, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	if f.n[slice] += d; f.n[slice] == 0 && d < 0 {
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

func (f *inflight) wait(ctx context.Context, released []int) (busy []int) {
	for {
		f.mu.Lock()
		if f.changed == nil {
			f.changed = make(chan struct{})
		}
		busy, changed := busy[:0], f.changed
		for _, i := range released {
			if i >= 0 && i < len(f.n) && f.n[i] > 0 {
				busy = append(busy, i)
			}
		}
		f.mu.Unlock()
		if len(busy) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return busy
		}
	}
}

// sliceOf is the slice of the hash space obj's uid falls in.
func sliceOf(obj runtime.Object) (int, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, false
	}
	h := sharding.Hash(string(m.GetUID()))
	for i := range sharding.DefaultMembershipSlices {
		if sharding.Slice(i, sharding.DefaultMembershipSlices).Contains(h) {
			return i, true
		}
	}
	return 0, false
}
