package clients

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
)

// A function the SDK did not build (lister.FromFuncs, FromDynamic,
// FromMetadata, FromListerWatcher, the ListWatch controller-runtime hands
// its informer hook), over a client-go client built without
// fallback.NoHiddenRetries, retries a GET on its own inside one call:
// client-go's REST client (rest/request.go, rest/with_retry.go) tries up
// to 11 times, after a connection reset or
// EOF every second, and after a 429 or 5xx every Retry-After, which it
// parses from any integer, 0 and negative included. Two of those are
// loops: a request sent again at once and again every second say nothing
// new about the server. retryCut ends the request when client-go starts
// such a retry (its context ends as the attempt asks for a connection;
// net/http may still write it, and then it is counted), and the lister or
// reflector retries after its own growing, jittered backoff instead,
// counted like any failed request.
//
// A retry after a Retry-After of a second or more is left to client-go: the
// answer it ends with is the server's (a 504 "too large resource version"
// must reach the engine as that: Kubernetes API Concepts, "Unavailable
// resource versions"), and its wait is the server's.
//
// The cut reads a second request of one call as client-go's retry: a
// function that sends two requests in a row (not one of client-go's
// ListWatch functions) would see its second ended when the first failed
// to connect, or when the second starts within half a second of the
// first's answer.

// RetriesInside is a client whose requests client-go's REST client may
// retry on its own inside one call (a function the SDK did not build, or,
// for now, Inferred while its lists go through one): a 504 "too large
// resource version" with its Retry-After up to 10 times.
type RetriesInside interface{ RetriesInside() bool }

// retryCut is one request's view of client-go's attempts: set by begin and
// end around one call of the client, read by the HTTP trace's hooks (GetConn
// before every attempt, GotFirstResponseByte after).
type retryCut struct {
	start    time.Time
	attempts atomic.Int32
	answered atomic.Int64 // time since start of the last answer's first byte, +1; 0: none yet
	cancel   atomic.Pointer[context.CancelCauseFunc]
}

// atOnce is how soon after an answer client-go's next attempt counts as
// sent at once: a Retry-After of 0 or less (client-go's own wait after a
// 429/5xx is otherwise at least a second).
const atOnce = 500 * time.Millisecond

// ListCut calls list, one call of a function the SDK did not build, under
// a retryCut of its own.
func ListCut(ctx context.Context, list func(context.Context) (runtime.Object, error)) (runtime.Object, error) {
	var cut retryCut
	ct := &httptrace.ClientTrace{GetConn: func(string) { cut.attempt() }, GotFirstResponseByte: cut.gotAnswer}
	ctx, cancel := cut.begin(httptrace.WithClientTrace(ctx, ct))
	defer cancel(nil)
	obj, err := list(ctx)
	return obj, cut.end(ctx, err)
}

// begin starts one call of a client under the cut, under the returned
// context; end ends it.
func (c *retryCut) begin(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	c.start = time.Now()
	c.attempts.Store(0)
	c.answered.Store(0)
	c.cancel.Store(&cancel)
	return ctx, cancel
}

// end disarms the cut after the call under ctx returned err: the cut's
// error when it ended the request, err otherwise.
func (c *retryCut) end(ctx context.Context, err error) error {
	c.cancel.Store(nil)
	var status *retryCutStatus
	if cause := context.Cause(ctx); err != nil && (errors.Is(cause, errRetryCut) || errors.As(cause, &status)) {
		return cause
	}
	return err
}

// attempt is the trace's GetConn: client-go is about to send an attempt.
func (c *retryCut) attempt() {
	cancel := c.cancel.Load()
	if cancel == nil || c.attempts.Add(1) < 2 {
		return
	}
	switch at := c.answered.Load(); {
	case at == 0:
		(*cancel)(connectionLost())
	case time.Since(c.start)-time.Duration(at-1) < atOnce:
		(*cancel)(&retryCutStatus{})
	}
}

// gotAnswer is the trace's GotFirstResponseByte.
func (c *retryCut) gotAnswer() {
	if c.cancel.Load() != nil {
		c.answered.Store(int64(time.Since(c.start)) + 1)
	}
}

// errRetryCut is the Err of the *fallback.ConnectionLostError of a
// request ended by retryCut without an answer.
var errRetryCut = errors.New("client-go's REST client was sending the request again; ended, steadywatch retries after its backoff " +
	"(build the client from fallback.NoHiddenRetries to leave every retry to steadywatch)")

// connectionLost is the cut's error without an answer: the connection
// failed (reset or EOF), as client-go saw it.
func connectionLost() error {
	return &fallback.ConnectionLostError{Method: http.MethodGet, URL: "(a request of a client steadywatch did not build)", Err: errRetryCut}
}

// retryCutStatus is a request ended by retryCut after an answer. It reads
// as a 503 (an apierrors.APIStatus): the server's answer, a 429 or 5xx, is
// client-go's and lost with the retry, and both are retried after a backoff
// alike.
type retryCutStatus struct{}

func (*retryCutStatus) Error() string {
	return "the server answered 429 or 5xx with Retry-After 0 or less, and " + errRetryCut.Error()
}

func (e *retryCutStatus) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable,
		Reason: metav1.StatusReasonServiceUnavailable, Message: e.Error()}
}
