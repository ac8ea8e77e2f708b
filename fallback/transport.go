package fallback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/wirewait"
)

// HeaderRetryAfterOwned carries the Retry-After value of a response that
// OwnRetryAfter took over, for logs and debugging proxies.
const HeaderRetryAfterOwned = "X-Steadywatch-Retry-After"

// maxOwnedErrorBody bounds how much of an error body OwnRetryAfter reads.
const maxOwnedErrorBody = 1 << 20

// NoHiddenRetries returns a copy of cfg whose clients never retry a request
// on their own, so that every request the SDK sends is one it counts and
// budgets (Policy.Backoff, Policy.MaxRetryAfter, MaxTooLargeRetries,
// Options.MaxRequests).
//
// # Retries client-go makes inside one request
//
// client-go v0.37's REST client (k8s.io/client-go/rest) retries inside one
// call, behind every budget of its caller, in these cases (rest.Config has
// no setting for any of them):
//
//  1. An answer 429 or 5xx whose Retry-After header strconv.Atoi parses
//     (rest/with_retry.go checkWait, rest/request.go retryAfterSeconds):
//     zero, negative (retried at once: NoBackoff.SleepWithContext returns
//     for a negative delay) and huge alike, up to Request.maxRetries times
//     (10 by default, rest.NewRequest): 11 requests per call. Before each
//     retry withRetry.Before sleeps the larger of the Retry-After and the
//     client's URL backoff, bounded only by the request's context, then
//     waits for the client's rate limiter. This holds for Do and DoRaw
//     (Request.request: every typed, dynamic and metadata client call),
//     Stream and Watch.
//  2. A GET through Do or DoRaw (Request.request) whose connection failed
//     before the answer: net.IsConnectionReset (ECONNRESET),
//     net.IsProbableEOF (EOF, unexpected EOF, "connection reset by peer",
//     an HTTP/2 GOAWAY, "use of closed network connection", a write on a
//     broken connection) or net.IsHTTP2ConnectionLost (the HTTP/2 health
//     check's "client connection lost"), from
//     k8s.io/apimachinery/pkg/util/net. client-go answers itself a 500
//     with Retry-After 1 (with_retry.go retryAfterResponse), so each retry
//     waits 1s; the final error reads "... - error from a previous attempt:
//     EOF" (withRetry.WrapPreviousError).
//  3. A watch (Request.Watch), any verb, whose connection failed with
//     net.IsProbableEOF or net.IsTimeout: retried as in 2; when the
//     retries are spent (or Request.MaxRetries(0) allows none), Watch
//     returns watch.NewEmptyWatch() and no error: a watch that ends at once.
//
// Request.Stream retries case 1 only. A request with an io.Reader body
// (Request.Body) is never retried. Below client-go, net/http's client
// follows up to 10 redirects (client-go sets no CheckRedirect), and its
// transport resends an idempotent request whose reused connection closed
// before the request was written (HTTP/2: a stream the server refused);
// neither is a retry of an answered request. Two waits come before a
// request rather than after an answer, and stay: the client's rate limiter
// (rest.Config.QPS and Burst; Request.tryThrottle) and, only when the
// KUBE_CLIENT_BACKOFF_BASE environment variable is set, its per-URL backoff
// (rest/urlbackoff.go); both end with the request's context.
//
// The SDK's own list and watch clients (lister.FromClientset, and so
// reflector.NewSharedInformerFactory; FromRESTClient, FromDynamicConfig,
// FromMetadataConfig) set rest.Request.MaxRetries(0) on every request they
// build, which ends all three, and turn client-go's empty watch into a
// *ConnectionLostError; compat.Detector.ForConfig builds its discovery
// client from NoHiddenRetries. NoHiddenRetries does the same for any client built from its config,
// through the transport: it wraps it with OwnRetryAfter, which takes the
// Retry-After header away from client-go (leaving the server's delay in the
// error the caller sees, Status details.retryAfterSeconds, read by
// RetryAfter, where the lister and the reflector honour it, capped by
// Policy.MaxRetryAfter, and count it) and answers a GET whose connection
// failed with a *ConnectionLostError, which client-go does not retry.
//
// Use it for the clients you hand to lister.FromFuncs, FromDynamic,
// FromMetadata, lister.Wrap and reflector.NewSharedIndexInformer, whose
// requests the SDK does not build:
//
//	cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
//
// Without it those retries stay: the lister counts each list's requests on
// the wire (lister.SentRequest.WireRequests, redirects included) and charges
// client-go's retries to Policy.Backoff, but it cannot shorten the sleep
// client-go takes before each.
//
// # A request nobody answers
//
// The transport also bounds each request that hears nothing from the
// server (Policy.ResponseTimeout): no response headers once the request is
// written, or, while a list body is read, no more bytes. It then ends the
// request with a *NoAnswerError, which the lister and the reflector retry
// after Policy.Backoff. The bound is the Policy's of the lister or
// reflector the request is sent for (they carry it on the request's
// context), or DefaultResponseTimeout for a request sent otherwise. A
// watch is bounded until its headers arrive only. Without NoHiddenRetries,
// a client of your own keeps client-go's behaviour: a request the server
// accepts and never answers waits until the caller's context ends
// (rest.Config.Timeout would bound the whole request, a long list's body
// included). The SDK's own clients are bounded the same way either way.
//
// A nil cfg returns nil.
func NoHiddenRetries(cfg *rest.Config) *rest.Config {
	if cfg == nil {
		return nil
	}
	out := rest.CopyConfig(cfg)
	out.WrapTransport = transport.Wrappers(out.WrapTransport, OwnRetryAfter)
	return out
}

