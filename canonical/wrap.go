package canonical

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/metrics"
)

// RejectedAnnotation is set on the tombstone the decorator delivers in a
// DELETED event for an object it rejected (unless Options.PassThrough). Its value is the
// Reason. A handler's OnDelete can tell "the object is gone from the server"
// (no annotation) from "the object left the shapes this controller supports".
// The tombstone exists only in memory; it is never sent to the server.
const RejectedAnnotation = "canonical.steadywatch.io/rejected"

// Options configures Wrap. The zero value is a safe default: rejected
// objects are left out, name "canonical", no metrics. Rejections are logged
// at V(2) through klog.FromContext of the List or Watch call, with
// namespace, name, reason, shape, step and error; object content is never
// logged.
type Options struct {
	// PassThrough delivers an object that cannot be canonicalized unchanged,
	// in whatever shape it has, instead of leaving it out (see Wrap); handlers
	// must then cope with non-canonical objects. Default false: left out, the
	// Gateway API versioning guide's "MUST ignore CRs that don't fit a
	// version that their controller supports".
	PassThrough bool
	// Name identifies this decorator in metrics and logs, e.g.
	// "gateway.networking.k8s.io/backendtlspolicies". Default "canonical".
	Name string
	// Metrics receives one Fallback(Name, "canonical:<action>:<reason>") per
	// rejected object, where action is as Rejection.Action. Default: none (metrics.Nop).
	Metrics metrics.Recorder
	// OnReject, if set, is called synchronously for every rejected object, on
	// the goroutine delivering the list or the event, so it must be quick and
	// must not block. It must not modify the RejectedError.
	OnReject func(ctx context.Context, r Rejection)
}

const (
	actionSkip   = "skip"   // left out of the list or the watch
	actionPass   = "pass"   // delivered unchanged (PassThrough)
	actionDelete = "delete" // delivered as a DELETED tombstone
)

// Rejection describes one rejected object, for Options.OnReject.
type Rejection struct {
	// Event is the watch event type, or "" for a list item.
	Event watch.EventType
	// Action is what the decorator did: "skip" (left out of the list or
	// the watch), "pass" (delivered unchanged, Options.PassThrough) or
	// "delete" (delivered as a DELETED tombstone).
	Action string
	Err    *RejectedError
}

// listerWatcher is the decorator returned by Wrap.
type listerWatcher struct {
	inner cache.ListerWatcherWithContext
	raw   cache.ListerWatcher
	chain *Chain
	opts  Options
	rec   metrics.Recorder
}

var (
	_ cache.ListerWatcher            = (*listerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*listerWatcher)(nil)
)

// Wrap returns lw with every object canonicalized by chain. lw must return
// *unstructured.UnstructuredList from List and *unstructured.Unstructured in
// watch events (the dynamic client does). The decorator never writes to the
// server and never modifies an object lw returned: converted objects are deep
// copies, canonical ones are passed as they are. The result also implements
// cache.ListerWatcherWithContext, and forwards lw's
// IsWatchListSemanticsUnSupported, so client-go's reflector makes the same
// streaming-list decision as without the decorator.
//
// Event rules (with Options.PassThrough a rejected object is always
// delivered unchanged instead):
//
//   - List: every item is canonicalized; rejected items are left out. The
//     list's metadata (resourceVersion, continue) is kept.
//   - ADDED, including the initial events of a streaming list
//     (sendInitialEvents): canonicalized, or dropped if rejected.
//   - MODIFIED: canonicalized. If rejected, the object may have been in the
//     store in a supported shape before, so the decorator, which keeps no
//     per-object state, delivers DELETED with a tombstone: the object's
//     metadata (name, namespace, uid, resourceVersion, labels, ...) with
//     RejectedAnnotation set to the reason, and no other fields. The store
//     drops any stale canonical copy; a handler may see OnDelete for an object
//     it never saw added, and can tell from the annotation.
//   - DELETED: canonicalized when possible, so OnDelete gets the canonical
//     shape; if rejected, the same tombstone as above. Deletion always happens.
//   - BOOKMARK (including the initial-events-end bookmark) and ERROR: passed
//     through untouched.
//
// A dropped event does not advance the reflector's resourceVersion; the
// server's own bookmarks do (client-go asks for them), and a watch resumed from
// an older resourceVersion only sees the dropped events again.
//
// Wrap panics if lw or chain is nil: that is a programming error.
func Wrap(lw cache.ListerWatcher, chain *Chain, opts Options) cache.ListerWatcher {
	if lw == nil || chain == nil {
		panic("canonical.Wrap: nil ListerWatcher or Chain")
	}
	if opts.Name == "" {
		opts.Name = "canonical"
	}
	return &listerWatcher{
		inner: cache.ToListerWatcherWithContext(lw),
		raw:   lw,
		chain: chain,
		opts:  opts,
		rec:   metricsnop.Or(opts.Metrics),
	}
}

// IsWatchListSemanticsUnSupported forwards the wrapped ListerWatcher's answer
// (false if it does not say), see k8s.io/client-go/util/watchlist.
func (d *listerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(d.raw)
}

// List lists through the wrapped ListerWatcher and canonicalizes the items.
//
// Deprecated: use ListWithContext.
func (d *listerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return d.ListWithContext(context.Background(), options)
}

// Watch watches through the wrapped ListerWatcher and canonicalizes the events.
//
// Deprecated: use WatchWithContext.
func (d *listerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return d.WatchWithContext(context.Background(), options)
}

