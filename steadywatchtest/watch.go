package steadywatchtest

import (
	"context"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// garbageRV is the bookmark resourceVersion under Faults.GarbageBookmarkRV.
const garbageRV = "not-a-resource-version"

// Watch serves a watch request for all namespaces (or the namespace of
// InNamespace). The stream ends when it is stopped, ctx is done,
// timeoutSeconds pass, or Close is called.
func (s *Server[T]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.watch(ctx, s.ns, o)
}

func (s *Server[T]) watch(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
	w, err := serve(ctx, s, verbWatch, ns, o, func(req *Request) (*serverWatch, error) { return s.watchLocked(ctx, ns, o, req) })
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (s *Server[T]) watchLocked(ctx context.Context, ns string, o metav1.ListOptions, req *Request) (*serverWatch, error) {
	if err := s.throttle(); err != nil {
		return nil, err
	}
	f := s.faults
	if f.IgnoreResourceVersionMatch {
		o.ResourceVersionMatch = ""
	}
	if f.IgnoreSendInitialEvents {
		o.SendInitialEvents = nil
	}
	o.Watch = true
	if err := validate(o, !f.RefuseStreamingList); err != nil {
		return nil, err
	}
	sel, err := parseSelectors(o)
	if err != nil {
		return nil, err
	}
	w := &serverWatch{
		sel:       sel,
		ns:        ns,
		bookmarks: o.AllowWatchBookmarks,
		faults:    f,
		newObj:    func() runtime.Object { return s.newObj() },
		notify:    make(chan struct{}, 1),
		stop:      make(chan struct{}),
		out:       make(chan watch.Event),
	}
	var timeout <-chan time.Time
	if o.TimeoutSeconds != nil && *o.TimeoutSeconds > 0 {
		timer := time.NewTimer(time.Duration(*o.TimeoutSeconds) * time.Second)
		w.stopTimer = timer.Stop
		timeout = timer.C
	}
	if err := s.startWatch(w, o, req); err != nil {
		if w.stopTimer != nil {
			w.stopTimer()
		}
		return nil, err
	}
	s.watchers[w] = struct{}{}
	go w.run(ctx, timeout, s.opts.BookmarkInterval, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers, w)
	}, s.periodicBookmark)
	return w, nil
}

// startWatch reads the watch semantic (Kubernetes API Concepts, "Semantics
// for watch"; streaming lists) and queues the stream's first events. Caller holds mu.
func (s *Server[T]) startWatch(w *serverWatch, o metav1.ListOptions, req *Request) error {
	f := w.faults
	switch {
	case f.GoneOnEveryWatch:
		req.Served = servedWatchFrom
		rv, _ := strconv.ParseUint(o.ResourceVersion, 10, 64) // "" and "0" read as 0
		w.push(item{ev: errorEvent(tooOld(rv, s.rv))}, item{close: true})
		return nil
	case f.EmptyWatches:
		req.Served = servedWatchFrom
		w.push(item{close: true})
		return nil
	}
	streaming := o.SendInitialEvents != nil && *o.SendInitialEvents
	var start uint64
	initial := streaming || (o.SendInitialEvents == nil && (o.ResourceVersion == "" || o.ResourceVersion == "0"))
	switch o.ResourceVersion {
	case "":
		start = s.rv
	case "0":
		start = s.cacheRV()
	default:
		n, err := parseRV(o.ResourceVersion)
		if err != nil {
			return err
		}
		switch {
		case streaming && n > s.cacheRV():
			return tooLarge(n, s.cacheRV())
		case streaming:
			start = s.cacheRV()
		case n < s.compactRV:
			// The watch cache answers inside the stream: HTTP 200, one ERROR event.
			req.Served, req.ResourceVersion = servedWatchFrom, o.ResourceVersion
			w.push(item{ev: errorEvent(tooOld(n, s.compactRV))}, item{close: true})
			return nil
		default:
			start = n
		}
	}
	req.ResourceVersion = format(start)
	switch {
	case streaming:
		req.Served = servedStreamingList
	case initial:
		req.Served = servedWatchState
	default:
		req.Served = servedWatchFrom
	}
	if initial {
		for _, e := range s.stateAt(start) {
			if w.sel.matches(w.ns, e.obj) {
				w.push(item{ev: watch.Event{Type: watch.Added, Object: e.obj.DeepCopyObject()}})
				req.Items++
			}
		}
	}
	if streaming {
		switch {
		case f.CloseBeforeEndBookmark:
			w.push(item{close: true})
			return nil
		case o.AllowWatchBookmarks:
			w.bookmark(format(start), !f.NoInitialEventsAnnotation)
		}
		if f.CloseAfterEndBookmark {
			w.push(item{close: true})
			return nil
		}
	}
	// Catch up: changes after start that the store already has (a watch from
	// an older resourceVersion, or a lagging cache).
	first := len(s.history)
	for i, c := range s.history {
		if c.rv > start {
			first = i
			break
		}
	}
	if n := f.ReplayWatchEvents; n > 0 && !initial {
		// Faults.ReplayWatchEvents: history the client already has, again.
		for _, c := range s.history[max(0, first-n):first] {
			w.deliver(c)
		}
	}
	for _, c := range s.history[first:] {
		w.deliver(c)
	}
	return nil
}

