package lister

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/metrics"
)

// ListGate bounds how many collection reads the Listers sharing it have in
// flight at once against one apiserver, and serves identical list requests
// with one request.
//
// Collection reads are list requests that may return more than one object
// (every page of a list, retries and fallbacks included) and streaming
// lists (sendInitialEvents) from their request to their initial-events-end
// bookmark or the stream's end. A read waits, in arrival order, until one
// of the gate's slots is free; waiting ends early when its context ends.
// Requests of at most one object (limit=1: the streaming-list guard's
// count, the newer-resourceVersion probe) and watches that only continue
// from a resourceVersion take no slot.
//
// Identical list requests (the same client: same REST client, resource,
// namespace and content type, from FromClientset, FromRESTClient,
// FromDynamicConfig or FromMetadataConfig; and the same parameters) are
// sent once, and every reader gets its own deep copy of the answer:
//   - requests that wait for a slot together, whatever their semantic: the
//     one request is sent after every one of them was made, so even a
//     MostRecent (resourceVersion unset) read gets data at least as recent
//     as its own request would have (API Concepts, "Resource versions");
//   - a request identical to one already in flight when it asks for
//     resourceVersion "0" (Any), a given resourceVersion (NotOlderThan and
//     Exact mean the same data for both) or a continue token (the same
//     snapshot): the in-flight answer satisfies its semantic too.
//
// Only successes are shared: when the request fails, each reader sends its
// own (and takes its own retries and backoff), so one caller's cancelled
// context never fails another.
//
// Why: the apiserver allocates about the size of a list's response to
// encode it, whatever the client asks, and that garbage raises its heap
// until its next collection, so informers that start at once cost it the
// sum of their lists (the KEP-3157 scenario; docs/benchmarks.md, P5: 8
// informers listing the same 244 MiB make a v1.33.13 apiserver allocate
// 2.5 GiB; through a gate they send one list, 314 MiB, and its peak heap
// rises 0.15x as much as stock's when it holds other data too).
//
// Where the server streams lists from its watch cache (1.34+ defaults),
// streams cost it little and a gate only makes informers wait (measured:
// the same allocations, 1.2x the apiserver's CPU, 29.5 s instead of 24.6 s
// for 8 informers); use a gate where the server lists and for resources
// its watch cache does not hold.
//
// A read that holds a slot for longer than the gate's hold bound (WithMaxHold,
// default DefaultListGateMaxHold: the apiserver's own default
// --request-timeout for a list) stops counting against the slots: the next
// read is admitted, the late one goes on undisturbed and is counted in
// ListGateStats.Overdue and logged at verbosity 1. So a list that a proxy
// or an overloaded server leaves without an answer (a client without a
// request timeout waits for it forever) delays the informers queued behind
// it by at most the hold bound instead of blocking them with it.
//
// The trade-off: the informers that wait sync later (the last of n after
// about n lists' time when reads of different collections are large); a
// slow or stalled read delays the others up to the hold bound; a shared
// answer is copied once per reader in the process of the first. Requests
// are never sent faster because of a gate, and no fallback is taken
// because of one.
//
// Share one gate per apiserver among the Listers, ListerWatchers and
// reflectors of a process (set it in the lister.Options given to each, in
// reflector.FactoryOptions.Lister for the informers of a factory, or in
// reflector.Options.ListGate). A nil *ListGate admits everything at once
// and shares nothing (the default). A ListGate is safe for concurrent use.
type ListGate struct {
	mu       sync.Mutex
	slots    int
	maxHold  time.Duration // <= 0: no hold bound
	inFlight int           // reads holding a slot (within the hold bound)
	overdue  int           // reads past the hold bound, still running
	queue    []*gateWaiter
	pending  map[string]*flight // identical requests may attach while its sender waits for a slot
	joinable map[string]*flight // in flight, and its answer satisfies an identical request made now
	stats    ListGateStats
}