// ListWithContext lists through the wrapped ListerWatcher and returns a new
// *unstructured.UnstructuredList with the canonicalized items. A list of any
// other type is an error matching errNotUnstructured.
func (d *listerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	obj, err := d.inner.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*unstructured.UnstructuredList)
	if !ok {
		return nil, fmt.Errorf("%w: list is %T (canonical.Wrap needs a dynamic-client ListerWatcher)", errNotUnstructured, obj)
	}
	out := &unstructured.UnstructuredList{Object: list.Object, Items: make([]unstructured.Unstructured, 0, len(list.Items))}
	for i := range list.Items {
		item := &list.Items[i]
		canon, _, err := d.chain.Canonicalize(item)
		if err != nil {
			rej := err.(*RejectedError)
			if d.opts.PassThrough {
				d.report(ctx, "", actionPass, rej)
				out.Items = append(out.Items, *item)
			} else {
				d.report(ctx, "", actionSkip, rej)
			}
			continue
		}
		out.Items = append(out.Items, *canon)
	}
	return out, nil
}

// WatchWithContext watches through the wrapped ListerWatcher and returns a
// watch whose events are canonicalized as described on Wrap. Stopping it stops
// the wrapped watch; it also ends when ctx is done.
func (d *listerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := d.inner.WatchWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	cw := &canonicalWatch{
		d:     d,
		inner: w,
		out:   make(chan watch.Event),
		stop:  make(chan struct{}),
	}
	go cw.run(ctx)
	return cw, nil
}

// event returns the event to deliver for ev, or false to drop it.
func (d *listerWatcher) event(ctx context.Context, ev watch.Event) (watch.Event, bool) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	default: // Bookmark, Error, and anything future: untouched.
		return ev, true
	}
	obj, ok := ev.Object.(*unstructured.Unstructured)
	var canon *unstructured.Unstructured
	var rej *RejectedError
	if !ok {
		rej = &RejectedError{Reason: fallback.ReasonCode(reason.NotUnstructured), Err: fmt.Errorf("event object is %T", ev.Object)}
	} else if c, _, err := d.chain.Canonicalize(obj); err != nil {
		rej = err.(*RejectedError)
	} else {
		canon = c
	}
	if rej == nil {
		return watch.Event{Type: ev.Type, Object: canon}, true
	}
	switch {
	case d.opts.PassThrough:
		d.report(ctx, ev.Type, actionPass, rej)
		return ev, true
	case ev.Type == watch.Added:
		d.report(ctx, ev.Type, actionSkip, rej)
		return watch.Event{}, false
	case obj == nil: // not unstructured: we cannot build a tombstone
		d.report(ctx, ev.Type, actionSkip, rej)
		return watch.Event{}, false
	default: // Modified or Deleted
		d.report(ctx, ev.Type, actionDelete, rej)
		return watch.Event{Type: watch.Deleted, Object: tombstone(obj, rej.Reason)}, true
	}
}

// tombstone returns apiVersion, kind and a copy of obj's metadata, annotated
// with the reason.
func tombstone(obj *unstructured.Unstructured, r fallback.ReasonCode) *unstructured.Unstructured {
	t := &unstructured.Unstructured{Object: map[string]any{}}
	if v, ok := obj.Object["apiVersion"]; ok {
		t.Object["apiVersion"] = v
	}
	if v, ok := obj.Object["kind"]; ok {
		t.Object["kind"] = v
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		if c, err := deepCopyJSON(md); err == nil {
			t.Object["metadata"] = c
		}
	}
	if _, ok := t.Object["metadata"].(map[string]any); !ok {
		// Metadata that cannot be copied: keep what the store's key needs.
		t.SetNamespace(obj.GetNamespace())
		t.SetName(obj.GetName())
		t.SetUID(obj.GetUID())
		t.SetResourceVersion(obj.GetResourceVersion())
	}
	ann := t.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[RejectedAnnotation] = string(r)
	t.SetAnnotations(ann)
	return t
}

func (d *listerWatcher) report(ctx context.Context, ev watch.EventType, a string, rej *RejectedError) {
	d.rec.Fallback(d.opts.Name, "canonical:"+a+":"+string(rej.Reason))
	if lg := klog.FromContext(ctx).V(2); lg.Enabled() {
		kv := []any{"decorator", d.opts.Name, "namespace", rej.Namespace, "name", rej.Name,
			"reason", string(rej.Reason), "action", a}
		if ev != "" {
			kv = append(kv, "event", string(ev))
		}
		if rej.Shape != "" {
			kv = append(kv, "shape", rej.Shape)
		}
		if rej.Step != "" {
			kv = append(kv, "step", rej.Step)
		}
		if rej.Err != nil {
			kv = append(kv, "err", rej.Err.Error())
		}
		lg.Info("canonical: object not in a supported shape", kv...)
	}
	if d.opts.OnReject != nil {
		d.opts.OnReject(ctx, Rejection{Event: ev, Action: a, Err: rej})
	}
}

// canonicalWatch decorates one watch.Interface.
type canonicalWatch struct {
	d        *listerWatcher
	inner    watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *canonicalWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *canonicalWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *canonicalWatch) run(ctx context.Context) {
	defer close(w.out)
	defer w.Stop()
	in := w.inner.ResultChan()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		out, deliver := w.d.event(ctx, ev)
		if !deliver {
			continue
		}
		select {
		case w.out <- out:
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}
