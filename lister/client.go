package lister

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/decode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// Client is any list/watch pair for one resource (and namespace). Adapters:
// FromClientset (typed clientsets), FromDynamicConfig (custom resources) and
// FromMetadataConfig (metadata only), whose lists are decoded item by item;
// FromDynamic, FromMetadata, FromFuncs (any list/watch functions), whose
// lists are the client's own.
type Client interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// The SDK's own adapters (FromClientset, FromRESTClient, FromDynamicConfig,
// FromMetadataConfig) send every request once: client-go's REST client
// makes no retry of its own inside it (fallback.NoHiddenRetries lists the
// retries it would make), so each request on the wire is one the lister or
// reflector counts, and each wait is one it caps (Options.MaxRetryAfter).
// The adapters of functions (FromFuncs, FromDynamic, FromMetadata,
// FromListerWatcher) send what those functions send: build their clients
// from fallback.NoHiddenRetries(cfg) for the same. Otherwise client-go
// retries inside them on its own. The retries that would loop are ended
// as client-go starts them, and retried after the lister's or reflector's
// own backoff: after a connection reset or EOF (client-go: every second),
// and at once after a 429 or 5xx with Retry-After 0 or less (the error is
// then a 503 that says so). A retry after a Retry-After of a second or
// more stays, and client-go sleeps what the server asks before it (until
// the caller's context ends): the lister counts those retries
// (SentRequest.WireRequests, charged to the call's retry budget), logs
// those of watches, and turns client-go's empty watch after a lost
// connection into a *fallback.ConnectionLostError, but cannot shorten the
// sleep.
//
// Every request of the SDK's own adapters, and of clients built from
// fallback.NoHiddenRetries, is bounded by Options.ResponseTimeout: one that
// hears nothing from the server for that long (no headers, or a list body
// that stops) ends with a *fallback.NoAnswerError and is retried after
// backoff. Other clients wait for the caller's context, as in
// client-go.

// ownClient is one of the SDK's own clients (package internal/clients).
type ownClient interface {
	Client
	ListTransformed(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error)
	RequestKey() string
}

// adapter is one of the SDK's own clients as a Client: an error of
// decoding a list body is a *ListBodyError.
type adapter struct{ c ownClient }

func (c adapter) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := c.c.List(ctx, o)
	if be, ok := err.(*decode.BodyError); ok {
		return list, (*ListBodyError)(be)
	}
	return list, err
}

func (c adapter) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.c.Watch(ctx, o)
}

// RequestKey implements listgate.RequestKeyer: the client's own.
func (c adapter) RequestKey() string { return c.c.RequestKey() }

// IsWatchListSemanticsUnSupported forwards the client's declaration (a
// fake clientset's).
func (c adapter) IsWatchListSemanticsUnSupported() bool { return declaresNoWatchList(c.c) }

// wireTally counts the HTTP requests written on the wire under a context,
// whoever sends them: client-go's REST client composes its own trace with
// the context's (httptrace.WithClientTrace), so its retries inside one
// request are counted too.
type wireTally struct{ written, taken atomic.Int32 }

// trace returns ctx with the tally's HTTP trace.
func (t *wireTally) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { t.written.Add(1) }})
}

// take returns the requests written since the last take, and logs when
// there was more than one (a retry inside client-go).
func (t *wireTally) take(log logr.Logger) int {
	n := t.written.Load()
	n -= t.taken.Swap(n)
	if n > 1 {
		log.V(2).Info("client-go's REST client retried a request on its own; counted (build the client from fallback.NoHiddenRetries to leave every retry to the lister)",
			"wireRequests", n)
	}
	return int(n)
}

// FromDynamic adapts a dynamic client resource, e.g.
// dyn.Resource(gvr).Namespace(ns). Lists are *unstructured.UnstructuredList.
func FromDynamic(ri dynamic.ResourceInterface) Client { return FromFuncs(ri.List, ri.Watch) }

// FromMetadata adapts a metadata client resource. Lists are
// *metav1.PartialObjectMetadataList. FromMetadataConfig sends the same
// requests and decodes lists item by item.
func FromMetadata(ri metadata.ResourceInterface) Client { return FromFuncs(ri.List, ri.Watch) }

// FromFuncs adapts a list/watch function pair, e.g. a typed clientset's
// (FromClientset does that and decodes lists item by item):
//
//	cms := cs.CoreV1().ConfigMaps(ns)
//	c := lister.FromFuncs(cms.List, cms.Watch)
func FromFuncs[L runtime.Object](
	list func(ctx context.Context, opts metav1.ListOptions) (L, error),
	watchFn func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error),
) Client {
	return funcClient[L]{list: list, watch: watchFn}
}

type funcClient[L runtime.Object] struct {
	list  func(ctx context.Context, opts metav1.ListOptions) (L, error)
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// RetriesInside implements clients.RetriesInside: client-go's REST client
// under f may retry on its own.
func (f funcClient[L]) RetriesInside() bool { return true }

func (f funcClient[L]) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return clients.ListCut(ctx, func(ctx context.Context) (runtime.Object, error) {
		l, err := f.list(ctx, o)
		if err != nil {
			return nil, err
		}
		return l, nil
	})
}

func (f funcClient[L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return clients.WatchObserved(ctx, o, f.watch, true)
}
