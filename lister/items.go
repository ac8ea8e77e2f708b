package lister

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/engine"
)

// This file hands a page's items over one by one as the client decodes
// them (ItemByItem), instead of as a page.

// itemLister is a Client that can hand a list's items over one by one as it
// decodes them (decode.Each): the SDK's own adapters, and this package's
// wrappers around them.
type itemLister interface {
	// listsItems reports whether this client decodes its lists itself.
	listsItems() bool
	listItems(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error)
}

func (c adapter) listsItems() bool {
	d, ok := c.c.(interface{ DecodesItems() bool })
	return !ok || d.DecodesItems()
}

func (c adapter) listItems(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	return decoded(c.c.ListTransformed(ctx, o, each))
}

func (c transformClient) listsItems() bool {
	il, ok := c.Client.(itemLister)
	return ok && il.listsItems()
}

// listItems applies the transform to each item before it is handed over.
func (c transformClient) listItems(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	e := *each
	e.Transform = c.tf.each()
	obj, err := c.Client.(itemLister).listItems(ctx, o, &e)
	if err != nil && errors.Is(err, ErrTransform) {
		c.tf.observe(ctx, err)
	}
	return obj, err
}

func (c metadataKinded) listsItems() bool {
	il, ok := c.Client.(itemLister)
	return ok && il.listsItems()
}

// listItems sets the example's apiVersion and kind on each item before it
// is handed over.
func (c metadataKinded) listItems(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	e := *each
	e.Item = func(obj runtime.Object) error {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.SetGroupVersionKind(c.gvk)
		}
		return each.Item(obj)
	}
	return c.Client.(itemLister).listItems(ctx, o, &e)
}

// scopedItems is clients.Scoped (WrapDecoding's client) or clients.Inferred
// (reflector.NewInformerFor's) as an itemLister: once its
// scope check has confirmed that the decoding client lists what the
// caller's ListerWatcher lists, a list call hands items over as the
// decoding client decodes them. Until then, lists are whole, each checked
// by Scoped.List; after a mismatch they stay whole, through the caller's
// ListerWatcher. New wraps a *clients.Scoped (and a *clients.Inferred) in
// it.
type scopedItems struct{ clients.ScopeChecked }

// confirmed returns the decoding client once the scope is confirmed (a
// decision that never changes again), else nil.
func (c scopedItems) confirmed() Client {
	if d := c.Confirmed(); d != nil {
		return d
	}
	return nil
}

func (c scopedItems) listsItems() bool {
	il, ok := c.confirmed().(itemLister)
	return ok && il.listsItems()
}

// listItems is only called once listsItems reported true: the scope is
// confirmed for good.
func (c scopedItems) listItems(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	il, ok := c.confirmed().(itemLister)
	if !ok {
		return nil, errors.New("lister: internal error: an item-by-item list before the decoding client's scope was confirmed")
	}
	return il.listItems(ctx, o, each)
}

// listTransformed applies tf to each item as the confirmed decoding client
// decodes it; before that (and after a mismatch), tf transforms the whole
// list.
func (c scopedItems) listTransformed(ctx context.Context, o metav1.ListOptions, tf *transformer) (runtime.Object, error) {
	if tl, ok := c.confirmed().(transformingLister); ok {
		return tl.listTransformed(ctx, o, tf)
	}
	obj, err := c.ScopeChecked.List(ctx, o)
	if err != nil {
		return nil, err
	}
	return obj, tf.list(obj)
}

// withScopedItems returns c ready to hand items over (scopedItems) when it
// checks its scope before it lists through a decoding client
// (clients.ScopeChecked), else c.
func withScopedItems(c Client) Client {
	if s, ok := c.(clients.ScopeChecked); ok && s != nil {
		return scopedItems{s}
	}
	return c
}

// handover is ItemByItem in one call: each page request's answer is
// decoded with its page function as decode.Each's Head and the caller's
// item function as its Item. Before the page function, the engine judges
// the answer from its ListMeta (engine.Call.AcceptsListMeta): one it
// refuses ends its decoding there, and nothing of it is handed over.
type handover struct {
	c itemLister
	// call is the engine's call as it was when the request in flight was
	// sent (a copy: the run loop's own stays on its stack, so a list call
	// without ItemByItem allocates nothing for it). Nothing changes the
	// call while its request is in flight, and head only reads it.
	call       engine.Call
	page       pageFunc
	item       func(runtime.Object) error
	unchanged  func(namespace, name, rv string) (bool, error) // knobs.Lister.Unchanged
	sampleSize bool                                           // estimate the page's bytes (knobs.Lister.MaxPageBytes)

	// The current answer's: headed, its page was handed over; refused, the
	// list (ListMeta, no items) the engine refused before it was; items,
	// the items handed over after it; first, the encoded size of the
	// first; err, what the caller's page or item function returned.
	headed  bool
	refused runtime.Object
	headRV  string
	items   int
	first   int64
	err     error
}

// errHeadRefused ends the decoding of an answer the engine refused from
// its ListMeta (handover.head); send reads the refused list instead.
var errHeadRefused = errors.New("lister: answer refused from its ListMeta before its items")

