package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

// client-go's typed clients send lists through rest.Request.Do, which
// retries a GET whose connection failed up to 10 times, 1s apart. A client
// built from NoHiddenRetries sends it once and fails at once with a
// *fallback.ConnectionLostError.

// failing is a transport whose every round trip fails with err, counted.
type failing struct {
	err error
	n   *atomic.Int32
}

func (f failing) RoundTrip(*http.Request) (*http.Response, error) {
	f.n.Add(1)
	return nil, f.err
}

func TestNoHiddenRetriesOnConnectionFailure(t *testing.T) {
	h2Lost := errors.New("http2: client connection lost") // net/http's HTTP/2 health check, when a ping goes unanswered
	cases := []struct {
		name string
		cfg  func(t *testing.T) (*rest.Config, *atomic.Int32)
		is   error
		// or, where the kernel may answer a close with unread data with a
		// reset instead of an orderly end, this one (seen under load).
		orIs error
	}{
		{"EOF", func(t *testing.T) (*rest.Config, *atomic.Int32) {
			return testfake.WireServer(t, false, testfake.HangUp)
		}, io.EOF, nil},
		{"connection reset", func(t *testing.T) (*rest.Config, *atomic.Int32) {
			return testfake.WireServer(t, false, testfake.ResetConn)
		}, syscall.ECONNRESET, nil},
		{"HTTP/2 connection closed mid-request", func(t *testing.T) (*rest.Config, *atomic.Int32) { return testfake.WireServer(t, true, testfake.HangUp) }, io.ErrUnexpectedEOF, syscall.ECONNRESET},
		{"HTTP/2 connection lost", func(t *testing.T) (*rest.Config, *atomic.Int32) {
			var n atomic.Int32
			return &rest.Config{Host: "http://127.0.0.1:1", WrapTransport: func(http.RoundTripper) http.RoundTripper { return failing{h2Lost, &n} }}, &n
		}, h2Lost, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, n := c.cfg(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
			begin := time.Now()
			_, err := cms.List(ctx, metav1.ListOptions{})
			if got := n.Load(); got != 1 {
				t.Fatalf("list: %d requests; want 1 (%v)", got, err)
			}
			var cl *fallback.ConnectionLostError
			if !errors.As(err, &cl) || !errors.Is(err, fallback.ErrConnectionLost) || !(errors.Is(err, c.is) || c.orIs != nil && errors.Is(err, c.orIs)) || engine.Classify(err) != vocab.Transport {
				t.Fatalf("list error %v (%T); want a *fallback.ConnectionLostError matching %v, class transport", err, err, c.is)
			}
			if took := time.Since(begin); took > 2*time.Second {
				t.Fatalf("list took %v", took)
			}
			n.Store(0)
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
			if got := n.Load(); got != 1 || !errors.Is(err, fallback.ErrConnectionLost) {
				t.Fatalf("watch: %d requests, %v, %v; want 1 and a *fallback.ConnectionLostError (not client-go's empty watch)", got, w, err)
			}
		})
	}
}

// A negative Retry-After parses in client-go, which then retries at once,
// 10 times. NoHiddenRetries takes it too, as no delay.
func TestNoHiddenRetriesNegativeRetryAfter(t *testing.T) {
	cfg, n := server(t, 503, "-1", "application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"busy","reason":"ServiceUnavailable","code":503}`)
	list(t, cfg)
	if got := n.Load(); got != 11 {
		t.Fatalf("stock client: %d requests; want client-go's 1 + 10 immediate retries (the premise)", got)
	}
	n.Store(0)
	err := list(t, fallback.NoHiddenRetries(cfg))
	if got := n.Load(); got != 1 || !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("NoHiddenRetries: %d requests, %v; want 1 and the 503", got, err)
	}
	if ra, ok := engine.RetryAfter(err); ok && ra != 0 {
		t.Fatalf("RetryAfter = %v; a negative Retry-After asks for no delay", ra)
	}
}

// The message of a ConnectionLostError keeps the cause in words client-go's
// retry predicates do not match.
func TestConnectionLostErrorIsNotRetriedByClientGo(t *testing.T) {
	for _, cause := range []error{
		io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET,
		errors.New("read tcp 1.2.3.4:5->6.7.8.9:443: read: connection reset by peer"),
		errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1"),
		errors.New("http2: client connection lost"),
		errors.New("write: Use of closed network connection"),
		errors.New("http: can't write HTTP request on broken connection"),
		&net.OpError{Op: "read", Err: timeoutErr{}},
	} {
		if !fallback.RetriedByClientGo(cause) {
			t.Errorf("%v: not recognised as a failure client-go retries", cause)
			continue
		}
		err := error(&fallback.ConnectionLostError{Method: "GET", URL: "https://h/api/v1/configmaps", Err: cause})
		if fallback.RetriedByClientGo(err) || fallback.RetriedByClientGo(fmt.Errorf("Get %q: %w", "u", err)) {
			t.Errorf("%v: client-go would still retry it", err)
		}
		if !errors.Is(err, cause) {
			t.Errorf("%v: errors.Is(err, cause) false", err)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