// OwnRetryAfter wraps rt so that client-go's REST client does not retry on
// its own (see NoHiddenRetries).
//
// For an answer 429 or 5xx with a Retry-After header that client-go would
// parse (strconv.Atoi), it moves the header to HeaderRetryAfterOwned and
// makes sure the error body carries the delay (a negative one counts as
// none): a Kubernetes Status in JSON gets details.retryAfterSeconds when it
// lacks it; a body that is not a Status (the apiserver's own 429 from
// priority and fairness is plain text, so is an HTML page from a proxy) is
// replaced by the JSON Status client-go would have built from it
// (apierrors.NewGenericServerResponse, with the delay and the first 2 KiB
// of the text). Protobuf and CBOR Status bodies are left as they are: the
// apiserver writes the Retry-After header from details.retryAfterSeconds,
// so they already carry it.
//
// A GET whose connection failed in a way client-go retries (see
// NoHiddenRetries, cases 2 and 3) fails with a *ConnectionLostError
// instead. A request that hears nothing from the server for the bound on
// its context (Policy.ResponseTimeout; DefaultResponseTimeout without one)
// fails with a *NoAnswerError (see NoHiddenRetries, "A request nobody
// answers"). Every other answer and error passes unchanged.
func OwnRetryAfter(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if _, ok := rt.(*ownRetryAfter); ok {
		return rt
	}
	return &ownRetryAfter{rt: rt}
}

type ownRetryAfter struct{ rt http.RoundTripper }

// WrappedRoundTripper lets client-go's transport utilities see through it.
func (t *ownRetryAfter) WrappedRoundTripper() http.RoundTripper { return t.rt }

func (t *ownRetryAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	var g *wirewait.Guard // nil for the SDK's own requests, already bounded, and without a bound
	if !wirewait.Guarded(req.Context()) {
		var ctx context.Context
		if ctx, g = guardRequest(req.Context(), req); g != nil {
			req = req.WithContext(ctx)
		}
	}
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp == nil {
		g.Stop()
		if err = g.Err(err); err != nil && req.Method == http.MethodGet && retriedByClientGo(err, isWatch(req)) {
			klog.FromContext(req.Context()).V(4).Info("Connection failure taken from client-go's REST client: the caller counts and retries",
				"path", req.URL.Path, "err", err)
			return nil, &ConnectionLostError{Method: req.Method, URL: req.URL.Redacted(), Err: err}
		}
		return resp, err
	}
	g.Answered()
	if isWatch(req) {
		resp.Body = g.Closing(resp.Body)
	} else {
		resp.Body = g.Body(resp.Body) // an error body read below is bounded too
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < http.StatusInternalServerError {
		return resp, nil
	}
	ra := resp.Header.Get("Retry-After")
	secs, perr := strconv.Atoi(ra) // as client-go's retryAfterSeconds
	if ra == "" || perr != nil {
		return resp, nil // client-go does not retry what it cannot parse either
	}
	// Untrusted: a value past int32 would wrap in Status.details; the
	// caller caps any wait at Policy.MaxRetryAfter anyway. A negative one
	// (which client-go retries at once) asks for no delay.
	secs = max(min(secs, math.MaxInt32), 0)
	klog.FromContext(req.Context()).V(4).Info("Retry-After taken from client-go's REST client: the caller counts and waits",
		"status", resp.StatusCode, "retryAfterSeconds", secs, "path", req.URL.Path)
	resp.Header = resp.Header.Clone()
	resp.Header.Del("Retry-After")
	resp.Header.Set(HeaderRetryAfterOwned, ra)

	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case "application/vnd.kubernetes.protobuf", "application/cbor":
		return resp, nil
	}
	body, more, rerr := readBounded(resp.Body)
	if rerr != nil || more != nil {
		// Unreadable or too long to rewrite: hand on what was read.
		resp.Body = bodyOf(body, more, resp.Body)
		return resp, nil
	}
	_ = resp.Body.Close()
	out := withRetryAfter(body, media, resp.StatusCode, req.Method, secs)
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Del("Content-Length")
	resp.Header.Del("Content-Encoding")
	if !bytes.Equal(out, body) {
		resp.Header.Set("Content-Type", "application/json")
	}
	return resp, nil
}

