package clients

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
)

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

// WatchObserved calls a watch function the SDK did not build, with an HTTP
// trace on its context: more than one request written is a retry inside
// client-go's REST client, which it logs with the count; client-go's empty
// watch after a last request that got no answer is a lost connection,
// which it returns as a *fallback.ConnectionLostError (as the SDK's own
// adapters do) instead of a watch that ends at once without an error.
func WatchObserved(ctx context.Context, o metav1.ListOptions, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
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