// handover returns ItemByItem's hand-over for this call, or nil when pages
// are delivered whole: no ItemByItem, no OnRestart (an answer discarded
// after its items were handed over could not be voided), a ListGate (its
// answers are shared whole among the callers that start together), or a
// client that does not decode its lists itself.
func (l *Lister) handover(page pageFunc, cfg *pageConfig) *handover {
	if cfg.item == nil || cfg.onRestart == nil || l.o.ListGate != nil {
		return nil
	}
	il, ok := l.c.(itemLister)
	if !ok || !il.listsItems() {
		return nil
	}
	return &handover{c: il, page: page, item: cfg.item, unchanged: l.o.knobs.Unchanged, sampleSize: l.o.knobs.MaxPageBytes > 0}
}

// forRequest returns h for a page request of call, nil for any other (a
// probe's answer is not a page).
func (h *handover) forRequest(call *engine.Call, req engine.Request) *handover {
	if req.Purpose != engine.PurposePage {
		return nil
	}
	h.call = *call
	h.headed, h.refused, h.headRV, h.items, h.first, h.err = false, nil, "", 0, 0, nil
	return h
}

// list sends one list request through h's client with h's hand-over.
func (h *handover) list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	each := &decode.Each{Head: h.head, Item: h.handItem}
	if h.unchanged != nil {
		each.Known = h.known
	}
	return h.c.listItems(ctx, o, each)
}

// head hands the page (its ListMeta, no items) over, unless the engine
// would not accept the answer its ListMeta belongs to (served older than a
// NotOlderThan list asks, an Exact list served at another resourceVersion,
// a continuation of another snapshot, ...): then the decoding ends with
// errHeadRefused, no further item is decoded and none is handed over
// (items a body sent before its ListMeta were held, and are dropped), and
// Next decides on the refused list as on a whole page. Only what the
// ListMeta proves is refused; anything else is handed over and decided
// once the answer is whole, as before.
func (h *handover) head(list runtime.Object) error {
	if lm, err := meta.ListAccessor(list); err == nil {
		if !h.call.AcceptsListMeta(lm.GetResourceVersion(), lm.GetContinue()) {
			h.refused = list
			return errHeadRefused
		}
		h.headRV = lm.GetResourceVersion()
	}
	h.headed = true
	if err := h.page(list); err != nil {
		h.err = err
	}
	return h.err
}

func (h *handover) handItem(obj runtime.Object) error {
	h.items++
	if h.first == 0 && h.sampleSize { // the first item decoded (known ones are not)
		h.first = objectBytes(obj)
	}
	if err := h.item(obj); err != nil {
		h.err = err
	}
	return h.err
}

// known is decode.Each.Known: an item the caller already holds at the same
// resourceVersion (knobs.Lister.Unchanged) counts as handed over without
// being decoded.
func (h *handover) known(namespace, name, rv string) (bool, error) {
	known, err := h.unchanged(namespace, name, rv)
	if err != nil {
		h.err = err
		return false, err
	}
	if known {
		h.items++
	}
	return known, nil
}

// counted sets what the answer held (its items were handed over, not kept).
func (h *handover) counted(ans *engine.Answer, sr *SentRequest) {
	ans.Items, sr.Items = h.items, h.items
	if ans.Continue != "" && h.first > 0 {
		ans.PageBytes = h.first * int64(h.items)
	}
}

// discarded reports whether step discards an answer whose page was handed
// over, for another request (afterDiscard).
func (h *handover) discarded(step engine.Step) bool {
	return h.headed && !step.Accept && !step.Done
}

// afterDiscard decides what becomes of the items of an answer discarded
// after they were handed over. A next request that starts the list again
// voids every page handed over (restart: OnRestart; the pages after it are
// a new snapshot). One that continues the list from its continue token
// keeps the pages before: when the discarded answer was served at the
// snapshot's resourceVersion its items are the snapshot's and come again;
// otherwise the call fails (ErrItemsDiscarded), since the pages before it
// cannot be voided alone and the items of two snapshots must not mix.
func (h *handover) afterDiscard(step engine.Step, rec *Record) (restart bool, err error) {
	if step.Next.Options.Continue == "" || rec.Pages == 0 {
		return true, nil
	}
	if h.headRV != "" && h.headRV == rec.ServedResourceVersion {
		return false, nil
	}
	return false, fmt.Errorf("%w: a page served at resourceVersion %q, the list's earlier pages at %q", ErrItemsDiscarded, h.headRV, rec.ServedResourceVersion)
}

// ErrItemsDiscarded is the error of a ListPages call with ItemByItem when a
// continuation page was discarded after its items were handed over, served
// at another resourceVersion than the pages before it: the call cannot
// resume the list without mixing two snapshots, and fails.
var ErrItemsDiscarded = errors.New("lister: a page discarded after its items were handed over (ItemByItem) belongs to another snapshot")

// objectBytes is obj's encoded size: its generated protobuf Size where it
// has one (built-in types), else its JSON length.
func objectBytes(obj runtime.Object) int64 {
	if s, ok := obj.(interface{ Size() int }); ok {
		return int64(s.Size())
	}
	if b, err := json.Marshal(obj); err == nil {
		return int64(len(b))
	}
	return 0
}
