package dropin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/metrics"
)

// ListerWatcher is the drop-in ListerWatcher's implementation (package
// lister's ListerWatcher documents what it guarantees): lists run by the
// lister's executor, never back in time; every watch event through the watch
// pipeline; streaming lists guarded; no watch loop without a delay.
type ListerWatcher struct {
	cfg Config

	// pipe is the watch pipeline every event passes: the versions
	// delivered per object and the newest one delivered.
	pipe *watchpipe.Pipeline

	mu        sync.Mutex
	lists     int         // lists served, for the relist count
	watches   int         // watches opened, for the restart count
	paginates bool        // a list of this server came back in pages
	unserved  string      // a resourceVersion a streaming list just could not be served at
	unservedC vocab.Class // how it failed (TooLargeRV, ServerError, NoAnswer)
	gate      progressGate
	// observe, if set (by tests), is given every decision the
	// ListerWatcher makes through the decision table, as it is made.
	observe func(engine.Situation, engine.Decision)
}

// Config is what the ListerWatcher needs of its lister: the resolved
// options it reads, the executor that runs a whole list, and the client it
// watches through.
type Config struct {
	Name                 string
	Metrics              metrics.Recorder
	Server               compat.Server
	ListGate             *listgate.Gate
	PageSize             int64
	InitialEventsTimeout time.Duration
	StallTimeout         time.Duration
	DisableStreamingList bool

	// Selectors adds the lister's label and field selectors to a request.
	Selectors func(metav1.ListOptions) metav1.ListOptions
	// List runs one whole list (every page, one snapshot) with q.
	List func(ctx context.Context, q fallback.Query, base metav1.ListOptions) (runtime.Object, Listed, error)
	// Client opens the watches; its own client-side filter, when it has
	// one (watchpipe.FilterSource), is the pipeline's Filter stage.
	Client watchpipe.WatchClient
	// ExpectInitialEvents counts the objects a streaming list should send
	// (nil: not counted).
	ExpectInitialEvents func(ctx context.Context, base metav1.ListOptions) <-chan int
}

// Listed is what a list handed over: the resourceVersion it was served at,
// its pages and its items.
type Listed struct {
	ResourceVersion string
	Pages, Items    int
}

// New returns the ListerWatcher of cfg.
func New(cfg Config) *ListerWatcher {
	return &ListerWatcher{cfg: cfg, pipe: watchpipe.New(watchpipe.Config{Shared: true, Filter: watchpipe.FilterOf(cfg.Client)}), gate: newProgressGate()}
}

// ListWithContext implements cache.ListerWithContext.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	q, err := engine.FromListOptions(options)
	if err != nil {
		return nil, err
	}
	o := &lw.cfg
	log := klog.FromContext(ctx).WithValues("lister", o.Name)
	base := options
	base.ResourceVersion, base.ResourceVersionMatch, base.Limit, base.Continue = "", "", 0, ""
	base = o.Selectors(base)
	delivered := lw.pipe.Newest()
	lw.mu.Lock()
	paginates, unserved, unservedC := lw.paginates, lw.unserved, lw.unservedC
	lw.unserved, lw.unservedC = "", vocab.OK
	lw.lists++
	relist := lw.lists > 1 || lw.watches > 0 // a list after a streaming list is a relist too
	lw.mu.Unlock()
	if relist {
		o.Metrics.Relist(o.Name, string(reason.ClientGoRelist))
		log.V(2).Info("client-go relists", "query", q.String(), "delivered", delivered)
	}
	// The streaming list at this resourceVersion may just have failed (too
	// large, 5xx, or no response within the bound: client-go's REST client
	// had already retried it up to 10 times); the row says what to list.
	if q.ResourceVersion != unserved {
		unservedC = vocab.OK
	}
	d := lw.decide(engine.Situation{Op: engine.OpDropInList, Semantic: q.Semantic, Class: unservedC})
	q, _ = lw.listQuery(log, d, q, q, "the streaming list at this resourceVersion just failed", "resourceVersion", unserved)
	if paginates && q.Semantic == fallback.NotOlderThan && q.Limit == 0 {
		q = q.WithLimit(o.PageSize)
	}
	obj, rec, err := o.List(ctx, q, base)
	if err == nil {
		// Never back in time: the row says whether a list older than what
		// was already delivered is asked again.
		served := vocab.OK
		if delivered != "" && vocab.CompareRV(rec.ResourceVersion, delivered) == vocab.Older {
			served = vocab.ServedOlder
		}
		d = lw.decide(engine.Situation{Op: engine.OpDropInListed, Semantic: q.Semantic, Class: served})
		if again, ask := lw.listQuery(log, d, q, fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: delivered}.WithLimit(q.Limit),
			"list served older than already delivered; asking again", "query", q.String(), "served", rec.ResourceVersion, "delivered", delivered); ask {
			obj, rec, err = o.List(ctx, again, base)
		}
	}
	if err != nil {
		return nil, err
	}
	if rec.Pages > 1 {
		lw.mu.Lock()
		lw.paginates = true
		lw.mu.Unlock()
	}
	lw.replaceHeld(obj, rec.ResourceVersion)
	lw.noteProgress()
	o.Metrics.Items(o.Name, rec.Items)
	return obj, nil
}

