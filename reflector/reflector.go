package reflector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/rvwait"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
	"github.com/steadywatch/steadywatch/internal/wirewait"
	"github.com/steadywatch/steadywatch/lister"
)

// Client is the list/watch pair the reflector talks to: lister.Client, so
// every adapter (lister.FromFuncs, FromDynamic, FromMetadata) serves both.
type Client = lister.Client

// Reflector keeps a client-go store in step with the apiserver: list (or
// streaming list), then watch, then recover from every resourceVersion corner
// case of KEP-2523. Create it with New and start it with Run.
type Reflector struct {
	client Client
	list   ListFunc       // Options.List; nil: the lister, page by page (listInto)
	lister *lister.Lister // the default List's, and planList's probe
	// retriesInside reports whether the client is, for now, a caller's
	// whose requests client-go may retry on its own (clients.RetriesInside;
	// nil: never); planList asks it at every step, as the scope check of
	// NewInformerFor's client may change it.
	retriesInside func() bool
	store         cache.ReflectorStore
	expectedType  reflect.Type
	expectedGVK   *schema.GroupVersionKind
	name          string
	o             settings
	// invalid is Options.Validate's error: Run reports it and returns.
	invalid error
	// onError, if set, is given every failed list and watch (the
	// informer's SetWatchErrorHandler; informer.go).
	onError func(context.Context, error)

	// observe, if set (by tests), is given every transition on the Run
	// goroutine.
	observe func(from, to state, w why)

	// Owned by the Run goroutine.
	backoff     *backoff.ExponentialBackOff
	lastFailure time.Time
	// regressBackoff spaces the re-syncs that ended watches force (ended
	// below); progress does not reset it, only Backoff.ResetAfter without
	// such a re-sync does. lastRegress is when the last one was decided.
	regressBackoff *backoff.ExponentialBackOff
	lastRegress    time.Time
	// shortWatches counts consecutive watches that closed at once without progress.
	shortWatches int
	// ended, when set, says why the watch pipeline ended the watch (an
	// event older than what the store holds, or a resourceVersion that does
	// not parse): the reflector re-syncs. endedCode is its reason code.
	ended     string
	endedCode reason.Code
	// rvAdvanced: the resourceVersion advanced since the watch loop last
	// reported it (Metrics.ResourceVersionAdvanced, once per tick).
	rvAdvanced bool
	// moved: the resourceVersion advanced since the watch began (the watch
	// made progress; set by setParsedRV, cleared when a watch begins).
	moved bool
	// quiet: the store was (re)filled and no watch event has arrived since.
	// A relist decided while quiet backs off first, so a server that answers
	// every watch with 410 is not hammered with list+watch pairs.
	quiet bool
	// pipe is the watch pipeline every event passes (shared with the
	// drop-in ListerWatcher): what the store reflects per object, recent
	// deletions, and the verdict on each event.
	pipe      *watchpipe.Pipeline
	items     int // objects the store reflects, as last reported
	lastCheck time.Time
	rvNum     uint64 // status.ResourceVersion parsed, valid if rvNumOK (setRV's cache)
	rvNumOK   bool

	// The store's optional interfaces, asserted once in New.
	rvUpdater     cache.ResourceVersionUpdater
	bookmarkStore cache.ReflectorBookmarkStore
	seen          *rvwait.Tracker // what the store reflects, for WaitForResourceVersion (readwait.go)
	// objects is the store when a list may fill it object by object
	// (objectStore); nil: every list is one Replace.
	objects cache.Store
	// relisting is the list listInto is applying (relist.go: unchanged);
	// unchangedKept counts the objects lists kept without decoding them.
	relisting     atomic.Pointer[relisting]
	unchangedKept atomic.Int64

	running      atomic.Bool
	checkRunning atomic.Bool
	checks       sync.WaitGroup

	mu     sync.RWMutex
	status Status
	report *ConsistencyReport
}

// New returns a reflector that fills store with objects of expectedType
// listed and watched through c. expectedType may be nil (no type check); for
// *unstructured.Unstructured with apiVersion and kind set, the GVK is checked.
// It is also the example object from which o.Lister's Resource and Name are
// derived (lister.Options.Resolve).
//
// store may be any cache.ReflectorStore: a cache.Store/cache.Indexer, a
// DeltaFIFO or RealFIFO (so a SharedIndexInformer-style processing loop or
// controller-runtime can sit on top). Watch events go through
// Add/Update/Delete; bookmarks through Bookmark where the store is a
// cache.ReflectorBookmarkStore; every resourceVersion advance through
// UpdateResourceVersion where it is a cache.ResourceVersionUpdater.
//
// Lists (the first sync and every relist, paginated, streaming or in one
// response) fill a cache.Store or cache.Indexer (or a type embedding one)
// object by object, as the objects arrive, so the store never holds its
// old contents and the whole new list at once: Add for an object it does
// not hold, Update for one it does, then Delete of each object the list no
// longer holds (the object the store held is passed, as a Replace's
// deletions carry it), then the store's Bookmark(the list's
// resourceVersion). Those are the add, update and delete notifications
// client-go's informer derives from a Replace of the same list; readers of
// the store see the objects change one by one instead of at once. Every
// object passes the watch pipeline first: one older than the version the
// store holds for it, or than its deletion, is never applied, and the
// list is abandoned as stale ("stale-list") and asked again not older
// than that object. Streaming lists are applied event by event; lists
// object by object as the lister decodes them (lister.ItemByItem), a list
// in one response (the watch cache's) included, over the SDK's clients that
// decode lists themselves (lister.FromClientset, FromRESTClient,
// FromDynamicConfig, FromMetadataConfig); over other clients
// (lister.FromFuncs), or with a Lister.ListGate (which shares whole
// answers), page by page, a one-response list whole. A queue
// (cache.Queue: DeltaFIFO, RealFIFO) and a cache.UndeltaStore get one
// Replace with the whole list instead: object-by-object calls would give
// a queue's consumer Added/Updated deltas and tombstones without the last
// known object instead of Replaced deltas (RealFIFO also queues a
// Replace's deletions first), and an UndeltaStore would push its contents
// once per object.
//
// The store is reported synced at a list's resourceVersion
// (LastSyncResourceVersion, HasSynced, UpdateResourceVersion, Bookmark)
// only once every object of the list is applied and the absent ones
// deleted. A list that fails midway claims nothing: LastSyncResourceVersion
// and the store's LastStoreSyncResourceVersion stay at the last complete
// list's (client-go's cache.Store sets the latter from each object
// written; the reflector sets it back), the store keeps the objects
// applied (none older than it held), and the reflector lists again,
// never watches: the next complete list deletes whatever it does not hold.
//
// Options that o.Validate rejects make Run log the error and return without
// sending a request (see Validate).
func New(c Client, expectedType runtime.Object, store cache.ReflectorStore, o Options) *Reflector {
	r := &Reflector{
		client:  c,
		list:    o.List,
		store:   store,
		invalid: o.Validate(),
		pipe:    watchpipe.New(watchpipe.Config{Indexed: true, Filter: watchpipe.FilterOf(c)}),
		seen:    rvwait.New(),
	}
	r.rvUpdater, _ = store.(cache.ResourceVersionUpdater)
	r.bookmarkStore, _ = store.(cache.ReflectorBookmarkStore)
	r.objects, _ = objectStore(store)
	if expectedType != nil {
		r.expectedType = reflect.TypeOf(expectedType)
		if u, ok := expectedType.(*unstructured.Unstructured); ok {
			if gvk := u.GroupVersionKind(); !gvk.Empty() {
				r.expectedGVK = &gvk
			}
		}
	}
	r.o = resolve(o, expectedType)
	r.name = r.o.Name
	// The lister sends the default lists, and planList's limit=1 probe
	// also when List is the caller's own.
	if ri, ok := c.(clients.RetriesInside); ok {
		r.retriesInside = ri.RetriesInside
	}
	r.lister = lister.New(c, r.listerOptions())
	r.client = r.lister.Client() // with Options.Lister.Transform, if set
	b := r.o.Backoff.New()       // never stops by itself: a reflector retries until its context ends
	b.Clock = r.o.Clock
	b.Reset()
	r.backoff = b
	rb := r.o.Backoff.New()
	rb.Clock = r.o.Clock
	rb.Reset()
	r.regressBackoff = rb
	r.status = Status{Phase: PhaseNotStarted, Since: r.o.Clock.Now()}
	return r
}

