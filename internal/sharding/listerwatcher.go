package sharding

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
	"github.com/steadywatch/steadywatch/metrics"
)

// Capability is what the SDK learns about a server (per API group/version,
// with capability.ForGroupVersion) from the answers to a shardSelector: Yes when
// a list's shardInfo echoed it, No when a list came back without shardInfo
// or a watch delivered an object outside the range.
const Capability capability.Capability = "shardSelector"

// WrapOptions configures Wrap.
type WrapOptions struct {
	// Selector returns the range to hold, read at every list (a
	// Membership's CacheSelector, or a fixed Selector). Required. An empty
	// Selector holds everything and sends no parameter.
	Selector func() Selector
	// Server receives what the answers prove (Capability). Nil: nothing is
	// recorded.
	Server compat.Server
	// Metrics and Name: the fallbacks above are counted as
	// Metrics.Fallback(Name, reason). Default metrics.Nop, "shard".
	Metrics metrics.Recorder
	Name    string
}

// ListerWatcher holds one range of a resource's objects, on every
// adoption path (it is a cache.ListerWatcher decorator: wrap the drop-in
// steadywatch ListerWatcher, any client-go ListWatch, or give it to
// reflector.New through lister.FromListerWatcher):
//
//   - every list sends the shardSelector and is verified (Verify); where the
//     server did not apply it, the same hash filters on the client, so the
//     result is identical;
//   - every watch sends the same selector as the list it follows, and every
//     event is checked (one hash) by the Filter stage of the SDK's watch
//     pipeline (PipelineFilter; lw runs the same stage itself under a stock
//     client-go informer): an object outside the range is dropped and
//     counted, and proves the server does not filter;
//   - when the range changes (RangeChanged), the running watches end with
//     410 Expired, so client-go's reflector lists the new range. Objects
//     that left the range then leave the cache as deletions: wrap the event
//     handlers with Handler so controllers are not told a live object was
//     deleted.
type ListerWatcher struct {
	inner cache.ListerWatcherWithContext
	o     WrapOptions

	mu      sync.Mutex
	listed  Selector // the selector of the last list
	once    bool     // a list completed (listed is not just the zero Selector)
	mode    Mode
	changed chan struct{} // closed when the range changes
	synced  chan struct{} // closed at the next completed list

	current atomic.Pointer[watchRange] // the range of the last watch
	piped   atomic.Bool                // a watch pipeline runs the filter (PipelineFilter)
}

var (
	_ cache.ListerWatcher            = (*ListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)
	_ watchpipe.FilterSource         = (*ListerWatcher)(nil)
)

// Wrap returns lw holding only o.Selector()'s range.
func Wrap(lw cache.ListerWatcher, o WrapOptions) *ListerWatcher {
	if o.Selector == nil {
		o.Selector = func() Selector { return Selector{} }
	}
	o.Metrics = metricsnop.Or(o.Metrics)
	if o.Name == "" {
		o.Name = "shard"
	}
	return &ListerWatcher{inner: cache.ToListerWatcherWithContext(lw), o: o, changed: make(chan struct{}), synced: make(chan struct{})}
}

// Mode is where the server was last shown to apply the range: ModeServer
// (a list's shardInfo echoed the selector), ModeClient (a list came back
// without shardInfo, or a watch sent with the selector delivered an object
// outside the range), "" before any such answer.
func (lw *ListerWatcher) Mode() Mode {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.mode
}

// Listed returns the selector of the last completed list and a channel
// closed when the next list completes: a caller waits for the cache to hold
// a new range by reading Listed until it covers the range (Covers).
func (lw *ListerWatcher) Listed() (Selector, <-chan struct{}) {
	sel, next, _ := lw.listedState()
	return sel, next
}

// listedState is Listed, and whether any list completed yet.
func (lw *ListerWatcher) listedState() (Selector, <-chan struct{}, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.listed, lw.synced, lw.once
}

// RangeChanged ends the running watches with 410 Expired, so that
// client-go's reflector lists again with the Selector's new value.
func (lw *ListerWatcher) RangeChanged() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	close(lw.changed)
	lw.changed = make(chan struct{})
}