// replaceHeld starts the per-object resourceVersions afresh from the items
// of list, served at rv.
func (lw *ListerWatcher) replaceHeld(list runtime.Object, rv string) {
	ld := lw.pipe.Load(0)
	if err := meta.EachListItem(list, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		ld.Add(m.GetNamespace(), m.GetName(), m.GetResourceVersion())
		return nil
	}); err != nil {
		ld.Unreadable() // nothing is compared until the next list
	}
	lw.pipe.Replace(ld, rv)
}

// relistError is the error event that ends a watch instead of an event
// client-go must not apply (a stale one, one with a version that does not
// parse): 410 Expired, which client-go's reflector answers with a relist,
// never older than what it holds.
func relistError(detail string, why reason.Code) watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "steadywatch: " + detail + " (" + string(why) + "); relisting",
	}}
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	o := &lw.cfg
	options = o.Selectors(options)
	log := klog.FromContext(ctx).WithValues("lister", o.Name)
	lw.mu.Lock()
	lw.watches++
	rewatch := lw.watches > 1
	lw.mu.Unlock()
	if rewatch {
		o.Metrics.WatchRestart(o.Name, string(reason.ClientGoRewatch))
	}
	if options.SendInitialEvents == nil || !*options.SendInitialEvents {
		if _, err := lw.awaitProgressGate(ctx, log); err != nil {
			return nil, err
		}
		w, err := o.Client.Watch(ctx, options)
		if err != nil {
			lw.openFailed(ctx, log, err)
			return nil, err
		}
		return lw.follow(ctx, w, log, options.ResourceVersion, lw.pipe.Watch(options.ResourceVersion, false), nil, nil), nil
	}
	srv := o.Server
	why := "disabled by lister.Options.DisableStreamingList"
	refused := o.DisableStreamingList
	if !refused {
		caps := srv.Capabilities(ctx)
		refused, why = caps.Get(capability.StreamingList) == capability.No, orUnknown(caps.Reasons[capability.StreamingList])
	}
	if d := lw.decide(engine.Situation{Op: engine.OpDropInStream, Rejected: refused}); d.Then == engine.ThenListSame {
		// client-go lists instead.
		o.Metrics.Fallback(o.Name, string(d.Reason))
		log.V(4).Info("streaming list refused without a request", "reason", string(d.Reason), "detail", why)
		return nil, fmt.Errorf("%w (%s)", watchpipe.ErrStreamingListUnsupported, why)
	}
	// After a streaming list that ended without progress (client-go retries
	// a 410 at once), wait; the retry does without the limit=1 count list.
	retry, err := lw.awaitProgressGate(ctx, log)
	if err != nil {
		return nil, err
	}
	// The stream holds a ListGate slot until its initial-events-end
	// bookmark (or its end): the apiserver is sending the collection.
	release, err := o.ListGate.Acquire(ctx, o.Name, o.Metrics)
	if err != nil {
		return nil, err
	}
	w, err := watchpipe.OpenWatch(ctx, o.Client, options, o.InitialEventsTimeout)
	if err != nil {
		release()
	}
	if err != nil && options.ResourceVersion != "" && options.ResourceVersion != "0" {
		// Recorded for the next list's row (OpDropInList).
		c := engine.Classify(err)
		if errors.Is(err, watchpipe.ErrNoWatchResponse) {
			c = vocab.NoAnswer
		}
		lw.mu.Lock()
		lw.unserved, lw.unservedC = options.ResourceVersion, c
		lw.mu.Unlock()
	}
	if err != nil {
		if engine.RejectsStreamingList(err) {
			// 1.19-1.26 reject resourceVersionMatch on watch, 1.27+ with the
			// WatchList gate off reject sendInitialEvents: 422 naming the
			// parameter. Any other 400/422 (a bad selector) is the caller's
			// own mistake and says nothing about the server.
			srv.Observe(capability.Observation{Capability: capability.StreamingList, Support: capability.No, Detail: "observed: sendInitialEvents watch rejected: " + err.Error()})
			return nil, fmt.Errorf("%w: %w", watchpipe.ErrStreamingListUnsupported, err)
		}
		lw.openFailed(ctx, log, err)
		return nil, err
	}
	var expected <-chan int
	if !retry && o.ExpectInitialEvents != nil {
		expected = o.ExpectInitialEvents(ctx, options)
	}
	return lw.follow(ctx, w, log, options.ResourceVersion, lw.pipe.Watch(options.ResourceVersion, true), release, &watchpipe.GuardOptions{
		Timeout:        o.InitialEventsTimeout,
		Expected:       expected,
		FromMostRecent: options.ResourceVersion == "",
		Server:         srv,
		OnNotStreaming: func(string) {
			o.Metrics.Fallback(o.Name, string(reason.StreamingListAbandoned))
		},
	}), nil
}