// withRetryAfter returns body as a JSON Status that carries secs in
// details.retryAfterSeconds.
func withRetryAfter(body []byte, media string, code int, method string, secs int) []byte {
	if media == "application/json" {
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
			if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
				return body
			}
			if st.Details == nil {
				st.Details = &metav1.StatusDetails{}
			}
			st.Details.RetryAfterSeconds = int32(secs)
			if b, err := json.Marshal(&st); err == nil {
				return b
			}
			return body
		}
	}
	text := body
	if len(text) > 2048 {
		text = text[:2048]
	}
	st := apierrors.NewGenericServerResponse(code, method, schema.GroupResource{}, "", string(text), secs, true).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	b, err := json.Marshal(&st)
	if err != nil {
		return body
	}
	return b
}

// readBounded reads r up to maxOwnedErrorBody; more is non-nil when r had
// more (the bytes read are then in body).
func readBounded(r io.Reader) (body, more []byte, err error) {
	body, err = io.ReadAll(io.LimitReader(r, maxOwnedErrorBody+1))
	if len(body) > maxOwnedErrorBody {
		return body[:maxOwnedErrorBody], body[maxOwnedErrorBody:], err
	}
	return body, nil, err
}

func bodyOf(read, more []byte, orig io.ReadCloser) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(read), bytes.NewReader(more), orig), orig}
}

// ErrConnectionLost matches every *ConnectionLostError (errors.Is).
var ErrConnectionLost = errors.New("connection lost before the server's answer")

// ConnectionLostError is the error of a GET whose connection failed before
// the server's answer in a way client-go's REST client would retry on its
// own (EOF, connection reset, HTTP/2 connection lost or GOAWAY, a network
// timeout on a watch; see NoHiddenRetries), returned instead so that the
// caller counts and retries it with its own budget. It is a net.Error that
// is not a timeout, and its message names the failure in words client-go
// does not match, so client-go passes it on at once. errors.Is matches
// ErrConnectionLost and whatever Err matches (io.EOF,
// syscall.ECONNRESET, ...); Classify reads it as Transport.
type ConnectionLostError struct {
	// Method and URL (credentials redacted) of the request.
	Method, URL string
	// Err is the transport's error; nil when client-go hid it (a watch
	// whose connection failed, which client-go returns as an empty watch).
	Err error
}

func (e *ConnectionLostError) Error() string {
	cause := "the connection ended without an answer (client-go returned an empty watch)"
	if e.Err != nil {
		cause = describeConnectionFailure(e.Err)
	}
	return fmt.Sprintf("steadywatch: %s %s: connection lost before the server's answer, not retried inside client-go's REST client: %s", e.Method, e.URL, cause)
}

// Is makes errors.Is(err, ErrConnectionLost) true, and errors.Is(err, X)
// true for whatever Err matches. It does not unwrap (errors.As would then
// find the syscall.Errno client-go retries on).
func (e *ConnectionLostError) Is(target error) bool {
	return target == ErrConnectionLost || (e.Err != nil && errors.Is(e.Err, target))
}

// Timeout is false: client-go retries a watch on a timeout (net.IsTimeout).
func (e *ConnectionLostError) Timeout() bool { return false }

// Temporary is false (net.Error).
func (e *ConnectionLostError) Temporary() bool { return false }

// RetriedByClientGo reports whether client-go's REST client retries a GET
// or a watch that failed with err on its own (rest/request.go
// Request.request: net.IsConnectionReset, net.IsProbableEOF,
// net.IsHTTP2ConnectionLost; Request.Watch: net.IsProbableEOF,
// net.IsTimeout), leaving out the caller's own cancellation, which
// client-go does not retry.
func RetriedByClientGo(err error) bool { return retriedByClientGo(err, true) }

// retriedByClientGo is RetriedByClientGo for a watch (timeouts included)
// or another GET (timeouts are not retried there).
func retriedByClientGo(err error, watch bool) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) || (watch && utilnet.IsTimeout(err))
}

// isWatch reports whether req is a watch as client-go sends one (the
// watch parameter; the apiserver's legacy /watch/ path prefix).
func isWatch(req *http.Request) bool {
	switch req.URL.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return strings.Contains(req.URL.Path, "/watch/")
}

// connectionFailureWords rewrites the phrases client-go's retry predicates
// match (k8s.io/apimachinery/pkg/util/net IsProbableEOF,
// IsHTTP2ConnectionLost) so that a ConnectionLostError's message keeps the
// cause without being retried.
var connectionFailureWords = strings.NewReplacer(
	"connection reset by peer", "connection reset (ECONNRESET)",
	"http2: server sent GOAWAY and closed the connection", "HTTP/2 GOAWAY from the server, connection closed",
	"http2: client connection lost", "HTTP/2 connection lost (no answer to the health-check ping)",
	"use of closed network connection", "the network connection was closed",
	"Use of closed network connection", "the network connection was closed",
	"http: can't write HTTP request on broken connection", "the request could not be written: broken connection",
)

func describeConnectionFailure(err error) string {
	s := connectionFailureWords.Replace(err.Error())
	if strings.Contains(strings.ToLower(s), "use of closed network connection") {
		s = "the network connection was closed"
	}
	return s
}
