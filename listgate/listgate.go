package listgate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/metrics"
)

// Gate bounds how many collection reads the readers sharing it have in
// flight at once against one apiserver, and serves identical list requests
// with one request.
//
// Collection reads are list requests that may return more than one object
// (every page of a list, retries and fallbacks included; see List) and
// streaming lists (sendInitialEvents) from their request to their
// initial-events-end bookmark or the stream's end (see Acquire). A read
// waits, in arrival order, until one of the gate's slots is free; waiting
// ends early when its context ends. Requests of at most one object
// (limit=1: the streaming-list guard's count, the newer-resourceVersion
// probe) and watches that only continue from a resourceVersion take no
// slot.
//
// Identical list requests (clients with the same RequestKey, and the same
// ListOptions) are sent once, and every reader gets its own deep copy of
// the answer:
//   - requests that wait for a slot together, whatever their semantic: the
//     one request is sent after every one of them was made, so even a
//     MostRecent (resourceVersion unset) read gets data at least as recent
//     as its own request would have (Kubernetes API Concepts, "Resource
//     versions");
//   - a request identical to one already in flight when it asks for
//     resourceVersion "0" (Any), a given resourceVersion (NotOlderThan and
//     Exact mean the same data for both) or a continue token (the same
//     snapshot): the in-flight answer satisfies its semantic too.
//
// Only successes are shared: when the request fails, each reader sends its
// own (and takes its own retries and backoff), so one caller's cancelled
// context never fails another.
//
// Where the server streams lists from its watch cache (the defaults of
// Kubernetes 1.34 and later), streams cost it little and a gate only makes
// informers wait; use a gate where the server lists, and for resources its
// watch cache does not hold. docs/benchmarks.md ("apiserver cost when 8 informers start at once") has the measurements.
//
// A read that holds a slot for longer than the gate's hold bound
// (WithMaxHold, default one minute: the apiserver's own default
// --request-timeout for a list) stops counting against the slots: the next
// read is admitted, the late one goes on undisturbed and is counted in
// Stats.Overdue and logged at verbosity 1. So a list that a proxy or an
// overloaded server leaves without an answer (a client without a request
// timeout waits for it forever) delays the reads queued behind it by at
// most the hold bound instead of blocking them with it.
//
// The trade-off: the readers that wait sync later (the last of n after
// about n lists' time when reads of different collections are large); a
// slow or stalled read delays the others up to the hold bound; a shared
// answer is copied once per reader in the process of the first.
//
// Share one gate per apiserver among the listers, ListerWatchers and
// reflectors of a process. A nil *Gate admits everything at once and shares
// nothing (the default). A Gate is safe for concurrent use.
type Gate struct {
	mu       sync.Mutex
	slots    int
	maxHold  time.Duration // <= 0: no hold bound
	inFlight int           // reads holding a slot (within the hold bound)
	overdue  int           // reads past the hold bound, still running
	attached int           // reads waiting for an identical request's answer
	queue    []*waiter
	pending  map[string]*flight // identical requests may attach while its sender waits for a slot
	joinable map[string]*flight // in flight, and its answer satisfies an identical request made now
	stats    Stats
}

// Stats says what a Gate did.
type Stats struct {
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
	// most at once so far; Queued the number waiting for one now; Attached
	// the number waiting now for another reader's identical request.
	InFlight, MaxInFlight, Queued, Attached int
	// Overdue counts the reads that held a slot longer than the gate's hold
	// bound (WithMaxHold) and so stopped counting against the slots;
	// OverdueInFlight is the number of them still running now (not in
	// InFlight).
	Overdue         uint64
	OverdueInFlight int
}

// defaultMaxHold is a Gate's hold bound unless WithMaxHold says otherwise:
// the apiserver's default --request-timeout, which ends a list it serves
// itself after one minute.
const defaultMaxHold = time.Minute

// Option configures New.
type Option func(*Gate)