// openFailed records a watch that could not be opened as an attempt
// without progress (unless ctx ended: the caller gave up).
func (lw *ListerWatcher) openFailed(ctx context.Context, log logr.Logger, err error) {
	if ctx.Err() == nil {
		lw.noteNoProgress(log, "watch not opened: "+err.Error())
	}
}

// follow forwards w through the watch pipeline pw, and ends it (closing the
// channel, so client-go watches again from its resourceVersion) when it
// delivered nothing for StallTimeout. With guard, w is a streaming list
// whose initial events AwaitInitialEvents guards first, in the same
// goroutine: one hop per event, not two; release (its ListGate slot) is
// called once the initial events are over, whatever the outcome.
func (lw *ListerWatcher) follow(ctx context.Context, w watch.Interface, log logr.Logger, from string, pw *watchpipe.Watch, release func(), guard *watchpipe.GuardOptions) watch.Interface {
	f := &followedWatch{Relay: watchpipe.NewRelay(w), from: from}
	go f.run(ctx, lw, log, pw, release, guard)
	return f
}

type followedWatch struct {
	*watchpipe.Relay
	from    string // the resourceVersion the watch started from
	settled bool   // progress or its absence is recorded (by run's goroutine only)
}

// progressed records that the watch delivered something newer than where it
// started; the watch attempts' backoff resets.
func (f *followedWatch) progressed(lw *ListerWatcher) {
	if !f.settled {
		f.settled = true
		lw.noteProgress()
	}
}

// failed records that the watch ends (an error event, its close) without
// progress, before client-go can see it and watch again.
func (f *followedWatch) failed(lw *ListerWatcher, log logr.Logger, why string) {
	if !f.settled {
		f.settled = true
		lw.noteNoProgress(log, why)
	}
}

// forward sends ev to client-go, recording progress first: an event, a
// bookmark newer than the watch's start, or an error that ends a watch
// without either.
func (f *followedWatch) forward(lw *ListerWatcher, log logr.Logger, ev watch.Event, initial bool) bool {
	switch ev.Type {
	case watch.Error:
		f.failed(lw, log, "error event before any progress")
	case watch.Bookmark:
		if rv := resourceVersionOf(ev.Object); f.from == "" || vocab.CompareRV(rv, f.from) == vocab.Newer {
			f.progressed(lw)
		}
	default:
		if !initial {
			f.progressed(lw)
		}
	}
	return f.Send(ev)
}