// ListGateStats says what a ListGate did.
type ListGateStats struct {
	// Slots is the gate's size.
	Slots int
	// Admitted counts the reads given a slot; Waited those of them that
	// had to wait for it, for WaitTime in all.
	Admitted, Waited uint64
	WaitTime         time.Duration
	// Shared counts the reads answered by another reader's identical
	// request (a copy of its answer, no request of their own).
	Shared uint64
	// InFlight is the number of reads holding a slot now; MaxInFlight the
	// most at once so far; Queued the number waiting for one now.
	InFlight, MaxInFlight, Queued int
	// Overdue counts the reads that held a slot longer than the gate's hold
	// bound (WithMaxHold) and so stopped counting against the slots;
	// OverdueInFlight is the number of them still running now (not in
	// InFlight).
	Overdue         uint64
	OverdueInFlight int
}

// DefaultListGateMaxHold is a ListGate's hold bound unless WithMaxHold
// says otherwise: the apiserver's default --request-timeout, which ends a
// list it serves itself after one minute.
const DefaultListGateMaxHold = time.Minute

// ListGateOption configures NewListGate.
type ListGateOption func(*ListGate)

// WithMaxHold sets how long one read may hold a slot before the gate stops
// counting it and admits the next (see ListGate). 0 keeps
// DefaultListGateMaxHold; a negative d turns the bound off, so a read
// without an answer keeps its slot until its own context or timeout ends
// it.
func WithMaxHold(d time.Duration) ListGateOption {
	return func(g *ListGate) {
		if d != 0 {
			g.maxHold = d
		}
	}
}

type gateWaiter struct {
	admitted chan struct{} // closed when it holds a slot
	given    bool          // holds a slot (under ListGate.mu)
	hold     *gateHold     // its slot, once given
	flight   *flight       // the identical requests attached to this one, if any
}

// gateHold is one read's slot, from admission to release.
type gateHold struct {
	name     string
	rec      metrics.Recorder
	logger   klog.Logger
	timer    *time.Timer // the hold bound, when the gate has one
	overdue  bool        // outlived the hold bound: no longer counted (under ListGate.mu)
	released bool        // (under ListGate.mu)
}

// flight is one request that identical requests attach to.
type flight struct {
	key       string
	joinable  bool             // attachable while in flight (not only while queued)
	closed    bool             // no more attachments (under ListGate.mu)
	followers int              // attached readers (under ListGate.mu; final once closed)
	done      chan struct{}    // closed when results is set
	results   []runtime.Object // one copy per follower; nil when the request failed
}