// WithMaxHold sets how long one read may hold a slot before the gate stops
// counting it and admits the next (see Gate). 0 keeps the default (one minute); a
// negative d turns the bound off, so a read without an answer keeps its
// slot until its own context or timeout ends it.
func WithMaxHold(d time.Duration) Option {
	return func(g *Gate) {
		if d != 0 {
			g.maxHold = d
		}
	}
}

// requestKeyer is implemented by the clients whose list request is wholly
// determined by the client and its ListOptions. RequestKey names the
// client: its REST client instance (and so its credentials and transport),
// the request path, content type and list type; "" when it cannot be
// named, which never shares. A Gate shares answers only between requests
// of equal keys and equal ListOptions. The lister's FromClientset,
// FromRESTClient, FromDynamicConfig and FromMetadataConfig clients
// implement it.
type requestKeyer interface {
	RequestKey() string
}

type waiter struct {
	admitted chan struct{} // closed when it holds a slot
	given    bool          // holds a slot (under Gate.mu)
	hold     *hold         // its slot, once given
	flight   *flight       // the identical requests attached to this one, if any
}

// hold is one read's slot, from admission to release.
type hold struct {
	name     string
	rec      metrics.Recorder
	logger   klog.Logger
	timer    *time.Timer // the hold bound, when the gate has one
	overdue  bool        // outlived the hold bound: no longer counted (under Gate.mu)
	released bool        // (under Gate.mu)
}

// flight is one request that identical requests attach to.
type flight struct {
	key       string
	joinable  bool             // attachable while in flight (not only while queued)
	closed    bool             // no more attachments (under Gate.mu)
	followers int              // attached readers (under Gate.mu; final once closed)
	done      chan struct{}    // closed when results is set
	results   []runtime.Object // one copy per follower; nil when the request failed
}

// New returns a gate admitting at most slots collection reads at once,
// each for at most one minute unless WithMaxHold says otherwise.
// slots < 1 is taken as 1.
func New(slots int, opts ...Option) *Gate {
	slots = max(slots, 1)
	g := &Gate{slots: slots, maxHold: defaultMaxHold, pending: map[string]*flight{}, joinable: map[string]*flight{}, stats: Stats{Slots: slots}}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Stats returns what the gate did so far.
func (g *Gate) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stats
	st.InFlight, st.Queued, st.Attached, st.OverdueInFlight = g.inFlight, len(g.queue), g.attached, g.overdue
	return st
}

