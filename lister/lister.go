package lister

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// Lister runs list calls with explicit semantics against one Client. It is
// safe for concurrent use.
type Lister struct {
	c Client
	o Options
}

// New returns a Lister. The zero Options are safe defaults; o is resolved
// with no example object (Options.Resolve).
func New(c Client, o Options) *Lister {
	o = o.Resolve(nil)
	return &Lister{c: withTransform(withScopedItems(c), o), o: o}
}

// pageFunc receives one page (a list object with its items). It must not
// keep the page if memory is to stay bounded; returning an error stops the
// list and returns that error.
type pageFunc func(page runtime.Object) error

// PageOption configures ListPages.
type PageOption func(*pageConfig)

type pageConfig struct {
	onRestart func(fallback.Event) error
	item      func(runtime.Object) error // ItemByItem
}

// OnRestart lets ListPages restart a list after pages were handed over
// (a continue token expired and the policy restarts): fn is called first and
// must discard every page received so far; the pages after it are a new
// snapshot. Without OnRestart, such a restart is refused and ListPages fails
// with ErrContinueExpired, so pages of two snapshots can never be mixed.
func OnRestart(fn func(ev fallback.Event) error) PageOption {
	return func(c *pageConfig) { c.onRestart = fn }
}

// ItemByItem asks ListPages to hand each page's items to item one by one,
// as the client decodes them, where the client decodes lists itself
// (FromClientset and FromRESTClient, FromDynamicConfig, FromMetadataConfig,
// Decoding.ClientFor's clients): a page's items are then never held
// together, so a list the server answers in one response is held one item
// at a time. The page function receives each page first, with its ListMeta
// and no items, before any of its items are handed over (check its
// resourceVersion there); item then receives them, after Options.Transform.
// With any other client (FromFuncs, FromDynamic, FromMetadata, a fake
// clientset's), pages are delivered whole, as without ItemByItem.
//
// The lister judges each answer from its ListMeta before the page function
// sees it, with the rule it applies to a whole page: an answer older than a
// NotOlderThan list asks, served at another resourceVersion than an Exact
// list asks, or continuing another snapshot is refused before any of its
// items is decoded, and retried (or fallen back from, or failed) as a whole
// page is; nothing of it is handed over. Items are otherwise handed over
// before the lister has the whole answer: one it then discards for another
// request (a body cut midway and retried) is voided through OnRestart, as a
// restart is: ItemByItem requires OnRestart, and without it pages are
// delivered whole. A failure that ends the call ends it after the items
// already handed over. A lister with Options.ListGate delivers pages whole, as
// without ItemByItem: the gate exists to share one answer among the
// callers that start together, and an answer handed over item by item
// reaches only one of them.
func ItemByItem(item func(obj runtime.Object) error) PageOption {
	return func(c *pageConfig) { c.item = item }
}

// List returns the whole list for q as one list object of the client's list
// type (all pages, one snapshot, no continue token), and its Record. Items
// are moved from each page into the result as the page arrives, so pages are
// not held twice.
//
// Memory follows the items that have arrived, never a number the server
// claims: the result grows as pages are appended, to at most twenty times
// the items received so far; within that cap the server's
// remainingItemCount sizes the growth so the last pages fit without more
// reallocations (a 10,000-item list in pages of 500 is allocated once).
func (l *Lister) List(ctx context.Context, q Query) (runtime.Object, *Record, error) {
	return l.list(ctx, q, metav1.ListOptions{LabelSelector: l.o.LabelSelector, FieldSelector: l.o.FieldSelector})
}

func (l *Lister) list(ctx context.Context, q Query, base metav1.ListOptions) (runtime.Object, *Record, error) {
	var acc runtime.Object
	rec, err := l.run(ctx, q, base, func(page runtime.Object) error {
		if acc == nil {
			acc = page
			return nil
		}
		return appendItems(acc, page)
	}, &pageConfig{onRestart: func(fallback.Event) error { acc = nil; return nil }})
	if err != nil {
		return nil, rec, err
	}
	if acc == nil {
		return nil, rec, fmt.Errorf("list %s: no page received", q)
	}
	if lm, err := meta.ListAccessor(acc); err == nil {
		lm.SetContinue("")
		lm.SetRemainingItemCount(nil)
		lm.SetResourceVersion(rec.ServedResourceVersion)
	}
	return acc, rec, nil
}