// settings are Options as New resolved them, once: the reflector's own
// fields with their defaults (Options), and Options.Lister resolved with the
// expected type as example (lister.Options: Resource, Name, the scoped
// Server and every other shared setting, read as r.o.Server, r.o.Name, ...).
// Options.Lister holds the same resolved values.
type settings struct {
	Options
	listerSettings
	knobs.Reflector              // Options' knobs, resolved
	lk              knobs.Lister // Options.Lister's knobs, resolved
	// pageSize is the page size of the reflector's own MostRecent, Any and
	// Exact lists: Lister.PageSize, 0 (unpaginated) when it is negative.
	pageSize int64
}

// listerSettings names lister.Options where settings embeds it.
type listerSettings = lister.Options

// resolve returns o's settings for a reflector of expectedType.
func resolve(o Options, expectedType runtime.Object) settings {
	o = o.withDefaults()
	pageSize := o.Lister.PageSize
	if pageSize <= 0 {
		pageSize = lister.Options{}.Resolve(nil).PageSize
	}
	if o.knobs.Unpaginated {
		pageSize = 0
	}
	lk := knobs.ListerOf(&o.Lister)
	if lk.Policy.MaxNewerRVRetries == 0 {
		// The reflector's lists at a resourceVersion are unpaginated
		// NotOlderThan lists (planList, relistQuery); a 410 on one is not
		// the legacy-Exact answer to a paginated list that rule 1's retries
		// at a newer resourceVersion (KEP-2523) are for. Each retry costs a
		// limit=1 read and a list; the MostRecent fallback is one list that
		// is never older than the store.
		lk.Policy.MaxNewerRVRetries = -1
	}
	lo := o.Lister.Resolve(expectedType)
	lok := knobs.ListerOf(&lo)
	if lok.MaxPageSize == 0 {
		lok.MaxPageSize = defaultMaxPageSizeFactor * pageSize
	}
	o.Lister = lo
	return settings{Options: o, listerSettings: lo, Reflector: o.knobs, lk: *lok, pageSize: pageSize}
}

// listerOptions are the options of the reflector's default lister: the
// resolved Options.Lister, with LastObservedRV the reflector's
// LastSyncResourceVersion (rule 1 and list restarts then start from what the
// store already reflects).
func (r *Reflector) listerOptions() lister.Options {
	lo := r.o.Options.Lister
	knobs.ListerOf(&lo).LastObservedRV = r.LastSyncResourceVersion
	knobs.ListerOf(&lo).Unchanged = r.unchanged
	return lo
}

// Name returns the reflector's name (Options.Lister.Name, resolved: lister.Options.Resolve).
func (r *Reflector) Name() string { return r.name }

// LastSyncResourceVersion returns the last resourceVersion the store
// reflects ("" before the first sync): a list's only once the store holds
// all of it (see New). It never goes backwards.
func (r *Reflector) LastSyncResourceVersion() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.status.ResourceVersion
}

// HasSynced reports whether the store has been filled by a complete list
// (or streaming list) at least once.
func (r *Reflector) HasSynced() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.status.Synced
}

// State returns a snapshot of the state machine.
func (r *Reflector) State() Status {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.status
}

// Run lists, watches and recovers until ctx ends. It returns only after every
// goroutine it started has stopped and the open watch (if any) is closed.
// Calling Run twice (even concurrently) is a no-op for the second call.
func (r *Reflector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("reflector", r.name)
	if !r.running.CompareAndSwap(false, true) {
		logger.Error(nil, "Reflector.Run called more than once; ignoring")
		return
	}
	// Every request below, the SDK's own clients' and those of clients
	// built from fallback.NoHiddenRetries, is bounded by ResponseTimeout.
	ctx = wirewait.WithBound(klog.NewContext(ctx, logger), r.o.ResponseTimeout)
	if r.invalid != nil {
		logger.Error(r.invalid, "Reflector not started: its options cannot be honoured")
		r.transition(ctx, stopped{}, stopped{}, because(reason.InvalidOptions, "%v", r.invalid))
		return
	}
	defer r.checks.Wait()
	if r.o.ResyncPeriod > 0 {
		done := make(chan struct{})
		defer func() { <-done }()
		go r.resyncLoop(ctx, done)
	}

	var s state = r.initialState(ctx)
	r.transition(ctx, stopped{}, s, because(reason.Start, "Run called"))
	for {
		next, w := r.step(ctx, s)
		if ctx.Err() != nil {
			if ww, ok := next.(watching); ok {
				ww.w.Stop()
			}
			sit := engine.Situation{Op: engine.OpStop}
			next, w := r.carryOut(ctx, r.decide(sit), sit, fill{}, 0, because(reason.ContextDone, "context ended: %v", context.Cause(ctx)))
			r.transition(ctx, s, next, w)
			return
		}
		r.transition(ctx, s, next, w)
		s = next
	}
}

// step is the state machine: it performs the work of s and returns the next
// state and why. Each case reads as one row: "in this phase, on this outcome,
// go there".
func (r *Reflector) step(ctx context.Context, s state) (state, why) {
	switch s := s.(type) {
	case listing:
		return r.stepList(ctx, s)
	case streamingList:
		return r.stepStream(ctx, s)
	case startingWatch:
		return r.stepStartWatch(ctx, s)
	case watching:
		return r.stepWatch(ctx, s)
	case backingOff:
		t := r.o.Clock.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return stopped{}, because(reason.ContextDone, "context ended while backing off")
		case <-t.C():
			return s.next, because(reason.BackoffDone, "waited %v", s.delay)
		}
	default:
		return stopped{}, because(reason.ContextDone, "unknown state %T", s)
	}
}

func (r *Reflector) transition(ctx context.Context, from, to state, w why) {
	now := r.o.Clock.Now()
	r.mu.Lock()
	r.status.Phase = to.phase()
	r.status.Reason = w.detail
	r.status.Since = now
	r.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Reflector transition", "from", from.phase(), "to", to.phase(), "reason", string(w.code), "detail", w.detail)
	r.o.Metrics.Transition(r.name, string(from.phase()), string(to.phase()), string(w.code))
	if r.observe != nil {
		r.observe(from, to, w)
	}
}

func (r *Reflector) initialState(ctx context.Context) state {
	q := lister.MostRecent()
	if r.o.InitialListSemantic == fallback.Any {
		q = lister.Any()
	}
	return r.syncState(ctx, q, true, reason.Initial)
}