// NewListGate returns a gate admitting at most slots collection reads at
// once, each for at most DefaultListGateMaxHold unless WithMaxHold says
// otherwise. slots < 1 is taken as 1.
func NewListGate(slots int, opts ...ListGateOption) *ListGate {
	slots = max(slots, 1)
	g := &ListGate{slots: slots, maxHold: DefaultListGateMaxHold, pending: map[string]*flight{}, joinable: map[string]*flight{}, stats: ListGateStats{Slots: slots}}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Stats returns what the gate did so far.
func (g *ListGate) Stats() ListGateStats {
	if g == nil {
		return ListGateStats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stats
	st.InFlight, st.Queued, st.OverdueInFlight = g.inFlight, len(g.queue), g.overdue
	return st
}

// Acquire waits for a slot for one collection read named name (a lister's
// or reflector's Name) and returns the function that frees it (idempotent).
// It returns ctx's error, and holds nothing, when ctx ends first. A read
// that waited is logged at verbosity 2 with how long, and reported to rec
// when it implements metrics.ListGateRecorder. A nil gate returns at once.
func (g *ListGate) Acquire(ctx context.Context, name string, rec metrics.Recorder) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	g.mu.Lock()
	h, err := g.acquireLocked(ctx, name, rec, nil)
	if err != nil {
		return func() {}, err
	}
	return func() { g.release(h) }, nil
}

// list sends one list request through the gate: send, with a slot, unless
// an identical request (same key, see ListGate) answers it. key "" is
// never shared; joinable says whether an identical request already in
// flight may answer it. shared reports that another reader's request did.
func (g *ListGate) list(ctx context.Context, key string, joinable bool, name string, rec metrics.Recorder,
	send func(context.Context) (runtime.Object, error)) (obj runtime.Object, shared bool, err error) {
	if g == nil {
		obj, err = send(ctx)
		return obj, false, err
	}
	g.mu.Lock()
	if key != "" {
		fl := g.pending[key]
		if fl == nil && joinable {
			fl = g.joinable[key]
		}
		if fl != nil && !fl.closed {
			i := fl.followers
			fl.followers++
			g.mu.Unlock()
			select {
			case <-fl.done:
			case <-ctx.Done():
				return nil, false, fmt.Errorf("waiting for an identical list request (lister.ListGate): %w", ctx.Err())
			}
			if fl.results != nil {
				g.mu.Lock()
				g.stats.Shared++
				g.mu.Unlock()
				klog.FromContext(ctx).V(4).Info("List answered by an identical request of another reader (lister.ListGate)", "lister", name)
				if r, ok := rec.(metrics.ListGateRecorder); ok {
					r.ListGateShared(name)
				}
				return fl.results[i], true, nil
			}
			// That request failed: this reader sends its own, and sees its
			// own error if it fails too.
			g.mu.Lock()
			key = ""
		}
	}
	var fl *flight
	if key != "" {
		fl = &flight{key: key, joinable: joinable, done: make(chan struct{})}
	}
	h, err := g.acquireLocked(ctx, name, rec, fl)
	if err != nil {
		return nil, false, err
	}
	obj, err = send(ctx)
	g.mu.Lock()
	var followers int
	if fl != nil {
		if g.joinable[key] == fl {
			delete(g.joinable, key)
		}
		fl.closed = true
		followers = fl.followers
	}
	g.mu.Unlock()
	g.release(h) // the answer is read whole: the apiserver holds no more of it
	if fl != nil {
		if err == nil && followers > 0 {
			results := make([]runtime.Object, followers)
			for i := range results {
				results[i] = obj.DeepCopyObject()
			}
			fl.results = results
		}
		close(fl.done)
	}
	return obj, false, err
}

// acquireLocked, called with g.mu held (and returning with it released),
// takes a slot for a read, waiting in arrival order, and makes fl (if any)
// attachable: while it waits, and while in flight when fl.joinable.
func (g *ListGate) acquireLocked(ctx context.Context, name string, rec metrics.Recorder, fl *flight) (*gateHold, error) {
	h := &gateHold{name: name, rec: rec, logger: klog.FromContext(ctx)}
	if g.inFlight < g.slots && len(g.queue) == 0 {
		g.inFlight++
		g.admitLocked(h, fl)
		g.mu.Unlock()
		return h, nil
	}
	w := &gateWaiter{admitted: make(chan struct{}), hold: h, flight: fl}
	g.queue = append(g.queue, w)
	if fl != nil {
		g.pending[fl.key] = fl
	}
	g.mu.Unlock()
	start := time.Now()
	select {
	case <-w.admitted:
	case <-ctx.Done():
		g.mu.Lock()
		if w.given { // admitted meanwhile: give the slot back
			g.mu.Unlock()
			g.release(h)
		} else {
			g.queue = slices.DeleteFunc(g.queue, func(x *gateWaiter) bool { return x == w })
			g.mu.Unlock()
		}
		if fl != nil {
			g.mu.Lock()
			if g.pending[fl.key] == fl {
				delete(g.pending, fl.key)
			}
			if g.joinable[fl.key] == fl {
				delete(g.joinable, fl.key)
			}
			fl.closed = true
			g.mu.Unlock()
			close(fl.done) // no results: its followers send their own
		}
		return nil, fmt.Errorf("waiting for a lister.ListGate slot: %w", ctx.Err())
	}
	waited := max(time.Since(start), time.Nanosecond)
	g.mu.Lock()
	g.stats.Waited++
	g.stats.WaitTime += waited
	g.mu.Unlock()
	h.logger.V(2).Info("Collection read waited for a lister.ListGate slot", "lister", name, "waited", waited, "slots", g.slots)
	if r, ok := rec.(metrics.ListGateRecorder); ok {
		r.ListGateWait(name, waited)
	}
	return h, nil
}

// admitLocked records a read given a slot (g.inFlight already counts it)
// and starts its hold bound: fl stops being pending, and stays attachable
// while in flight only when joinable (a MostRecent request may answer only
// those made before it).
func (g *ListGate) admitLocked(h *gateHold, fl *flight) {
	g.stats.Admitted++
	g.stats.MaxInFlight = max(g.stats.MaxInFlight, g.inFlight)
	if g.maxHold > 0 {
		h.timer = time.AfterFunc(g.maxHold, func() { g.overdueHold(h) })
	}
	if fl == nil {
		return
	}
	if g.pending[fl.key] == fl {
		delete(g.pending, fl.key)
	}
	if fl.joinable {
		if _, taken := g.joinable[fl.key]; !taken {
			g.joinable[fl.key] = fl
			return
		}
	}
	fl.closed = true
}

// release frees h's slot (once; nothing when h outlived the hold bound:
// its slot was handed on then) and hands it to the longest-waiting read.
func (g *ListGate) release(h *gateHold) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	if h.timer != nil {
		h.timer.Stop()
	}
	if h.overdue {
		g.overdue--
		return
	}
	g.inFlight--
	g.admitWaitersLocked()
}