// ListPages runs q page by page and hands each page to page as it arrives;
// memory stays bounded by the page size (set it with q.WithLimit). The
// Record's RemainingItemCount (and each page's ListMeta) show progress.
func (l *Lister) ListPages(ctx context.Context, q Query, page pageFunc, opts ...PageOption) (*Record, error) {
	cfg := &pageConfig{}
	for _, o := range opts {
		o(cfg)
	}
	return l.run(ctx, q, l.baseOptions(), page, cfg)
}

// CurrentResourceVersion returns the collection's current resourceVersion:
// the ListMeta.resourceVersion of one limit=1 MostRecent list with the
// lister's selectors (KEP-2523: a MostRecent list is served at the current
// resourceVersion), or "" if the answer carries none. It is the request the
// lister sends to find a newer resourceVersion after a 410, recorded in the
// Record as PurposeNewerRVProbe; it is not retried, and not counted as a
// list in Metrics.List. reflector.New uses it to list from the watch cache
// not older than now.
func (l *Lister) CurrentResourceVersion(ctx context.Context) (string, *Record, error) {
	start := time.Now()
	q := fallback.MostRecentQuery().WithLimit(1)
	rec := &Record{Requested: q}
	var wire wireTally
	_, ans, sr, sent := l.send(wire.trace(ctx), &wire, nil, engine.Request{Purpose: engine.PurposeNewerRV, Query: q, Form: fallback.Match, Options: q.ApplyTo(l.baseOptions(), fallback.Match)})
	if sent {
		sr.Class = fallback.Classify(ans.Err)
		rec.Requests = append(rec.Requests, sr)
	}
	rec.Duration = time.Since(start)
	if ans.Err != nil {
		return "", rec, ans.Err
	}
	rec.ServedResourceVersion = ans.ServedRV // "" says it: the caller decides
	return ans.ServedRV, rec, nil
}

// GetExact returns the object name as it was at exactly resourceVersion rv:
// a list with fieldSelector=metadata.name=NAME at Exact(rv) (KEP-2523,
// "Impact on get calls"), with the same verification and fallbacks as List.
// An object that did not exist at rv is a NotFound error. If the client spans
// namespaces and several objects have that name, it is an error.
//
// Servers before v1.19 answer a list whose field selector names one object
// from that object's newest revision, ignoring resourceVersion and limit
// (k8s.io/apiserver v0.18 registry Store.List -> storage GetToList; verified
// on a real v1.18.19), so the single-object list is never exact there even
// with a limit. When that happens (the list fails with reason
// "rule2-exact-mismatch-with-limit"), GetExact scans the collection at
// Exact(rv) page by page (Options.PageSize; a paginated collection list is
// legacy Exact on those servers) and keeps only the object named name: one
// more list of the whole collection, never data from another resourceVersion.
// The Record then holds both attempts, the scan's event ("get-exact-name-list-not-exact-scan-collection")
// between them.
func (l *Lister) GetExact(ctx context.Context, name, rv string) (runtime.Object, *Record, error) {
	base := l.baseOptions()
	sel := fields.OneTermEqualSelector("metadata.name", name)
	if base.FieldSelector != "" {
		other, err := fields.ParseSelector(base.FieldSelector)
		if err != nil {
			return nil, nil, fmt.Errorf("get %q: field selector: %w", name, err)
		}
		sel = fields.AndSelectors(sel, other)
	}
	named := base
	named.FieldSelector = sel.String()
	list, rec, err := l.list(ctx, fallback.ExactQuery(rv), named)
	var le *Error
	if err != nil && errors.As(err, &le) && reason.Code(le.Reason) == reason.Rule2MismatchWithLimit {
		return l.getExactByScan(ctx, name, rv, base, rec, err)
	}
	if err != nil {
		return nil, rec, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, rec, err
	}
	return oneNamed(items, name, rv, rec)
}