// syncState is the state that (re)fills the store: a streaming list where the
// server is known to honour it, a list otherwise.
func (r *Reflector) syncState(ctx context.Context, q fallback.Query, initial bool, cause reason.Code) state {
	if r.streamingSupported(ctx) && q.Semantic != fallback.Any && q.Semantic != fallback.Exact {
		return streamingList{query: q, initial: initial, cause: cause}
	}
	return listing{query: q, initial: initial, cause: cause}
}

func (r *Reflector) streamingSupported(ctx context.Context) bool {
	return !r.o.DisableStreamingList && r.o.Server != nil &&
		r.o.Server.Capabilities(ctx).Get(capability.StreamingList) == capability.Yes
}

// planList returns the query that fills the store for s, as the decision
// table's list-plan rows choose it (docs/rules.md, op=list-plan): it gathers
// the (re)fill's situation, asks the table, and carries out the row. Two
// rows ask for more before they answer: one reads the server's capabilities
// (where it reads consistent lists: its watch cache from v1.31, KEP-2340,
// or etcd before, whose watch cache can lag, kubernetes/kubernetes#97294),
// one sends a limit=1 MostRecent read (a quorum read of one object) for the
// current resourceVersion, which the list is then NotOlderThan, served from
// the watch cache in one response (KEP-2523; the Kubernetes API Concepts
// page, "Resource versions"). A paginated MostRecent list would read every
// page from etcd before v1.34, which costs the apiserver several times what
// serving the same objects from its cache does (docs/benchmarks.md,
// "apiserver cost when 8 informers start at once"). Where client-go may
// retry the list on its own inside the client (clients.RetriesInside, asked
// again after the limit=1 read, which runs NewInformerFor's scope check),
// the list is the newest, in pages: a lagging watch cache's 504 at a
// resourceVersion would be retried up to 10 times before the lister sees
// it. On error, probe is the query that failed.
func (r *Reflector) planList(ctx context.Context, s listing) (q, probe fallback.Query, err error) {
	q, probe, _, err = r.plan(ctx, s)
	return q, probe, err
}

// plan is planList with the row that chose the query.
func (r *Reflector) plan(ctx context.Context, s listing) (q, probe fallback.Query, d engine.Decision, err error) {
	sit := engine.Situation{
		Op: engine.OpListPlan, Semantic: s.query.Semantic, HasContinue: s.query.Continue != "",
		Initial: s.initial, Retrying: s.attempt > 0, Paginate: r.o.PaginateLists, PageSize: r.o.pageSize > 0,
		ObjectStore: r.objects != nil,
	}
	rv := ""
	for {
		// Asked at every step: the limit=1 read may have run a client's
		// scope check (clients.Inferred), which decides the client later
		// lists go through.
		sit.RetriesInside = r.retriesInside != nil && r.retriesInside()
		d = r.decide(sit)
		switch d.Then {
		case engine.ThenPlanAskServer:
			sit.CacheReads = r.cacheReads(ctx)
			continue
		case engine.ThenPlanProbe:
			// One page of one object (Lister.CurrentResourceVersion), not a
			// list through the lister (which would follow its continue token
			// to the end).
			if rv, _, err = r.lister.CurrentResourceVersion(ctx); err != nil {
				return s.query, lister.MostRecent().WithLimit(1), d, err
			}
			sit.Probe = engine.ProbeNoRV
			if rv != "" && rv != "0" {
				sit.Probe = engine.ProbeRV
			}
			continue
		}
		return r.carryOutPlan(ctx, d, s.query, rv), s.query, d, nil
	}
}

// cacheReads is where Options.Lister.Server says the server reads consistent
// lists from (unknown without one).
func (r *Reflector) cacheReads(ctx context.Context) engine.CacheReads {
	if r.o.Server == nil {
		return engine.CacheReadsUnknown
	}
	switch r.o.Server.Capabilities(ctx).Get(capability.ConsistentListFromCache) {
	case capability.Yes:
		return engine.CacheReadsYes
	case capability.No:
		return engine.CacheReadsNo
	}
	return engine.CacheReadsUnknown
}

// relistQuery is the cheapest list that never goes back in time from rv:
// NotOlderThan(rv), served from the watch cache; MostRecent if there is no rv.
func relistQuery(rv string) fallback.Query {
	if rv == "" || rv == "0" {
		return lister.MostRecent()
	}
	return lister.NotOlderThan(rv)
}

// delay returns the next backoff delay, or the server's Retry-After when it
// is longer; a Retry-After is capped by Options.Lister.MaxRetryAfter (a proxy
// answering "Retry-After: 3600" does not park the reflector for an hour).
func (r *Reflector) delay(retryAfter time.Duration) time.Duration {
	now := r.o.Clock.Now()
	if !r.lastFailure.IsZero() && now.Sub(r.lastFailure) >= r.o.Backoff.ResetAfter {
		r.backoff.Reset()
	}
	r.lastFailure = now
	// The jitter spreads the delay over [0.5, 1.5] times the current
	// interval; knobs.Reflector.Backoff.Max is a cap on the delay itself.
	d := min(r.backoff.NextBackOff(), r.o.Backoff.Max)
	return max(d, min(retryAfter, r.o.lk.Policy.MaxRetryAfter))
}

// relist returns the state that refills the store after a failed watch. A
// relist that follows the previous (re)fill with no watch event in between
// waits a backoff delay first: without it, a server or proxy that answers
// every watch with 410 (or closes streaming lists right after their end
// bookmark) would get list+watch pairs as fast as it can answer them.
func (r *Reflector) relist(next state, retryAfter time.Duration) state {
	if r.quiet || retryAfter > 0 {
		return backingOff{delay: r.delay(retryAfter), next: next}
	}
	return next
}

// progress records that a watch adopted a newer resourceVersion (an event
// or a bookmark did): failures before it and after it are not consecutive, so the
// next failure backs off from Backoff.Initial again. Without this, a few
// dropped watches within ResetAfter (each healthy, delivering events, then
// cut by the network) left the reflector waiting the maximum delay (30s)
// before watching again, observed against a real HA pair in e2e/reflector.
func (r *Reflector) progress() {
	r.quiet = false
	r.resetBackoff()
}

// regressDelay is the wait before a re-sync that a watch forced by
// delivering what the store must not apply (an event older than it holds,
// a resourceVersion that does not parse): the regular delay, or the next
// delay of a backoff of its own when longer. Progress does not reset that
// one, only Backoff.ResetAfter without such a re-sync: a server that
// re-delivers older events after every re-sync also delivers newer ones in
// between, so each round makes progress and then regresses, and the regular
// backoff alone would start afresh every round (measured by the persistent-
// fault soak, docs/bad-server-data.md, "older-event-redelivered").
func (r *Reflector) regressDelay() time.Duration {
	d := r.delay(0)
	now := r.o.Clock.Now()
	if !r.lastRegress.IsZero() && now.Sub(r.lastRegress) >= r.o.Backoff.ResetAfter {
		r.regressBackoff.Reset()
	}
	r.lastRegress = now
	return max(d, min(r.regressBackoff.NextBackOff(), r.o.Backoff.Max))
}

// resetBackoff starts the backoff afresh: the next failure waits
// Backoff.Initial.
func (r *Reflector) resetBackoff() {
	r.shortWatches = 0
	if r.lastFailure.IsZero() {
		return
	}
	r.backoff.Reset()
	r.lastFailure = time.Time{}
}

// ---- listing ----