// Acquire waits for a slot for one collection read that is not a list
// request (a streaming list, until its initial events are over) named name
// (a lister's or reflector's Name), and returns the function that frees it
// (idempotent). It returns ctx's error, and holds nothing, when ctx ends
// first. A read that waited is logged at verbosity 2 with how long, and
// reported to rec (when not nil). A nil gate
// returns at once.
func (g *Gate) Acquire(ctx context.Context, name string, rec metrics.Recorder) (release func(), err error) {
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

// List sends one list request with opts, by calling send, through the gate:
// with a slot, unless an identical request answers it (see Gate); shared
// reports that another reader's request did, and obj is then a copy of its
// answer. client is the client send uses: the answer is shared only when it
// has a method RequestKey() string naming its request (see requestKeyer;
// the lister's From* clients have it). A request of at most one object
// (opts.Limit 1) and any request through a nil gate call send at once. name and rec are
// as for Acquire; a shared answer is logged at verbosity 4 and reported to
// rec too.
func (g *Gate) List(ctx context.Context, name string, rec metrics.Recorder, client any, opts metav1.ListOptions,
	send func(context.Context) (runtime.Object, error)) (obj runtime.Object, shared bool, err error) {
	if g == nil || opts.Limit == 1 {
		obj, err = send(ctx)
		return obj, false, err
	}
	key := ""
	if k, ok := client.(requestKeyer); ok {
		if id := k.RequestKey(); id != "" {
			if b, jerr := json.Marshal(opts); jerr == nil {
				key = id + "?" + string(b)
			}
		}
	}
	// An identical request in flight satisfies resourceVersion "0" (Any),
	// a given resourceVersion and a continue token (the same snapshot); a
	// MostRecent read may share only a request sent after it was made.
	joinable := opts.ResourceVersion != "" || opts.Continue != ""
	return g.list(ctx, key, joinable, name, rec, send)
}

// list sends one list request through the gate: send, with a slot, unless
// an identical request (same key) answers it. key "" is never shared;
// joinable says whether an identical request already in flight may answer
// it.
func (g *Gate) list(ctx context.Context, key string, joinable bool, name string, rec metrics.Recorder,
	send func(context.Context) (runtime.Object, error)) (obj runtime.Object, shared bool, err error) {
	g.mu.Lock()
	if key != "" {
		fl := g.pending[key]
		if fl == nil && joinable {
			fl = g.joinable[key]
		}
		if fl != nil && !fl.closed {
			i := fl.followers
			fl.followers++
			g.attached++
			g.mu.Unlock()
			select {
			case <-fl.done:
			case <-ctx.Done():
				g.mu.Lock()
				g.attached--
				g.mu.Unlock()
				return nil, false, fmt.Errorf("waiting for an identical list request (listgate.Gate): %w", ctx.Err())
			}
			g.mu.Lock()
			g.attached--
			if fl.results != nil {
				g.stats.Shared++
				g.mu.Unlock()
				klog.FromContext(ctx).V(4).Info("List answered by an identical request of another reader (listgate.Gate)", "lister", name)
				if rec != nil {
					rec.ListGateShared(name)
				}
				return fl.results[i], true, nil
			}
			// That request failed: this reader sends its own, and sees its
			// own error if it fails too.
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
func (g *Gate) acquireLocked(ctx context.Context, name string, rec metrics.Recorder, fl *flight) (*hold, error) {
	h := &hold{name: name, rec: rec, logger: klog.FromContext(ctx)}
	if g.inFlight < g.slots && len(g.queue) == 0 {
		g.inFlight++
		g.admitLocked(h, fl)
		g.mu.Unlock()
		return h, nil
	}
	w := &waiter{admitted: make(chan struct{}), hold: h, flight: fl}
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
			g.queue = slices.DeleteFunc(g.queue, func(x *waiter) bool { return x == w })
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
		return nil, fmt.Errorf("waiting for a listgate.Gate slot: %w", ctx.Err())
	}
	waited := max(time.Since(start), time.Nanosecond)
	g.mu.Lock()
	g.stats.Waited++
	g.stats.WaitTime += waited
	g.mu.Unlock()
	h.logger.V(2).Info("Collection read waited for a listgate.Gate slot", "lister", name, "waited", waited, "slots", g.slots)
	if rec != nil {
		rec.ListGateWait(name, waited)
	}
	return h, nil
}

// admitLocked records a read given a slot (g.inFlight already counts it)
// and starts its hold bound: fl stops being pending, and stays attachable
// while in flight only when joinable (a MostRecent request may answer only
// those made before it).
func (g *Gate) admitLocked(h *hold, fl *flight) {
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
func (g *Gate) release(h *hold) {
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
func (g *Gate) overdueHold(h *hold) {
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
	h.logger.V(1).Info("Collection read held a listgate.Gate slot longer than the gate's hold bound: no longer counted, the next read is admitted",
		"lister", h.name, "maxHold", g.maxHold, "queued", queued)
	if h.rec != nil {
		h.rec.ListGateOverdue(h.name)
	}
}

// admitWaitersLocked hands free slots to the longest-waiting reads.
func (g *Gate) admitWaitersLocked() {
	for g.inFlight < g.slots && len(g.queue) > 0 {
		w := g.queue[0]
		g.queue = g.queue[1:]
		g.inFlight++
		w.given = true
		g.admitLocked(w.hold, w.flight)
		close(w.admitted)
	}
}