// List implements cache.Lister.
func (lw *ListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher.
func (lw *ListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	log := klog.FromContext(ctx).WithValues("lister", lw.o.Name)
	sel := lw.o.Selector()
	opts.ShardSelector = sel.String()
	if opts.ShardSelector == "" {
		// Everything, or nothing (no slice yet): no parameter can say it, so
		// the answer proves nothing about the server.
		list, err := lw.inner.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		if _, err := Filter(list, sel); err != nil {
			return nil, err
		}
		return lw.done(log, sel, "", list, cacheList(opts, list)), nil
	}
	list, err := lw.inner.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	mode, err := Verify(list, sel)
	if errors.Is(err, ErrShardInfoMismatch) {
		// The server filtered by something else: what it returned is not a
		// superset of the range. Ask for everything and filter here.
		lw.o.Metrics.Fallback(lw.o.Name, string(reason.ShardInfoMismatch))
		log.Info("The server's shardInfo does not echo the shardSelector sent; listing without it and filtering on the client", "reason", string(reason.ShardInfoMismatch), "err", err)
		opts.ShardSelector = ""
		if list, err = lw.inner.ListWithContext(ctx, opts); err != nil {
			return nil, err
		}
		mode = ModeClient
	} else if err != nil {
		return nil, err
	}
	if mode == ModeClient {
		dropped, err := Filter(list, sel)
		if err != nil {
			return nil, err
		}
		lw.o.Metrics.Fallback(lw.o.Name, string(reason.ShardClientFilter))
		log.V(2).Info("The server ignored the shardSelector; filtered on the client", "reason", string(reason.ShardClientFilter), "dropped", dropped)
	}
	return lw.done(log, sel, mode, list, cacheList(opts, list)), nil
}

// cacheList reports whether a list answer can be what a cache is filled
// from, so that its range counts as listed (Listed, WaitCovers): not a page
// with a continue token (the list goes on), nor a limit=1 list, which the
// SDK sends only to learn a count or a resourceVersion (beside a streaming
// list; rule 1's MostRecent probe) and whose items no cache receives.
func cacheList(opts metav1.ListOptions, list runtime.Object) bool {
	if opts.Limit == 1 {
		return false
	}
	lm, err := meta.ListAccessor(list)
	return err == nil && lm.GetContinue() == ""
}

// done records what a list answer of sel proved (mode; "" for nothing)
// and, when the list is complete, that sel is listed; it returns list.
func (lw *ListerWatcher) done(log klog.Logger, sel Selector, mode Mode, list runtime.Object, complete bool) runtime.Object {
	if complete {
		lw.mu.Lock()
		lw.listed, lw.once = sel, true
		close(lw.synced)
		lw.synced = make(chan struct{})
		lw.mu.Unlock()
	}
	if mode != "" {
		lw.believe(log, sel, mode, "observed: shardSelector applied "+string(mode)+"-side")
	}
	return list
}

// believe records what an answer proved about the server. Only two answers
// prove anything: a list's ListMeta.shardInfo (Verify: ModeServer when it
// echoes the selector, ModeClient when it is missing), and an object outside
// the range in answer to a request that carried the shardSelector
// (ModeClient). A stream whose events all fall in the range proves nothing
// (the range may hold only those objects), nor does any answer to a request
// sent without a shardSelector. The change is logged and recorded as
// Capability.
func (lw *ListerWatcher) believe(log klog.Logger, sel Selector, mode Mode, detail string) {
	lw.mu.Lock()
	prev := lw.mode
	lw.mode = mode
	lw.mu.Unlock()
	if mode == prev {
		return
	}
	log.Info("Sharded list", "mode", string(mode), "selector", sel.String(), "evidence", detail)
	support := capability.Yes
	if mode == ModeClient {
		support = capability.No
	}
	lw.observe(support, detail)
}

func (lw *ListerWatcher) observe(s capability.Support, detail string) {
	if lw.o.Server != nil {
		lw.o.Server.Observe(capability.Observation{Capability: Capability, Support: s, Detail: detail})
	}
}

// WatchWithContext implements cache.WatcherWithContext. A streaming list
// (sendInitialEvents) is a list: it takes the current range, and the range
// counts as listed when its initial-events-end bookmark passes. A plain
// watch follows the last list and takes its range; if the range changed
// since, it is refused with 410 Expired, so client-go lists again.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	cur := lw.o.Selector()
	lw.mu.Lock()
	sel, changed := lw.listed, lw.changed
	lw.mu.Unlock()
	if streaming {
		sel = cur
	} else if !cur.Equal(sel) {
		lw.o.Metrics.Fallback(lw.o.Name, string(reason.ShardRangeChanged))
		return nil, rangeChangedError()
	}
	opts.ShardSelector = sel.String()
	log := klog.FromContext(ctx).WithValues("lister", lw.o.Name)
	r := &watchRange{lw: lw, log: log, sel: sel, sent: opts.ShardSelector != ""}
	lw.current.Store(r)
	w, err := lw.inner.WatchWithContext(ctx, opts)
	if err != nil || (sel.Empty() && !streaming) {
		return w, err
	}
	f := &rangeWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go f.run(lw, r, changed, streaming, !lw.piped.Load())
	return f, nil
}

// PipelineFilter implements watchpipe.FilterSource: the drop-in
// ListerWatcher (lister.Wrap, reflector.NewSharedIndexInformer) and
// reflector.New (through lister.FromListerWatcher) call it when they are
// built over lw, and run the range of lw's current watch as their watch
// pipeline's Filter stage; lw's watches then forward every event to them.
// Under any other consumer (a stock client-go informer) lw's watches run the
// same stage themselves (watchpipe.FilterEvent).
func (lw *ListerWatcher) PipelineFilter() interface{ Keep(m metav1.Object) bool } {
	lw.piped.Store(true)
	return pipelineFilter{lw}
}