func (r *Reflector) stepList(ctx context.Context, s listing) (state, why) {
	logger := klog.FromContext(ctx)
	if !s.initial && s.attempt == 0 {
		r.o.Metrics.Relist(r.name, string(s.cause))
	}
	q, probe, err := r.planList(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return stopped{}, because(reason.ContextDone, "context ended while listing")
		}
		return r.listFailed(ctx, s, probe, err)
	}
	snap, rv, err := r.listInto(ctx, q)
	if ctx.Err() != nil {
		snap.abandon()
		return stopped{}, because(reason.ContextDone, "context ended while listing")
	}
	if err != nil {
		snap.abandon()
		if se := (*storeError)(nil); errors.As(err, &se) {
			logger.Error(err, "Unable to apply the list", "query", q.String())
			return r.listEnded(ctx, s, engine.EndedStoreFailed, "", because(reason.ListError, "%v", err))
		}
		return r.listFailed(ctx, s, q, err)
	}
	if err := snap.finish(ctx, rv); err != nil {
		if stale := (*StaleListError)(nil); errors.As(err, &stale) {
			return r.listFailed(ctx, s, q, err)
		}
		return r.listEnded(ctx, s, engine.EndedStoreFailed, "", because(reason.ListError, "store update failed: %v", err))
	}
	return r.listEnded(ctx, s, engine.EndedOK, rv, because(reason.Listed, "listed %d items with %s, served at resourceVersion %q", snap.len(), q, rv))
}

// listEnded carries out the row of a list call that succeeded (op=list-end):
// the store took it whole (a watch from rv follows), or refused it.
func (r *Reflector) listEnded(ctx context.Context, s listing, ending engine.Ending, rv string, w why) (state, why) {
	sit := engine.Situation{Op: engine.OpListEnd, Semantic: s.query.Semantic, Ending: ending}
	return r.carryOut(ctx, r.decide(sit), sit, fill{query: s.query, initial: s.initial, cause: s.cause, attempt: s.attempt, rv: rv}, 0, w)
}

// listInto runs the list q and applies its objects to the store as they
// arrive (snapshot): page by page through the reflector's lister, or from
// the whole answer of Options.List. Each page is checked not older than the
// store before any of its objects is applied. For a store filled object by
// object (objectStore), the lister hands each page's objects over one by one
// as its client decodes them (lister.ItemByItem): a list answered in one
// response is never held whole beside the store. It returns the snapshot
// (to finish, or to abandon on error) and the list's resourceVersion. A
// failure of the store, or an answer that is not a list, is a *storeError.
func (r *Reflector) listInto(ctx context.Context, q fallback.Query) (*snapshot, string, error) {
	snap := r.begin(0)
	if r.list != nil {
		obj, err := r.list(ctx, q)
		if err != nil {
			return snap, "", err
		}
		return snap, listRV(obj), r.applyPage(ctx, snap, obj, q)
	}
	opts := []lister.PageOption{lister.OnRestart(func(fallback.Event) error {
		snap.restart()
		return nil
	})}
	if r.objects != nil {
		// A queue keeps one Replace: it needs the whole list.
		opts = append(opts, lister.ItemByItem(func(obj runtime.Object) error { return r.applyItem(ctx, snap, obj) }))
		r.relisting.Store(&relisting{ctx: ctx, snap: snap})
		defer r.relisting.Store(nil)
	}
	rec, err := r.lister.ListPages(ctx, q, func(page runtime.Object) error {
		return r.applyPage(ctx, snap, page, q)
	}, opts...)
	if err != nil {
		return snap, "", err
	}
	rv := rec.ServedResourceVersion
	if err := r.checkNotStaleRV(rv, q); err != nil {
		return snap, "", err
	}
	return snap, rv, nil
}

// listWhole runs q as one list object: through Options.List, or the
// reflector's lister.
func (r *Reflector) listWhole(ctx context.Context, q fallback.Query) (runtime.Object, error) {
	if r.list != nil {
		return r.list(ctx, q)
	}
	obj, _, err := r.lister.List(ctx, q)
	return obj, err
}

// applyPage checks that page is not older than the store, then applies its
// objects one by one (a page handed over item by item has none: applyItem
// receives them after it).
func (r *Reflector) applyPage(ctx context.Context, snap *snapshot, page runtime.Object, q fallback.Query) error {
	if err := r.checkNotStale(page, q); err != nil {
		return err
	}
	items, err := meta.ExtractListWithAlloc(page)
	if err != nil {
		return &storeError{op: "unable to understand list result", err: err}
	}
	for i, it := range items {
		if err := r.applyItem(ctx, snap, it); err != nil {
			return err
		}
		items[i] = nil
	}
	return nil
}

// applyItem applies one object of a page checked by applyPage.
func (r *Reflector) applyItem(ctx context.Context, snap *snapshot, obj runtime.Object) error {
	if err := snap.add(ctx, obj); err != nil {
		if se := (*StaleListError)(nil); errors.As(err, &se) {
			return err
		}
		return &storeError{op: "store rejected a listed object", err: err}
	}
	return nil
}

// storeError is a list that could not be applied: the store failed, or the
// answer is not a list. Retried after a backoff, as the same list.
type storeError struct {
	op  string
	err error
}

