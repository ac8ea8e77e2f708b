package reflector

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/rvwait"
)

// ErrIncomparableResourceVersion is matched (errors.Is) by the error of a
// wait that cannot be decided: the server sent a resourceVersion that is
// not comparable under KEP-5504 (an aggregated API with opaque versions),
// or the version asked for is not. Read from the server instead.
var ErrIncomparableResourceVersion = rvwait.ErrIncomparable

// ErrNoResourceVersionWait is returned by WaitForResourceVersion for an
// informer that does not know which resourceVersion its store reflects
// (client-go's own, or one steadywatch adopted without its reflector).
var ErrNoResourceVersionWait = errors.New("informer cannot wait for a resourceVersion")

// WaitForResourceVersion returns nil once the store this reflector feeds
// reflects resourceVersion rv or a newer one: an object, a deletion, a list
// or a bookmark at rv or later was applied (a bookmark newer than every
// object counts). It returns at once when it already does or when rv is
// "". Versions are compared as KEP-5504 defines it
// (k8s.io/apimachinery/pkg/util/resourceversion).
//
// It is woken by the store's advances, so it costs nothing while it waits.
// The store advances on every watch event and, on an idle resource, at the
// next bookmark (the apiserver sends about one a minute); ctx bounds the
// wait, and its error is returned (wrapped) when it ends first.
//
// Once the server has sent a resourceVersion that is not comparable, every
// wait fails at once with an error matching ErrIncomparableResourceVersion.
//
// With a DeltaFIFO or RealFIFO as the store, "reflects" means the queue
// received it, not that a processing loop applied it to an indexer.
func (r *Reflector) WaitForResourceVersion(ctx context.Context, rv string) error {
	return r.seen.Wait(ctx, rv)
}

// reflects records that the store now reflects rv (setParsedRV, after the
// store applied it) and reports it.
func (r *Reflector) reflects(rv string) {
	if !r.seen.Observe(rv) {
		return
	}
	if r.o.Metrics != nil {
		r.o.Metrics.StoreResourceVersion(r.name, rv)
	}
}

// resourceVersionWaiter is an informer that knows which resourceVersion
// its indexer reflects.
type resourceVersionWaiter interface {
	WaitForResourceVersion(ctx context.Context, rv string) error
}

// WaitForResourceVersion returns nil once informer's indexer reflects rv or
// a newer version, as (*Reflector).WaitForResourceVersion does, for an
// informer steadywatch built (every informer constructor of this package;
// wrappers such as client-go's typed accessors are looked through). For any
// other informer
// (client-go's own) it returns an error matching ErrNoResourceVersionWait
// at once.
func WaitForResourceVersion(ctx context.Context, informer cache.SharedInformer, rv string) error {
	for range 8 { // wrappers of wrappers, bounded (as AdoptionOf)
		if w, ok := informer.(resourceVersionWaiter); ok {
			return w.WaitForResourceVersion(ctx, rv)
		}
		if informer = embeddedInformer(informer); informer == nil {
			break
		}
	}
	return ErrNoResourceVersionWait
}