// Bookmark sends a BOOKMARK at the current resourceVersion to every open
// watch that allows bookmarks (allowWatchBookmarks=true).
func (s *Server[T]) Bookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.bookmark(format(s.rv), false)
	}
}

func (s *Server[T]) periodicBookmark(w *serverWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, open := s.watchers[w]; open {
		w.bookmark(format(s.rv), false)
	}
}

// Close ends every open watch (as an apiserver shutting down does).
func (s *Server[T]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.push(item{close: true})
	}
}

func errorEvent(err apierrors.APIStatus) watch.Event {
	st := err.Status()
	return watch.Event{Type: watch.Error, Object: &st}
}

// item is one queued step of a watch stream: an event, or the end.
type item struct {
	ev    watch.Event
	close bool
}

// serverWatch is one open watch. Writers queue events without blocking
// (push); its goroutine hands them to the consumer.
type serverWatch struct {
	sel       selectors
	ns        string
	bookmarks bool
	faults    Faults
	newObj    func() runtime.Object
	stopTimer func() bool

	mu      sync.Mutex
	queue   []item
	closed  bool // a close item is queued: nothing more is
	holding bool // run popped an event the consumer has not received

	notify   chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	out      chan watch.Event
}

var _ watch.Interface = (*serverWatch)(nil)

func (w *serverWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *serverWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

func (w *serverWatch) push(items ...item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, it := range items {
		if w.closed {
			return
		}
		w.queue = append(w.queue, it)
		w.closed = it.close
	}
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// queued is the number of items the consumer has not received, the end
// of the stream included (while it is ending, at least 1).
func (w *serverWatch) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.queue)
	if w.holding {
		n++
	}
	if w.closed && n == 0 {
		n = 1
	}
	return n
}

// hold records whether run holds a popped event not yet received.
func (w *serverWatch) hold(h bool) {
	w.mu.Lock()
	w.holding = h
	w.mu.Unlock()
}

func (w *serverWatch) pop() (item, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return item{}, false
	}
	it := w.queue[0]
	w.queue[0] = item{}
	w.queue = w.queue[1:]
	return it, true
}

// deliver queues the events change c means to this watch's selectors (an
// object leaving them is DELETED, one entering them ADDED, as the watch
// cache does). Called with the server's mu held.
func (w *serverWatch) deliver(c change) {
	was := c.prev != nil && w.sel.matches(w.ns, c.prev)
	is := c.typ != watch.Deleted && w.sel.matches(w.ns, c.obj)
	var ev watch.Event
	switch {
	case was && is:
		ev = watch.Event{Type: watch.Modified, Object: c.obj.DeepCopyObject()}
	case is:
		ev = watch.Event{Type: watch.Added, Object: c.obj.DeepCopyObject()}
	case was && c.typ == watch.Deleted:
		ev = watch.Event{Type: watch.Deleted, Object: c.obj.DeepCopyObject()}
	case was: // left the selectors: the previous state, at this rv
		obj := c.prev.DeepCopyObject()
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(format(c.rv))
		}
		ev = watch.Event{Type: watch.Deleted, Object: obj}
	default:
		return
	}
	// The duplicate is copied before the event is queued: once queued, the
	// watch's reader owns ev.Object (an encoder may set its kind).
	var dup runtime.Object
	if w.faults.DuplicateEvents {
		dup = ev.Object.DeepCopyObject()
	}
	w.push(item{ev: ev})
	if dup != nil {
		w.push(item{ev: watch.Event{Type: ev.Type, Object: dup}})
	}
	if w.faults.StaleEvent && ev.Type == watch.Modified {
		w.push(item{ev: watch.Event{Type: watch.Modified, Object: c.prev.DeepCopyObject()}})
	}
}

// bookmark queues a BOOKMARK at rv if the watch allows them; end marks the
// end of a streaming list's initial events.
func (w *serverWatch) bookmark(rv string, end bool) {
	if !w.bookmarks || w.faults.DropBookmarks {
		return
	}
	if w.faults.GarbageBookmarkRV {
		rv = garbageRV
	}
	obj := w.newObj()
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetResourceVersion(rv)
	if end {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	w.push(item{ev: watch.Event{Type: watch.Bookmark, Object: obj}})
}

// run hands queued events to the consumer until the stream ends.
func (w *serverWatch) run(ctx context.Context, timeout <-chan time.Time, every time.Duration, unregister func(), tick func(*serverWatch)) {
	defer close(w.out)
	defer unregister()
	if w.stopTimer != nil {
		defer w.stopTimer()
	}
	var ticks <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		ticks = t.C
	}
	var pending *watch.Event
	sent := 0
	for {
		if cut := w.faults.CutWatchesAfter; cut > 0 && sent >= cut {
			return // Faults.CutWatchesAfter: a clean close
		}
		if pending == nil {
			if it, ok := w.pop(); ok {
				if it.close {
					return
				}
				pending = &it.ev
				w.hold(true)
			}
		}
		var out chan<- watch.Event // nil (never ready) while nothing is pending
		var ev watch.Event
		if pending != nil {
			out, ev = w.out, *pending
		}
		select {
		case out <- ev:
			pending = nil
			w.hold(false)
			sent++
		case <-w.notify:
		case <-ticks:
			tick(w)
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-timeout:
			return
		}
	}
}