func (e *storeError) Error() string { return e.op + ": " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func (s listing) retry() listing { s.attempt++; return s }

func (r *Reflector) listFailed(ctx context.Context, s listing, q fallback.Query, err error) (state, why) {
	r.reportError(ctx, err)
	// The choice is a row of the one decision table (OpRelist).
	class, retryAfter := classify(err)
	required := ""
	if stale := (*StaleListError)(nil); errors.As(err, &stale) {
		// Never go back in time: the list was older than the store.
		class, required = vocab.ServedOlder, stale.Required
		klog.FromContext(ctx).Info("Rejected a list older than the store", "query", q.String(), "served", stale.Served, "required", stale.Required)
	} else {
		klog.FromContext(ctx).V(2).Info("List failed", "query", q.String(), "class", class.String(), "err", err)
	}
	le := (*lister.Error)(nil)
	sit := engine.Situation{Op: engine.OpRelist, Semantic: q.Semantic, Class: class,
		AttemptsLeft: s.attempt < max(r.o.MaxStaleListRetries, 0),
		RetriesSpent: errors.As(err, &le) && reason.Code(le.Reason) == reason.RetriesExhausted}
	d := r.decide(sit)
	next := s.retry()
	switch d.Action {
	case vocab.Relist:
		next.query = relistQuery(required)
	case vocab.FallbackMostRecent:
		next.query = lister.MostRecent()
	}
	w := because(d.Reason, "%s failed (%s): %v; listing %s", q, class, err, next.query).by(d, sit)
	return r.after(d.Wait, next, retryAfter, w)
}

// checkNotStale rejects a list older than checkNotStaleRV allows.
func (r *Reflector) checkNotStale(obj runtime.Object, q fallback.Query) error {
	return r.checkNotStaleRV(listRV(obj), q)
}

// checkNotStaleRV rejects a list served at served when that is older than
// the store. A list of the reflector's lister is never older than the
// NotOlderThan it asks: the lister's engine refuses such an answer before
// any of it is handed over (a whole page before the page function, a page
// handed over item by item from its ListMeta before its first item) and
// retries it within the call. A list of Options.List, the caller's own
// function, is checked by no engine: it is also held here to the
// NotOlderThan asked. (A streaming list is not a list call either: its
// initial-events-end bookmark is checked against the store in stepStream.)
func (r *Reflector) checkNotStaleRV(served string, q fallback.Query) error {
	required := r.LastSyncResourceVersion()
	if r.list != nil && q.Semantic == fallback.NotOlderThan && (required == "" || isOlder(required, q.ResourceVersion)) {
		required = q.ResourceVersion
	}
	if required != "" && isOlder(served, required) {
		return &StaleListError{Required: required, Served: served}
	}
	return nil
}

func listRV(obj runtime.Object) string {
	m, err := meta.ListAccessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// setRV records rv as the store's resourceVersion, advanced at now (zero:
// the watch loop reports the advance at its next tick). It never
// goes backwards (when both parse); force is for a Replace, whose rv the
// store now reflects. It runs on the Run goroutine only (the sole writer of
// status.ResourceVersion), once per watch event: it allocates nothing and
// builds no log arguments unless V(5) is enabled.
func (r *Reflector) setRV(logger logr.Logger, rv string, force bool, now time.Time) {
	n, err := strconv.ParseUint(rv, 10, 64)
	r.setParsedRV(logger, rv, n, err == nil, force, now)
}

// setParsedRV is setRV with rv already parsed (nOK: it is the number n).
func (r *Reflector) setParsedRV(logger logr.Logger, rv string, n uint64, nOK, force bool, now time.Time) {
	if rv == "" {
		return
	}
	// isOlder(rv, prev), with prev parsed once when it was stored.
	if !force && !nOK && r.rvNumOK {
		// This server's versions parse; one that does not (a bookmark at
		// "abc") is not adopted: every watch from it would fail.
		r.o.Metrics.Fallback(r.name, string(reason.BadResourceVersion))
		logger.Info("Ignoring a resourceVersion that does not parse on a server whose versions do", "resourceVersion", rv, "current", r.status.ResourceVersion)
		return
	}
	r.mu.Lock()
	prev := r.status.ResourceVersion
	if !force && (prev == rv || (nOK && r.rvNumOK && n < r.rvNum)) {
		r.mu.Unlock()
		return
	}
	r.status.ResourceVersion = rv
	r.mu.Unlock()
	r.rvNum, r.rvNumOK = n, nOK
	r.reflects(rv)
	if r.rvUpdater != nil {
		r.rvUpdater.UpdateResourceVersion(rv)
	}
	if prev != rv {
		r.moved = true
		if now.IsZero() {
			r.rvAdvanced = true
		} else {
			r.o.Metrics.ResourceVersionAdvanced(r.name, now)
		}
		if v := logger.V(5); v.Enabled() {
			v.Info("ResourceVersion advanced", "from", prev, "to", rv)
		}
	}
}

// reportRVAdvanced reports a resourceVersion advance that setRV left for the
// watch loop's tick (Metrics.ResourceVersionAdvanced, at the tick's time).
func (r *Reflector) reportRVAdvanced() {
	if r.rvAdvanced {
		r.rvAdvanced = false
		r.o.Metrics.ResourceVersionAdvanced(r.name, r.o.Clock.Now())
	}
}

// ---- streaming list ----

func (r *Reflector) stepStream(ctx context.Context, s streamingList) (state, why) {
	logger := klog.FromContext(ctx)
	if !s.initial && s.attempt == 0 {
		r.o.Metrics.Relist(r.name, string(s.cause))
	}
	opts := r.selectors()
	opts.ResourceVersion = s.query.ResourceVersion
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	opts.SendInitialEvents = ptrTo(true)
	opts.AllowWatchBookmarks = true
	opts.TimeoutSeconds = ptrTo(r.watchTimeoutSeconds())
	// The stream holds a ListGate slot until its initial events are over:
	// the apiserver is sending the collection.
	release, err := r.o.ListGate.Acquire(ctx, r.name, r.o.Metrics)
	if err != nil {
		return stopped{}, because(reason.ContextDone, "context ended while waiting for a listgate.Gate slot")
	}
	defer release()
	opened := r.o.Clock.Now()
	// The initial events are applied to the store as they arrive; those
	// the store holds unchanged are kept undecoded (streamkeep.go).
	ev := &streamed{snap: r.begin(0)}
	wctx := ctx
	if ev.keep = r.streamKeeper(ev.snap); ev.keep != nil {
		wctx = decode.WithKnown(ctx, decode.Known{Object: ev.keep.known, Handed: ev.keep.handedOn})
	}
	w, err := watchpipe.OpenWatch(wctx, r.client, opts, r.o.InitialEventsTimeout)
	if ctx.Err() != nil {
		if err == nil {
			w.Stop()
		}
		return stopped{}, because(reason.ContextDone, "context ended while opening a streaming list")
	}
	if err != nil {
		return r.streamOpenFailed(ctx, s, err)
	}

	stop := make(chan struct{})
	defer context.AfterFunc(ctx, func() { close(stop) })()
	var expected <-chan int
	if !r.o.lk.DisableInitialEventsCount {
		expected = watchpipe.ExpectInitialEvents(ctx, r.client, r.selectors(), r.o.Server)
	}
	out, detail := watchpipe.AwaitInitialEvents(stop, w, watchpipe.GuardOptions{
		Timeout:        r.o.InitialEventsTimeout,
		Expected:       expected,
		FromMostRecent: s.query.ResourceVersion == "",
		Server:         r.o.Server,
	}, logger, func(e watch.Event) bool { return r.applyStreamed(ctx, ev, e) })
	release()
	return r.streamEnded(ctx, s, w, opened, out, detail, ev)
}

// streamOpenFailed is the state after a streaming list's watch could not
// be opened: the row of the decision table for what the error shows
// (OpStreamOpen).
func (r *Reflector) streamOpenFailed(ctx context.Context, s streamingList, err error) (state, why) {
	class, retryAfter := classify(err)
	sit := engine.Situation{Op: engine.OpStreamOpen, Semantic: s.query.Semantic, Class: class,
		Rejected: engine.RejectsStreamingList(err), NoResponse: errors.Is(err, watchpipe.ErrNoWatchResponse)}
	d := r.decide(sit)
	var w why
	switch {
	case d.Reason == reason.StreamRejected:
		r.observeStreaming(capability.No, fmt.Sprintf("streaming list rejected: %v", err))
		w = because(reason.StreamRejected, "server rejects sendInitialEvents (%v): listing instead", err)
	case d.Reason == reason.TooLargeRV:
		w = because(reason.TooLargeRV, "streaming %s: too large resource version (Retry-After %v); MostRecent instead", s.query, retryAfter)
	case d.Then == engine.ThenListMostRecent:
		// The open itself hung (a proxy holding the stream, or the REST
		// client's own retries of a 504 inside it).
		w = because(d.Reason, "streaming %s: %v; listing MostRecent instead", s.query, err)
	case d.Wait == engine.WaitNone:
		// The caller's own invalid request (a bad selector): not evidence
		// about the server. The list says the same to the caller.
		w = because(d.Reason, "streaming list refused as invalid (%v): the request itself, not the server's streaming; listing instead", err)
	default:
		w = because(d.Reason, "streaming list failed (%s): %v; listing instead", class, err)
	}
	return r.carryOut(ctx, d, sit, fill{query: s.query, initial: s.initial, cause: s.cause, attempt: s.attempt}, retryAfter, w)
}

// streamed is what a streaming list's initial events left: the snapshot
// they filled (and the objects its decoder kept), the initial-events-end
// bookmark's resourceVersion, the ERROR event's error and the store's.
type streamed struct {
	snap     *snapshot
	keep     *streamKeep // nil: every object is decoded
	endRV    string
	failed   error
	applyErr error
}

// applyStreamed applies one initial event of a streaming list to ev's
// snapshot; false stops the stream (the store rejected an object).
func (r *Reflector) applyStreamed(ctx context.Context, ev *streamed, e watch.Event) bool {
	switch e.Type {
	case watch.Added:
		if ev.keep.take(e.Object) {
			ev.applyErr = ev.snap.keepStreamed(ctx, e.Object)
		} else {
			ev.applyErr = ev.snap.add(ctx, e.Object)
		}
		if ev.applyErr != nil {
			return false
		}
	case watch.Bookmark: // the initial-events-end bookmark: the guard hands over no other
		if m, err := meta.Accessor(e.Object); err == nil {
			ev.endRV = m.GetResourceVersion()
		}
		r.o.Metrics.Bookmark(r.name)
	case watch.Error:
		ev.failed = apierrors.FromObject(e.Object)
	}
	return true
}

// streamEnded is the state after a streaming list's initial events ended
// (how: out): the snapshot is finished or abandoned, then the row of the
// decision table for how it ended (OpStreamEnd) is carried out.
func (r *Reflector) streamEnded(ctx context.Context, s streamingList, w watch.Interface, opened time.Time, out watchpipe.InitialEventsOutcome, detail string, ev *streamed) (state, why) {
	if out != watchpipe.InitialEventsEnded {
		ev.snap.abandon()
	}
	if out == watchpipe.InitialEventsStopped && ev.applyErr == nil {
		w.Stop()
		return stopped{}, because(reason.ContextDone, "context ended during a streaming list")
	}
	sit, f, retryAfter, wy := r.streamEnding(ctx, s, out, detail, ev)
	f.w, f.opened = w, opened
	d := r.decide(sit)
	logger := klog.FromContext(ctx)
	switch d.Reason {
	case reason.StreamIgnored:
		// A server that silently ignores sendInitialEvents (v1.18) sends plain
		// ADDED events and never the end bookmark: the guard recorded it, so
		// the next sync lists without waiting.
		logger.Info("Server ignores streaming lists; listing instead", "detail", detail)
	case reason.BadResourceVersion:
		// Every watch from it would fail: the streaming list is abandoned
		// and the same sync is made with a list.
		r.o.Metrics.Fallback(r.name, string(reason.BadResourceVersion))
		logger.Info("Abandoning a streaming list whose initial-events-end bookmark has a resourceVersion that does not parse on a server whose versions do",
			"reason", string(reason.BadResourceVersion), "resourceVersion", ev.endRV)
	}
	if d.Then != engine.ThenWatch {
		w.Stop()
	}
	return r.carryOut(ctx, d, sit, f, retryAfter, wy)
}

// streamEnding gathers how a streaming list ended (OpStreamEnd), finishing
// the snapshot when the initial events ended well at a resourceVersion the
// store may take: the situation, what the next state is built from, the
// server's Retry-After and the transition's reason.
func (r *Reflector) streamEnding(ctx context.Context, s streamingList, out watchpipe.InitialEventsOutcome, detail string, ev *streamed) (engine.Situation, fill, time.Duration, why) {
	sit := engine.Situation{Op: engine.OpStreamEnd}
	f := fill{query: s.query, initial: s.initial, cause: s.cause, attempt: s.attempt}
	stale := (*StaleListError)(nil)
	switch out {
	case watchpipe.InitialEventsStopped:
		if errors.As(ev.applyErr, &stale) {
			sit.Ending, f.rv = engine.EndedStale, stale.Required
			return sit, f, 0, because(reason.StaleList, "streaming %s: %v", s.query, ev.applyErr)
		}
		sit.Ending = engine.EndedStoreFailed
		return sit, f, 0, because(reason.ListError, "store rejected a streamed object: %v", ev.applyErr)
	case watchpipe.InitialEventsClosed, watchpipe.InitialEventsCut:
		sit.Ending = engine.EndedCut
		return sit, f, 0, because(reason.StreamFailed, "streaming list closed before its initial-events-end bookmark (%s); listing instead", detail)
	case watchpipe.InitialEventsError:
		class, retryAfter := classify(ev.failed)
		sit.Ending, sit.Class = engine.EndedError, class
		if class == vocab.Gone {
			return sit, f, retryAfter, because(reason.ListGone, "streaming %s is gone (410): streaming MostRecent", s.query)
		}
		return sit, f, retryAfter, because(reason.StreamFailed, "streaming list error (%s): %v; listing instead", class, ev.failed)
	case watchpipe.InitialEventsNotStreaming:
		sit.Ending = engine.EndedIgnored
		return sit, f, 0, because(reason.StreamIgnored, "streaming list ignored: %s; listing instead", detail)
	}
	if r.pipe.Unparsable(ev.endRV) {
		ev.snap.abandon()
		sit.Ending = engine.EndedBadRV
		return sit, f, 0, because(reason.BadResourceVersion, "the initial-events-end bookmark's resourceVersion %q does not parse; listing instead", ev.endRV)
	}
	if last := r.LastSyncResourceVersion(); last != "" && isOlder(ev.endRV, last) {
		ev.snap.abandon()
		sit.Ending, f.rv = engine.EndedStale, last
		return sit, f, 0, because(reason.StaleList, "%v", &StaleListError{Required: last, Served: ev.endRV})
	}
	prev := r.LastSyncResourceVersion()
	advanced := prev == "" || isOlder(prev, ev.endRV)
	if err := ev.snap.finish(ctx, ev.endRV); err != nil {
		if errors.As(err, &stale) {
			// The stream lacks an object the store holds at a newer version.
			sit.Ending, f.rv = engine.EndedStale, stale.Required
			return sit, f, 0, because(reason.StaleList, "%v", stale)
		}
		sit.Ending = engine.EndedStoreFailed
		return sit, f, 0, because(reason.ListError, "store update failed: %v", err)
	}
	if r.bookmarkStore != nil {
		if err := r.bookmarkStore.Bookmark(ev.endRV); err != nil {
			klog.FromContext(ctx).Error(err, "Unable to pass bookmark to the store", "resourceVersion", ev.endRV)
		}
	}
	if advanced {
		// A completed streaming list that adopted a newer resourceVersion
		// is progress: the backoff starts afresh. (The store stays quiet: a
		// relist decided before the next watch event still backs off.)
		r.resetBackoff()
	}
	sit.Ending, f.rv = engine.EndedOK, ev.endRV
	return sit, f, 0, because(reason.Streamed, "streamed %d items, initial events end at resourceVersion %q", ev.snap.len(), ev.endRV)
}

func (r *Reflector) observeStreaming(s capability.Support, detail string) {
	if r.o.Server != nil {
		r.o.Server.Observe(capability.Observation{Capability: capability.StreamingList, Support: s, Detail: detail})
	}
}

// ---- watch ----

// selectors are the label and field selectors every request of the
// reflector sends (lists, watches, streaming lists and the count beside a
// streaming list), so that nothing outside them enters the store.
func (r *Reflector) selectors() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: r.o.Lister.LabelSelector, FieldSelector: r.o.Lister.FieldSelector}
}