// run forwards the inner watch's events through the pipeline until the
// watch ends: a streaming list's initial events first (when guard is set,
// through the initial-events guard), then the watch.
func (f *followedWatch) run(ctx context.Context, lw *ListerWatcher, log logr.Logger, pw *watchpipe.Watch, release func(), guard *watchpipe.GuardOptions) {
	defer f.Close()
	defer func() {
		// Recorded before the channel closes, so client-go's next attempt
		// sees it; a watch its caller gave up on is not a failure.
		if ctx.Err() == nil {
			f.failed(lw, log, "watch ended without progress")
		}
	}()
	in := f.Inner().ResultChan()
	defer f.stopInner(in)
	defer context.AfterFunc(ctx, f.Stop)()
	if guard != nil && !f.initialEvents(lw, log, pw, release, guard) {
		return
	}
	f.follow(lw, log, pw, in)
}

// stopInner stops the inner watch and waits (bounded) for it to end, so
// that when our channel closes, nothing of this watch runs any more.
func (f *followedWatch) stopInner(in <-chan watch.Event) {
	f.Inner().Stop()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case _, ok := <-in:
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}

// initialEvents forwards a streaming list's initial events, through the
// initial-events guard; false: the watch ends here.
func (f *followedWatch) initialEvents(lw *ListerWatcher, log logr.Logger, pw *watchpipe.Watch, release func(), guard *watchpipe.GuardOptions) bool {
	out, detail := watchpipe.AwaitInitialEvents(f.Stopped(), f.Inner(), *guard, log, func(ev watch.Event) bool {
		return f.initialEvent(lw, log, pw, ev)
	})
	if release != nil {
		release()
	}
	switch out {
	case watchpipe.InitialEventsEnded, watchpipe.InitialEventsError:
		return true
	case watchpipe.InitialEventsNotStreaming:
		f.settled = true // the server does not stream lists: client-go lists instead
	case watchpipe.InitialEventsCut:
		f.failed(lw, log, "streaming list cut before its initial-events-end bookmark")
	default:
		return false
	}
	f.Send(watchpipe.NotStreamingEvent(detail))
	return false
}

// initialEvent forwards one event the initial-events guard hands over (ADDED
// events, an ERROR, and the initial-events-end bookmark last); false stops
// the stream.
func (f *followedWatch) initialEvent(lw *ListerWatcher, log logr.Logger, pw *watchpipe.Watch, ev watch.Event) bool {
	if ev.Type != watch.Bookmark {
		ev, ok := f.pass(lw, log, pw, ev)
		if ev.Type == "" {
			return ok // dropped, or the watch ends
		}
		return f.forward(lw, log, ev, true)
	}
	o := &lw.cfg
	rv := resourceVersionOf(ev.Object)
	if pw.Bookmark(rv, true) == watchpipe.AbandonStream {
		// client-go would adopt it as its resume point (and fail every
		// watch and relist from it): the streaming list is abandoned
		// instead, and client-go lists.
		o.Metrics.Fallback(o.Name, string(reason.BadResourceVersion))
		log.Info("Abandoning a streaming list whose initial-events-end bookmark has a resourceVersion that does not parse on a server whose versions do",
			"reason", string(reason.BadResourceVersion), "resourceVersion", rv)
		f.settled = true // client-go lists instead: not a retry of this request
		f.Send(watchpipe.NotStreamingEvent(fmt.Sprintf("the initial-events-end bookmark's resourceVersion %q does not parse", rv)))
		return false
	}
	// The initial-events-end bookmark: a completed streaming list is progress.
	f.progressed(lw)
	return f.Send(ev)
}

