package testfake

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// connKey keys the server side of a WireServer's connection in a request's
// context, for HangUp over HTTP/2.
type connKey struct{}

// WireServer serves h over HTTP (over TLS with HTTP/2 when h2) and counts
// the requests that reach it on the wire, client-go's hidden retries
// included. The config reaches it; the server closes when the test ends.
func WireServer(tb testing.TB, h2 bool, h http.HandlerFunc) (*rest.Config, *atomic.Int32) {
	tb.Helper()
	var n atomic.Int32
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	s.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	cfg := &rest.Config{}
	if h2 {
		s.EnableHTTP2 = true
		s.StartTLS()
		cfg.TLSClientConfig.Insecure = true
	} else {
		s.Start()
	}
	tb.Cleanup(s.Close)
	cfg.Host = s.URL
	return cfg, &n
}

// HangUp is a WireServer handler that closes the connection without an
// answer: the client reads EOF. Over HTTP/2 the whole connection goes,
// mid-request.
func HangUp(w http.ResponseWriter, r *http.Request) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
		}
		return
	}
	_ = r.Context().Value(connKey{}).(net.Conn).Close()
}

// ResetConn is a WireServer handler (HTTP/1.1) that aborts the connection
// with a TCP RST: the client reads "connection reset by peer".
func ResetConn(w http.ResponseWriter, _ *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Hold is a WireServer handler that accepts a request and never answers:
// no status, no headers, until the client gives up (its request's context
// ends, or the connection closes).
func Hold(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// StopMidBody returns a WireServer handler that answers 200 with the first
// bytes of body (a JSON list cut short), flushes them, and then sends
// nothing more until the client gives up.
func StopMidBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(body))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-r.Context().Done()
	}
}