// overdueHold runs when h held its slot for the hold bound: h stops
// counting against the slots (it goes on undisturbed) and the next read
// is admitted.
func (g *ListGate) overdueHold(h *gateHold) {
	g.mu.Lock()
	if h.released || h.overdue {
		g.mu.Unlock()
		return
	}
	h.overdue = true
	g.inFlight--
	g.overdue++
	g.stats.Overdue++
	queued := len(g.queue)
	g.admitWaitersLocked()
	g.mu.Unlock()
	h.logger.V(1).Info("Collection read held a lister.ListGate slot longer than the gate's hold bound: no longer counted, the next read is admitted",
		"lister", h.name, "maxHold", g.maxHold, "queued", queued)
	if r, ok := h.rec.(metrics.ListGateRecorder); ok {
		r.ListGateOverdue(h.name)
	}
}

// admitWaitersLocked hands free slots to the longest-waiting reads.
func (g *ListGate) admitWaitersLocked() {
	for g.inFlight < g.slots && len(g.queue) > 0 {
		w := g.queue[0]
		g.queue = g.queue[1:]
		g.inFlight++
		w.given = true
		g.admitLocked(w.hold, w.flight)
		close(w.admitted)
	}
}

// clientID names a REST client instance (and so its credentials and
// transport): answers are shared only between requests of one instance.
// "" (never shared) for a client that is not a pointer.
func clientID(rc rest.Interface) string {
	v := reflect.ValueOf(rc)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return ""
	}
	return fmt.Sprintf("%T@%x", rc, v.Pointer())
}

func (c restClient) requestKey() string {
	id := clientID(c.r.Client)
	if id == "" {
		return ""
	}
	return fmt.Sprintf("rest|%s|%s|%s|protobuf=%t|%T", id, c.r.Resource, c.r.Namespace, c.r.PrefersProtobuf, c.r.List)
}

func (c typedClient) requestKey() string {
	if c.rest == nil {
		return "" // a fake clientset's typed client
	}
	return c.rest.requestKey()
}

func (c dynamicClient) requestKey() string {
	if id := clientID(c.rc); id != "" {
		return "dynamic|" + id + "|" + strings.Join(c.path, "/")
	}
	return ""
}

func (c metadataClient) requestKey() string {
	if id := clientID(c.rc); id != "" {
		return "metadata|" + id + "|" + strings.Join(c.path, "/")
	}
	return ""
}