// follow forwards the watch's events until it ends. Stall detection and the
// resourceVersion-advanced metric run beside the loop (watchdog), which
// only counts what it forwards: per event, one receive, the pipeline's
// verdict, one atomic add and one send (BenchmarkReflectorWatchEvent).
func (f *followedWatch) follow(lw *ListerWatcher, log logr.Logger, pw *watchpipe.Watch, in <-chan watch.Event) {
	o := &lw.cfg
	var forwarded atomic.Uint64
	defer watchpipe.StartWatchdog(o.StallTimeout, &forwarded,
		func(at time.Time) { o.Metrics.ResourceVersionAdvanced(o.Name, at) },
		func() {
			d := lw.decide(engine.Situation{Op: engine.OpDropInStall})
			o.Metrics.WatchRestart(o.Name, string(d.Reason))
			log.V(2).Info("watch delivered nothing; ending it so client-go watches again from its resourceVersion",
				"reason", string(d.Reason), "quiet", o.StallTimeout)
			f.Stop() // the loop ends and stops the watchdog
		})()
	for {
		var (
			ev watch.Event
			ok bool
		)
		// Fast path: an event that is already there is taken without
		// waiting on f.Stopped() too.
		select {
		case ev, ok = <-in:
		default:
			select {
			case <-f.Stopped():
				return
			case ev, ok = <-in:
			}
		}
		if !ok {
			return
		}
		if ev, ok = f.pass(lw, log, pw, ev); !ok {
			return
		}
		if ev.Type == "" {
			continue // dropped
		}
		if !f.forward(lw, log, ev, false) {
			return
		}
		if forwarded.Add(1) == 1 {
			// The first event of a watch is reported at once (a scrape
			// right after a watch starts sees it); later ones on the tick.
			o.Metrics.ResourceVersionAdvanced(o.Name, time.Now())
		}
	}
}

// pass runs ev through the pipeline and acts on its verdict: it returns the
// event to forward (Type "" when it is dropped), or false when the watch
// ends (after the 410 error event that makes client-go relist was sent).
func (f *followedWatch) pass(lw *ListerWatcher, log logr.Logger, pw *watchpipe.Watch, ev watch.Event) (watch.Event, bool) {
	o := &lw.cfg
	switch ev.Type {
	case watch.Error:
		return ev, true
	case watch.Bookmark:
		rv := resourceVersionOf(ev.Object)
		if pw.Bookmark(rv, false) == watchpipe.Drop {
			// A bookmark's only content is its resourceVersion: one that
			// does not parse, on a server whose versions do, would become
			// client-go's resume point and fail every watch from it (400),
			// so it is not forwarded.
			o.Metrics.Fallback(o.Name, string(reason.BadResourceVersion))
			log.Info("Dropping a bookmark whose resourceVersion does not parse on a server whose versions do",
				"reason", string(reason.BadResourceVersion), "resourceVersion", rv)
			return watch.Event{}, true
		}
		o.Metrics.Bookmark(o.Name)
		return ev, true
	}
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return ev, true
	}
	switch v, held := pw.Event(ev.Type, m); v {
	case watchpipe.DeliverAsDeleted:
		ev.Type = watch.Deleted
	case watchpipe.Drop:
		return watch.Event{}, true
	case watchpipe.EndStale:
		rv := m.GetResourceVersion()
		obj := cache.NewObjectName(m.GetNamespace(), m.GetName())
		o.Metrics.Fallback(o.Name, string(reason.StaleEvent))
		log.Info("Ignoring a watch event older than what was already delivered; ending the watch so client-go relists",
			"reason", string(reason.StaleEvent), "type", ev.Type, "object", obj, "event", rv, "delivered", strconv.FormatUint(held, 10))
		f.forward(lw, log, relistError(fmt.Sprintf("%s %s at resourceVersion %s comes after %d was already delivered", ev.Type, obj, rv, held), reason.StaleEvent), false)
		return watch.Event{}, false
	case watchpipe.EndUnparsable:
		// client-go would adopt it as its resume point and fail every
		// watch from it; the object's state comes with the relist instead,
		// so nothing is lost.
		rv := m.GetResourceVersion()
		obj := cache.NewObjectName(m.GetNamespace(), m.GetName())
		o.Metrics.Fallback(o.Name, string(reason.BadResourceVersion))
		log.Info("Ending the watch at an event whose resourceVersion does not parse on a server whose versions do; client-go relists",
			"reason", string(reason.BadResourceVersion), "type", ev.Type, "object", obj, "resourceVersion", rv)
		f.forward(lw, log, relistError(fmt.Sprintf("%s %s carries resourceVersion %q, which does not parse on a server whose versions do", ev.Type, obj, rv), reason.BadResourceVersion), false)
		return watch.Event{}, false
	}
	return ev, true
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}

func resourceVersionOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}
