// Package wirewait bounds how long one HTTP request waits for the server:
// for the response's headers once the request is written, and, while a
// list body is read, for each next bytes. It is the one implementation of
// policy.Policy.ResponseTimeout, used by the SDK's own clients (package
// internal/clients) and by fallback.OwnRetryAfter's transport.
//
// It is not a deadline on the whole request: a huge list whose bytes keep
// arriving may take as long as it takes; only silence is bounded. A watch
// is bounded until its headers arrive only: after that, silence is normal
// and the watch pipeline's stall watchdog (Options.StallTimeout) decides.
package wirewait

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync"
	"time"
)

// Phase is what a request was waiting for when its bound ran out.
type Phase string

const (
	// Headers: the response's status and headers, after the request was
	// written.
	Headers Phase = "response headers"
	// Body: more bytes of a response body being read.
	Body Phase = "more of the response body"
)

type boundKey struct{}

type guardedKey struct{}

// WithBound returns ctx carrying d as the bound for the requests sent under
// it: d < 0 is none, 0 leaves ctx as it is (the default applies).
func WithBound(ctx context.Context, d time.Duration) context.Context {
	if d == 0 || BoundFrom(ctx, 0) == d {
		return ctx
	}
	return context.WithValue(ctx, boundKey{}, d)
}

// BoundFrom returns the bound ctx carries (WithBound) or def; a result <= 0
// means none.
func BoundFrom(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Value(boundKey{}).(time.Duration); ok {
		return d
	}
	return def
}

// Guarded reports whether ctx is a guarded request's (Start): a transport
// below the guard leaves it alone.
func Guarded(ctx context.Context) bool { return ctx.Value(guardedKey{}) != nil }

// Guard bounds one request. Its methods are safe on a nil Guard (no bound).
type Guard struct {
	d      time.Duration
	cancel context.CancelCauseFunc
	cause  func(Phase, time.Duration) error

	mu    sync.Mutex
	timer *time.Timer
	phase Phase
	err   error // the cause, once the bound ran out
}

// Start returns a context for one request bounded by d (d <= 0: ctx itself
// and a nil Guard) and its Guard. The wait for headers starts when the
// request is written (net/http/httptrace WroteRequest), so that neither the
// client's rate limiter nor dialing counts; when d passes first, the
// request's context ends with cause(Headers, d) as its cause, which Err
// returns in place of the transport's error. Call Answered once the
// response's headers are in, then Body for a list body, or Stop.
func Start(ctx context.Context, d time.Duration, cause func(Phase, time.Duration) error) (context.Context, *Guard) {
	if d <= 0 {
		return ctx, nil
	}
	g := &Guard{d: d, cause: cause}
	ctx, g.cancel = context.WithCancelCause(context.WithValue(ctx, guardedKey{}, true))
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { g.arm(Headers) },
		GotFirstResponseByte: g.Answered,
	})
	return ctx, g
}

func (g *Guard) arm(p Phase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	g.phase = p
	if g.timer == nil {
		g.timer = time.AfterFunc(g.d, g.fire)
		return
	}
	g.timer.Reset(g.d)
}

// Answered stops the wait for headers (the response arrived), or for a
// body's next bytes (they arrived).
func (g *Guard) Answered() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		g.timer.Stop()
	}
}

func (g *Guard) fire() {
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return
	}
	g.err = g.cause(g.phase, g.d)
	err := g.err
	g.mu.Unlock()
	g.cancel(err)
}

// Err returns the bound's error when it ran out, err otherwise.
func (g *Guard) Err(err error) error {
	if g == nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil && err != nil {
		return g.err
	}
	return err
}

// Stop ends the guard and the request's context.
func (g *Guard) Stop() {
	if g == nil {
		return
	}
	g.Answered()
	g.cancel(context.Canceled)
}

// Body returns rc bounded: each Read waits at most the bound for bytes
// (the time between reads, the caller's own, is not counted), and fails
// with the bound's error when it ran out. Close also stops the guard.
func (g *Guard) Body(rc io.ReadCloser) io.ReadCloser {
	if g == nil {
		return rc
	}
	return &body{rc: rc, g: g, inactivity: true}
}

// Closing returns rc whose Close also stops the guard, with no bound on
// its reads: a watch's body, silent for as long as nothing changes.
func (g *Guard) Closing(rc io.ReadCloser) io.ReadCloser {
	if g == nil {
		return rc
	}
	g.Answered()
	return &body{rc: rc, g: g}
}

type body struct {
	rc         io.ReadCloser
	g          *Guard
	inactivity bool
}

func (b *body) Read(p []byte) (int, error) {
	if !b.inactivity {
		return b.rc.Read(p)
	}
	b.g.arm(Body)
	n, err := b.rc.Read(p)
	b.g.Answered()
	if err != nil && err != io.EOF {
		err = b.g.Err(err)
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.g.Stop()
	return err
}