func (r *Reflector) watchTimeoutSeconds() int64 {
	lo, hi := r.o.WatchTimeoutMin, r.o.WatchTimeoutMax
	d := lo
	if hi > lo {
		d += time.Duration(rand.Int64N(int64(hi - lo + 1)))
	}
	s := int64(d / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

func (r *Reflector) stepStartWatch(ctx context.Context, s startingWatch) (state, why) {
	opts := r.selectors()
	opts.ResourceVersion = s.rv
	opts.AllowWatchBookmarks = true
	opts.TimeoutSeconds = ptrTo(r.watchTimeoutSeconds())
	opened := r.o.Clock.Now()
	w, err := r.client.Watch(ctx, opts)
	if ctx.Err() != nil {
		if err == nil {
			w.Stop()
		}
		return stopped{}, because(reason.ContextDone, "context ended while opening a watch")
	}
	if err == nil {
		return watching{rv: s.rv, w: w, opened: opened}, because(reason.WatchOpened, "watch opened at resourceVersion %q", s.rv)
	}
	return r.watchFailed(ctx, s.rv, s.attempt, err)
}

// watchFailed decides what follows a failed watch (at start or as an ERROR
// event): the heart of KEP-2523 recovery.
func (r *Reflector) watchFailed(ctx context.Context, rv string, attempt int, err error) (state, why) {
	r.reportError(ctx, err)
	// The choice is a row of the one decision table (OpWatch).
	class, retryAfter := classify(err)
	klog.FromContext(ctx).V(2).Info("Watch failed", "resourceVersion", rv, "class", class.String(), "err", err)
	sit := engine.Situation{Op: engine.OpWatch, Class: class, Resumable: resumable(rv),
		AttemptsLeft: attempt < max(r.o.MaxTooLargeWatchRetries, 0)}
	d := r.decide(sit)
	var (
		next state = startingWatch{rv: rv, attempt: attempt + 1}
		then       = "watching again from " + strconv.Quote(rv)
	)
	switch {
	case d.Reason == reason.NoResumeVersion:
		// A watch from "" or "0" resumes nothing (resumable): list.
		return r.carryOut(ctx, d, sit, fill{}, retryAfter,
			because(reason.NoResumeVersion, "watch from %q failed (%s, Retry-After %v): %v; listing %s", rv, class, retryAfter, err, (fallback.Query{Semantic: fallback.MostRecent})))
	case d.Action == vocab.Relist:
		next, then = r.syncState(ctx, relistQuery(rv), false, d.Reason), "relisting "+relistQuery(rv).String()
	case d.Action == vocab.FallbackMostRecent:
		next, then = r.syncState(ctx, (fallback.Query{Semantic: fallback.MostRecent}), false, d.Reason), "relisting "+(fallback.Query{Semantic: fallback.MostRecent}).String()
	default:
		r.o.Metrics.WatchRestart(r.name, string(d.Reason))
	}
	what := fmt.Sprintf("failed (%s, Retry-After %v)", class, retryAfter)
	if class == vocab.Gone {
		what = "410 Gone"
	}
	w := because(d.Reason, "watch from %q: %s; %s (%v)", rv, what, then, err).by(d, sit)
	return r.after(d.Wait, next, retryAfter, w)
}

// resumable reports whether a watch can resume from rv. A watch from "" or
// "0" is "get state and start at most recent" (Kubernetes API Concepts,
// "Resource versions"): it begins with synthetic ADDED events for what
// exists now and never sends a DELETED for an object the store still holds
// and the server no longer has. No real apiserver lists at "0", but a
// server's answer is untrusted input: the reflector never resumes a watch
// from there, it lists.
func resumable(rv string) bool { return rv != "" && rv != "0" }

func (r *Reflector) stepWatch(ctx context.Context, s watching) (state, why) {
	defer s.w.Stop()
	logger := klog.FromContext(ctx)
	// Every event passes the watch pipeline, which decides whether it is
	// applied. A watch started at "" or "0" begins with synthetic ADDED
	// events in no particular order: their resourceVersions do not advance
	// ours until the pipeline follows (an event that is not an ADDED, or a
	// bookmark, shows the backlog ended).
	pw := r.pipe.Watch(s.rv, false)
	// Stall detection and the resourceVersion-advanced metric run on a
	// timer (every watchpipe.StallCheckInterval(StallTimeout)), not per
	// event: an event only counts itself.
	stall := watchpipe.NewStall(r.o.StallTimeout)
	tick := stall.Interval()
	// A timer re-armed at each tick, not a Ticker: a stopped fake-clock
	// Ticker still counts as a waiter (k8s.io/utils/clock/testing).
	ticker := r.o.Clock.NewTimer(tick)
	defer ticker.Stop()
	defer r.reportRVAdvanced()
	events := 0
	ch := s.w.ResultChan()
	// progressed: the watch adopted a newer resourceVersion. Only that is
	// progress: events that adopt nothing (a bookmark whose version does
	// not parse) do not reset the backoff, and a watch that ends without it
	// is a failure, however it ended.
	progressed := false
	r.moved = false
	for {
		var (
			ev watch.Event
			ok bool
		)
		// Fast path: an event that is already there (a sender waiting) is
		// taken without the select below; every 64th event goes through
		// the select, so a flood of events cannot keep the context's end
		// or the ticker from being seen.
		if events&63 != 0 {
			select {
			case ev, ok = <-ch:
				goto received
			default:
			}
		}
		select {
		case <-ctx.Done():
			return stopped{}, because(reason.ContextDone, "context ended while watching")
		case <-ticker.C():
			ticker.Reset(tick)
			switch stall.Check(uint64(events)) {
			case watchpipe.Advanced:
				r.reportRVAdvanced()
			case watchpipe.Stalled:
				return r.watchStalled(ctx)
			}
			continue
		case ev, ok = <-ch:
		}
	received:
		{
			if !ok {
				return r.watchClosed(ctx, s, events, progressed)
			}
			if ev.Type == watch.Error {
				return r.watchFailed(ctx, r.LastSyncResourceVersion(), 0, apierrors.FromObject(ev.Object))
			}
			events++
			r.handleEvent(ctx, logger, pw, ev)
			if r.ended != "" {
				return r.watchRegressed(ctx) // never back in time

			}
			if events == 1 {
				r.reportRVAdvanced() // the first event of a watch at once, later ones on the tick
			}
			if !progressed && r.moved {
				progressed = true
				r.progress()
			}
		}
	}
}

// watchClosed is the state after the server closed a watch that saw
// events events and adopted a newer resourceVersion if progressed: the row
// of the decision table for it (OpWatchEnd).
func (r *Reflector) watchClosed(ctx context.Context, s watching, events int, progressed bool) (state, why) {
	rv, lasted := r.LastSyncResourceVersion(), r.o.Clock.Since(s.opened)
	sit := engine.Situation{Op: engine.OpWatchEnd, Ending: engine.EndedClosed, Resumable: resumable(rv), Progressed: progressed,
		Short: lasted < r.o.ShortWatch, AttemptsLeft: r.shortWatches+1 <= max(r.o.MaxShortWatches, 0)}
	d := r.decide(sit)
	var w why
	switch {
	case d.Reason == reason.NoResumeVersion:
		w = noResume(rv, fmt.Sprintf("closed after %d events", events))
	case d.Reason == reason.ShortWatch && d.Then == engine.ThenWatchAgain:
		r.shortWatches++
		w = because(reason.ShortWatch, "watch closed after %v and %d events without progress", lasted, events)
	case d.Reason == reason.ShortWatch:
		// Watches from rv keep ending at once with nothing: a server whose
		// history is gone but never says 410.
		r.shortWatches = 0
		w = because(reason.ShortWatch, "%d watches from %q closed at once without progress; relisting %s", max(r.o.MaxShortWatches, 0)+1, rv, relistQuery(rv))
	case d.Wait == engine.WaitNone: // it progressed
		w = because(d.Reason, "watch closed after %d events; resuming from %q", events, rv)
	default:
		w = because(d.Reason, "watch closed after %d events without progress; resuming from %q", events, rv)
	}
	return r.watchEnded(ctx, d, sit, rv, w)
}

// watchEnded carries out a row for a watch that ended (OpWatchEnd): a
// row that watches again counts a watch restart.
func (r *Reflector) watchEnded(ctx context.Context, d engine.Decision, sit engine.Situation, rv string, w why) (state, why) {
	if d.Then == engine.ThenWatchAgain {
		r.o.Metrics.WatchRestart(r.name, string(d.Reason))
	}
	return r.carryOut(ctx, d, sit, fill{rv: rv}, 0, w)
}

// noResume is the reason of a re-sync after a watch ended (how: detail)
// while the store's resourceVersion is rv, which no watch can resume from
// (resumable). The watch made no progress (progress adopts a
// resourceVersion other than "" and "0"), so the delay grows as after any
// failure.
func noResume(rv, detail string) why {
	return because(reason.NoResumeVersion, "watch from %q %s; a watch cannot resume from there, listing %s", rv, detail, fallback.Query{Semantic: fallback.MostRecent})
}

// watchStalled is the state after a watch saw no event or bookmark for
// Options.StallTimeout (OpWatchEnd).
func (r *Reflector) watchStalled(ctx context.Context) (state, why) {
	rv := r.LastSyncResourceVersion()
	sit := engine.Situation{Op: engine.OpWatchEnd, Ending: engine.EndedStalled, Resumable: resumable(rv)}
	d := r.decide(sit)
	w := because(d.Reason, "no event or bookmark for %v; restarting the watch from %q", r.o.StallTimeout, rv)
	if d.Reason == reason.NoResumeVersion {
		w = noResume(rv, "stalled")
	}
	return r.watchEnded(ctx, d, sit, rv, w)
}

// watchRegressed is the state after the pipeline refused an event that
// would take the store back in time (r.ended says why; OpWatchEnd): never
// back in time, re-sync with a list not older than the store. A rejected
// event is not progress: a server that re-delivers it after every relist
// meets a growing backoff.
func (r *Reflector) watchRegressed(ctx context.Context) (state, why) {
	detail, code := r.ended, r.endedCode
	r.ended, r.endedCode = "", ""
	rv := r.LastSyncResourceVersion()
	sit := engine.Situation{Op: engine.OpWatchEnd, Ending: engine.EndedStaleEvent, Resumable: resumable(rv)}
	if code == reason.BadResourceVersion {
		sit.Ending = engine.EndedBadRV
	}
	d := r.decide(sit)
	return r.watchEnded(ctx, d, sit, rv, because(d.Reason, "%s; relisting %s after a backoff delay", detail, relistQuery(rv)))
}

// handleEvent passes one watch event through the pipeline pw and applies it
// to the store when the verdict says so. It runs once per event: the
// common case (an event for a known object) allocates nothing of its own,
// reads no clock and takes the status lock once.
func (r *Reflector) handleEvent(ctx context.Context, logger logr.Logger, pw *watchpipe.Watch, ev watch.Event) {
	if ev.Type != watch.Bookmark && !r.typeOK(ctx, ev.Object) {
		return
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		logger.Error(err, "Unable to understand watch event", "type", ev.Type)
		return
	}
	rv := m.GetResourceVersion()
	if ev.Type == watch.Bookmark {
		if pw.Bookmark(rv, false) == watchpipe.Drop {
			// Every watch from it would fail: not adopted.
			r.o.Metrics.Fallback(r.name, string(reason.BadResourceVersion))
			logger.Info("Ignoring a bookmark whose resourceVersion does not parse on a server whose versions do", "resourceVersion", rv, "current", r.LastSyncResourceVersion())
			return
		}
		r.o.Metrics.Bookmark(r.name)
		if r.bookmarkStore != nil {
			if err := r.bookmarkStore.Bookmark(rv); err != nil {
				logger.Error(err, "Store rejected a bookmark", "resourceVersion", rv)
			}
		}
		n, ok := pw.LastParsed()
		r.setParsedRV(logger, rv, n, ok, false, time.Time{})
		r.maybeCheckConsistency(ctx, rv)
		return
	}
	switch v, held := pw.Event(ev.Type, m); v {
	case watchpipe.Drop:
		return
	case watchpipe.DeliverAsDeleted:
		ev.Type = watch.Deleted
	case watchpipe.EndStale:
		r.o.Metrics.Fallback(r.name, string(reason.StaleEvent))
		obj := cache.NewObjectName(m.GetNamespace(), m.GetName())
		r.ended, r.endedCode = fmt.Sprintf("%s %s at resourceVersion %s comes after %d was already applied", ev.Type, obj, rv, held), reason.StaleEvent
		logger.Info("Ignoring a watch event older than what the store already reflects", "type", ev.Type, "object", obj, "event", rv, "applied", held)
		return
	case watchpipe.EndUnparsable:
		r.o.Metrics.Fallback(r.name, string(reason.BadResourceVersion))
		obj := cache.NewObjectName(m.GetNamespace(), m.GetName())
		r.ended, r.endedCode = fmt.Sprintf("%s %s carries resourceVersion %q, which does not parse on a server whose versions do", ev.Type, obj, rv), reason.BadResourceVersion
		logger.Info("Ignoring a watch event whose resourceVersion does not parse on a server whose versions do", "type", ev.Type, "object", obj, "resourceVersion", rv)
		return
	}
	switch ev.Type {
	case watch.Added:
		err = r.store.Add(ev.Object)
	case watch.Modified:
		err = r.store.Update(ev.Object)
	case watch.Deleted:
		err = r.store.Delete(ev.Object)
	default:
		logger.Info("Ignoring unknown watch event type", "type", ev.Type)
		return
	}
	if err != nil {
		logger.Error(err, "Store rejected a watch event", "type", ev.Type, "object", cache.NewObjectName(m.GetNamespace(), m.GetName()))
	}
	if items := r.pipe.Live(); items != r.items && items >= 0 {
		r.items = items
		r.mu.Lock()
		r.status.Items = items
		r.mu.Unlock()
		r.o.Metrics.Items(r.name, items)
	}
	if pw.Following() {
		n, ok := pw.LastParsed()
		r.setParsedRV(logger, rv, n, ok, false, time.Time{})
	}
}

// typeOK reports whether obj has the expected type (and GVK for unstructured).
func (r *Reflector) typeOK(ctx context.Context, obj runtime.Object) bool {
	if r.expectedType != nil && reflect.TypeOf(obj) != r.expectedType {
		klog.FromContext(ctx).Error(nil, "Ignoring object of unexpected type", "expected", r.expectedType, "actual", reflect.TypeOf(obj))
		return false
	}
	if r.expectedGVK != nil && obj.GetObjectKind().GroupVersionKind() != *r.expectedGVK {
		klog.FromContext(ctx).Error(nil, "Ignoring object of unexpected GVK", "expected", *r.expectedGVK, "actual", obj.GetObjectKind().GroupVersionKind())
		return false
	}
	return true
}

func keyRV(obj any) (key, rv string, ok bool) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", "", false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return k, "", true
	}
	return k, m.GetResourceVersion(), true
}

func (r *Reflector) resyncLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := r.o.Clock.NewTicker(r.o.ResyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := r.store.Resync(); err != nil {
				klog.FromContext(ctx).Error(err, "Store resync failed")
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// classify returns fallback's class of err and the server's Retry-After (0 if none).
func classify(err error) (vocab.Class, time.Duration) {
	d, _ := engine.RetryAfter(err)
	return engine.Classify(err), d
}
