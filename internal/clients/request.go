package clients

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/wirewait"
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
//
// Until its headers arrive, the watch is bounded as streamOnce bounds a
// list; after that, only by the watch pipeline's stall watchdog.
func watchOnce(ctx context.Context, r *rest.Request) (watch.Interface, error) {
	ctx, g := guard(ctx, r)
	w, err := once(r).Watch(ctx)
	if err != nil {
		g.Stop()
		return nil, g.Err(err)
	}
	g.Answered()
	if reflect.TypeOf(w) == emptyWatchType {
		w.Stop()
		g.Stop()
		return nil, &fallback.ConnectionLostError{Method: http.MethodGet, URL: r.URL().Redacted()}
	}
	if g == nil {
		return w, nil
	}
	return guardedWatch{Interface: w, g: g}, nil
}

// guardedWatch ends its request's guard when it is stopped.
type guardedWatch struct {
	watch.Interface
	g *wirewait.Guard
}

func (w guardedWatch) Stop() {
	w.Interface.Stop()
	w.g.Stop()
}

// streamOnce sends a list request once (no retry inside client-go) and
// returns its body, read ahead of its decoder (readAhead). The request is bounded by policy.Policy.ResponseTimeout
// (the lister puts it on ctx; fallback.DefaultResponseTimeout otherwise):
// no headers within it, or a body read that waits longer for bytes, ends
// the request with a *fallback.NoAnswerError.
func streamOnce(ctx context.Context, r *rest.Request) (io.ReadCloser, error) {
	ctx, g := guard(ctx, r)
	body, err := r.MaxRetries(0).Stream(ctx) // once: no retry inside client-go
	if err != nil {
		g.Stop()
		return nil, g.Err(err)
	}
	g.Answered()
	return newReadAhead(g.Body(body)), nil
}

// guard bounds one request of the SDK's own clients (package wirewait).
func guard(ctx context.Context, r *rest.Request) (context.Context, *wirewait.Guard) {
	path := r.URL().Path
	return wirewait.Start(ctx, wirewait.BoundFrom(ctx, fallback.DefaultResponseTimeout), func(p wirewait.Phase, d time.Duration) error {
		return &fallback.NoAnswerError{Method: http.MethodGet, Path: path, Waiting: string(p), After: d}
	})
}

// WatchObserved calls a watch function the SDK did not build, with an HTTP
// trace on its context: more than one request written is a retry inside
// client-go's REST client, which it logs with the count; client-go's empty
// watch after a last request that got no answer is a lost connection,
// which it returns as a *fallback.ConnectionLostError (as the SDK's own
// adapters do) instead of a watch that ends at once without an error.
// With cut, a retry of client-go's that would loop ends the call
// (retryCut).
func WatchObserved(ctx context.Context, o metav1.ListOptions, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), cut bool) (watch.Interface, error) {
	var wrote atomic.Int32
	var answered atomic.Bool // the last request written got an answer
	var rc retryCut
	ct := &httptrace.ClientTrace{
		WroteHeaders:         func() { wrote.Add(1); answered.Store(false) },
		GotFirstResponseByte: func() { answered.Store(true); rc.gotAnswer() },
	}
	if cut {
		ct.GetConn = func(string) { rc.attempt() }
	}
	// The watch's context outlives the call: it is cancelled when the
	// caller's is, or at once when the call fails.
	tctx, cancel := rc.begin(httptrace.WithClientTrace(ctx, ct))
	w, err := watchFn(tctx, o)
	if err = rc.end(tctx, err); err != nil {
		cancel(nil)
		return nil, err
	}
	n := wrote.Load()
	if n > 1 {
		klog.FromContext(ctx).V(2).Info("client-go's REST client retried a watch request on its own (build the client from fallback.NoHiddenRetries to leave every retry to steadywatch)",
			"wireRequests", n, "resourceVersion", o.ResourceVersion)
	}
	if n > 0 && !answered.Load() && reflect.TypeOf(w) == emptyWatchType {
		w.Stop()
		cancel(nil)
		return nil, &fallback.ConnectionLostError{Method: http.MethodGet, URL: "(watch)"}
	}
	return w, err
}
