package lister

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
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
// reflector counts, and each wait is one it caps (Policy.MaxRetryAfter).
// The adapters of functions (FromFuncs, FromDynamic, FromMetadata,
// FromListerWatcher) send what those functions send: build their clients
// from fallback.NoHiddenRetries(cfg) for the same. Otherwise client-go's
// retries inside them stay, and client-go sleeps what the server asks
// before each (until the caller's context ends): the lister counts them
// (SentRequest.WireRequests, charged to Policy.Backoff), logs those of
// watches, and turns client-go's empty watch after a lost connection into
// a *fallback.ConnectionLostError, but cannot shorten the sleep.

// once is a request of the SDK's own adapters: no retry inside client-go.
func once(r *rest.Request) *rest.Request { return r.MaxRetries(0) }

// emptyWatchType is the type of client-go's watch.NewEmptyWatch(), which
// rest.Request.Watch returns, with no error, for a connection that failed
// with EOF or a timeout once its retries are spent.
var emptyWatchType = reflect.TypeOf(watch.NewEmptyWatch())

// watchOnce sends a watch request once (no retry inside client-go) and
// turns client-go's empty watch for a failed connection into a
// *fallback.ConnectionLostError, so that the caller sees the failure and
// counts it, instead of a watch that ends at once without an error.
func watchOnce(ctx context.Context, r *rest.Request) (watch.Interface, error) {
	w, err := once(r).Watch(ctx)
	if err == nil && reflect.TypeOf(w) == emptyWatchType {
		w.Stop()
		return nil, &fallback.ConnectionLostError{Method: http.MethodGet, URL: r.URL().Redacted()}
	}
	return w, err
}

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

func (f funcClient[L]) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l, err := f.list(ctx, o)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (f funcClient[L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return watchObserved(ctx, o, f.watch)
}

// watchObserved calls a watch function the SDK did not build, with an HTTP
// trace on its context: more than one request written is a retry inside
// client-go's REST client, which it logs with the count; client-go's empty
// watch after a last request that got no answer is a lost connection,
// which it returns as a *fallback.ConnectionLostError (as the SDK's own
// adapters do) instead of a watch that ends at once without an error.
func watchObserved(ctx context.Context, o metav1.ListOptions, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
	var wrote atomic.Int32
	var answered atomic.Bool // the last request written got an answer
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders:         func() { wrote.Add(1); answered.Store(false) },
		GotFirstResponseByte: func() { answered.Store(true) },
	})
	w, err := watchFn(tctx, o)
	n := wrote.Load()
	if n > 1 {
		klog.FromContext(ctx).V(2).Info("client-go's REST client retried a watch request on its own (build the client from fallback.NoHiddenRetries to leave every retry to steadywatch)",
			"wireRequests", n, "resourceVersion", o.ResourceVersion)
	}
	if err == nil && n > 0 && !answered.Load() && reflect.TypeOf(w) == emptyWatchType {
		w.Stop()
		return nil, &fallback.ConnectionLostError{Method: http.MethodGet, URL: "(watch)"}
	}
	return w, err
}