// watchRange is the range one watch holds: the Filter stage of that watch.
type watchRange struct {
	lw   *ListerWatcher
	log  klog.Logger
	sel  Selector
	sent bool // the watch carried the shardSelector
	// outside: an event outside the range arrived (logged once per watch).
	outside atomic.Bool
}

// Keep implements watchpipe.Filter: one hash per event. An object outside
// the range of a watch that carried the shardSelector proves the server
// does not filter: it is counted, and the belief changes. Outside a range
// that no parameter could say (no slice yet), it proves nothing.
func (r *watchRange) Keep(m metav1.Object) bool {
	in, err := r.sel.MatchesMeta(m)
	if err != nil || in {
		return true
	}
	if r.sent {
		r.lw.o.Metrics.Fallback(r.lw.o.Name, string(reason.ShardEventOutsideRange))
		if r.outside.CompareAndSwap(false, true) {
			r.log.V(2).Info("A watch event outside the shard range was dropped: the server does not filter watches", "reason", string(reason.ShardEventOutsideRange))
			r.lw.believe(r.log, r.sel, ModeClient, "observed: a watch event outside the shardSelector's range")
		}
	}
	return false
}

// Immutable implements watchpipe.ImmutableFilter: the range hashes
// metadata.uid or metadata.namespace, which never change, so every event of
// an object outside it is dropped.
func (r *watchRange) Immutable() bool { return true }

// pipelineFilter is the Filter a watch pipeline runs (PipelineFilter): the
// range of lw's last watch (client-go and reflector.New run one watch at a
// time).
type pipelineFilter struct{ lw *ListerWatcher }

func (f pipelineFilter) Keep(m metav1.Object) bool {
	if r := f.lw.current.Load(); r != nil {
		return r.Keep(m)
	}
	return true
}

func (f pipelineFilter) Immutable() bool { return true }

// rangeChangedError is a 410 Expired: client-go's reflector relists.
func rangeChangedError() *apierrors.StatusError {
	return apierrors.NewResourceExpired("steadywatch: the shard range changed (" + string(reason.ShardRangeChanged) + "); relisting")
}

// rangeWatch forwards the events of a watch, ends it with 410 Expired when
// the range changes, and marks the range listed at the end of a streaming
// list. With filter, it runs the Filter stage itself; otherwise a watch
// pipeline downstream does (PipelineFilter).
type rangeWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func (f *rangeWatch) Stop()                          { f.once.Do(func() { close(f.stop) }) }
func (f *rangeWatch) ResultChan() <-chan watch.Event { return f.out }

func (f *rangeWatch) run(lw *ListerWatcher, r *watchRange, changed <-chan struct{}, streaming, filter bool) {
	defer close(f.out)
	defer f.inner.Stop()
	in := f.inner.ResultChan()
	send := func(ev watch.Event) bool {
		select {
		case f.out <- ev:
			return true
		case <-f.stop:
			return false
		}
	}
	for {
		var (
			ev watch.Event
			ok bool
		)
		select {
		case <-f.stop:
			return
		case <-changed:
			lw.o.Metrics.Fallback(lw.o.Name, string(reason.ShardRangeChanged))
			r.log.V(2).Info("The shard range changed; ending the watch so client-go lists the new range", "reason", string(reason.ShardRangeChanged))
			st := rangeChangedError().ErrStatus
			send(watch.Event{Type: watch.Error, Object: &st})
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		switch ev.Type {
		case watch.Bookmark:
			if streaming && isInitialEventsEnd(ev.Object) {
				// The stream's initial state is complete: the range is
				// listed. A stream never proves that the server filters.
				streaming = false
				lw.done(r.log, r.sel, "", nil, true)
			}
		case watch.Added, watch.Modified, watch.Deleted:
			if !filter {
				break
			}
			m, err := meta.Accessor(ev.Object)
			if err != nil {
				break
			}
			switch watchpipe.FilterEvent(r, ev.Type, m) {
			case watchpipe.Drop:
				continue
			case watchpipe.DeliverAsDeleted:
				ev.Type = watch.Deleted
			}
		}
		if !send(ev) {
			return
		}
	}
}

// CacheRange is the current value of WrapOptions.Selector, spelled out
// (compare two values to see whether the range changed).
func (lw *ListerWatcher) CacheRange() string {
	s := lw.o.Selector()
	if !s.Empty() && len(s.Ranges) == 0 {
		return "nothing (" + s.Field + ")"
	}
	return s.String()
}

// isInitialEventsEnd reports whether a bookmark ends a streaming list's
// initial events (annotation k8s.io/initial-events-end, API Concepts,
// "Streaming lists").
func isInitialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