// getExactByScan lists the collection at Exact(rv) page by page and keeps
// the items named name; first is the failed single-object attempt.
func (l *Lister) getExactByScan(ctx context.Context, name, rv string, base metav1.ListOptions, first *Record, cause error) (runtime.Object, *Record, error) {
	q := fallback.ExactQuery(rv).WithLimit(l.o.PageSize)
	ev := fallback.Event{Reason: fallback.ReasonCode(reason.GetExactScan), Action: fallback.RetryWithLimit, Attempt: len(first.Requests),
		Before: fallback.ExactQuery(rv), After: q, Err: cause,
		Detail: "the server answered fieldSelector=metadata.name at another resourceVersion even with a limit (servers before v1.19 read one object at its newest revision); scanning the collection at the exact resourceVersion"}
	l.o.Metrics.Fallback(l.o.Name, string(ev.Reason))
	klog.FromContext(ctx).WithValues("lister", l.o.Name).V(2).Info("list fallback", "reason", string(ev.Reason),
		"action", ev.Action.String(), "before", ev.Before.String(), "after", ev.After.String(), "detail", ev.Detail)
	var found []runtime.Object
	scan, err := l.run(ctx, q, base, func(page runtime.Object) error {
		items, err := meta.ExtractList(page)
		if err != nil {
			return err
		}
		for _, it := range items {
			if m, aerr := meta.Accessor(it); aerr == nil && m.GetName() == name {
				found = append(found, it.DeepCopyObject())
			}
		}
		return nil
	}, &pageConfig{onRestart: func(fallback.Event) error { found = nil; return nil }})
	rec := &Record{
		Requested: first.Requested, Served: scan.Served, ServedResourceVersion: scan.ServedResourceVersion,
		Requests:           append(append([]SentRequest(nil), first.Requests...), scan.Requests...),
		Fallbacks:          append(append(append([]fallback.Event(nil), first.Fallbacks...), ev), scan.Fallbacks...),
		RemainingItemCount: scan.RemainingItemCount, Pages: scan.Pages, Items: scan.Items, Restarts: scan.Restarts,
		Duration: first.Duration + scan.Duration,
	}
	if err != nil {
		return nil, rec, err
	}
	return oneNamed(found, name, rv, rec)
}

func oneNamed(items []runtime.Object, name, rv string, rec *Record) (runtime.Object, *Record, error) {
	switch len(items) {
	case 0:
		return nil, rec, fmt.Errorf("get %q at resourceVersion %s: %w", name, rv, apierrors.NewNotFound(schema.GroupResource{}, name))
	case 1:
		return items[0], rec, nil
	}
	return nil, rec, fmt.Errorf("get %q at resourceVersion %s: %d objects have that name (client spans namespaces)", name, rv, len(items))
}

func (l *Lister) baseOptions() metav1.ListOptions {
	return l.o.withSelectors(metav1.ListOptions{})
}

// appendItems moves src's items to the end of dst's. Typed, unstructured and
// metadata lists keep their items in an Items slice of values: appending the
// slice copies each item once and lets src's backing array go. When dst's
// slice must grow, its new capacity follows the items that have arrived
// (growCap), never the server's remainingItemCount alone.
func appendItems(dst, src runtime.Object) error {
	dv, sv := itemsField(dst), itemsField(src)
	if dv.IsValid() && sv.IsValid() && dv.Type() == sv.Type() {
		if need := dv.Len() + sv.Len(); need > dv.Cap() {
			grown := reflect.MakeSlice(dv.Type(), dv.Len(), growCap(need, remainingOf(src)))
			reflect.Copy(grown, dv)
			dv.Set(grown)
		}
		dv.Set(reflect.AppendSlice(dv, sv))
		sv.Set(reflect.Zero(sv.Type()))
		return nil
	}
	a, err := meta.ExtractList(dst)
	if err != nil {
		return err
	}
	b, err := meta.ExtractList(src)
	if err != nil {
		return err
	}
	return meta.SetList(dst, append(a, b...))
}

// growCap is the capacity of a result that must hold need items (the items
// that have arrived). Without a claim from the server it doubles, as append
// does. With one (remaining >= 0, the page's remainingItemCount) it makes
// room for exactly need+remaining, but never more than maxGrowth times
// need: the server's number is untrusted input and can only guide growth
// within that cap, never size memory on its own.
func growCap(need int, remaining int64) int {
	if remaining < 0 {
		return 2 * need
	}
	if remaining > int64(maxGrowth-1)*int64(need) {
		return maxGrowth * need
	}
	return need + int(remaining)
}

// maxGrowth caps how far a server's remainingItemCount may grow List's
// result past the items that have arrived. The result holds the items'
// structs, not their data: twenty structs per received object stay a small
// multiple of what the objects themselves take, and one page of the
// default size sizes a list of up to twenty pages in one allocation.
const maxGrowth = 20

// remainingOf is page's remainingItemCount, or -1 when it has none.
func remainingOf(page runtime.Object) int64 {
	if lm, err := meta.ListAccessor(page); err == nil && lm.GetRemainingItemCount() != nil && *lm.GetRemainingItemCount() >= 0 {
		return *lm.GetRemainingItemCount()
	}
	return -1
}

func itemsField(obj runtime.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	f := v.Elem().FieldByName("Items")
	if !f.IsValid() || f.Kind() != reflect.Slice || !f.CanSet() {
		return reflect.Value{}
	}
	return f
}
