package fallback

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/steadywatch/steadywatch/internal/wirewait"
)

// DefaultResponseTimeout is Policy.ResponseTimeout's default, and the bound
// of OwnRetryAfter's transport for a request sent without a Policy.
//
// A real kube-apiserver answers every request that is not long-running (a
// list, a get, discovery) within its --request-timeout, 60 s by default,
// or ends it: its timeout filter (k8s.io/apiserver/pkg/server/filters,
// WithTimeoutForNonLongRunningRequests) answers 504 when no headers were
// written by then, and aborts the response when they were. It writes a
// watch's headers as soon as the watch starts. So a request that has heard
// nothing for longer than that will not hear anything: the 10 s beyond the
// apiserver's own 60 s leave its 504 room to arrive first.
const DefaultResponseTimeout = 70 * time.Second

// ErrNoAnswer matches every *NoAnswerError (errors.Is).
var ErrNoAnswer = errors.New("no answer from the server within lister.Options.ResponseTimeout")

// NoAnswerError is the error of a request that heard nothing from the
// server for Policy.ResponseTimeout: no response headers after the request
// was written, or, while a list body was read, no more bytes. The server
// (or a proxy in front of it) accepted the request and then went silent.
// The request was ended; Classify reads it as NoAnswer, which the lister
// and the reflector retry after Policy.Backoff like a transport failure,
// and count as a request.
type NoAnswerError struct {
	// Method and Path of the request: the URL's path only, never its
	// query or credentials.
	Method, Path string
	// Waiting is what the request was waiting for: "response headers" or
	// "more of the response body".
	Waiting string
	// After is the bound that ran out (Policy.ResponseTimeout).
	After time.Duration
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("steadywatch: %s %s: no %s from the server within %s (lister.Options.ResponseTimeout); request ended", e.Method, e.Path, e.Waiting, e.After)
}

// Is makes errors.Is(err, ErrNoAnswer) true.
func (e *NoAnswerError) Is(target error) bool { return target == ErrNoAnswer }

// guardRequest returns a context for one request bounded by the bound ctx
// carries (the lister puts Policy.ResponseTimeout there) or
// DefaultResponseTimeout, and the guard that ends it with a *NoAnswerError
// (nil: no bound).
func guardRequest(ctx context.Context, req *http.Request) (context.Context, *wirewait.Guard) {
	method, path := req.Method, req.URL.Path
	return wirewait.Start(ctx, wirewait.BoundFrom(ctx, DefaultResponseTimeout), func(p wirewait.Phase, d time.Duration) error {
		return &NoAnswerError{Method: method, Path: path, Waiting: string(p), After: d}
	})
}
