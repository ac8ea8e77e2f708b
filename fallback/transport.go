package fallback

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
)

// HeaderRetryAfterOwned carries the Retry-After value of a response that
// OwnRetryAfter took over, for logs and debugging proxies.
const HeaderRetryAfterOwned = "X-Steadywatch-Retry-After"

// maxOwnedErrorBody bounds how much of an error body OwnRetryAfter reads.
const maxOwnedErrorBody = 1 << 20

// NoHiddenRetries returns a copy of cfg whose clients never retry a request
// on their own, so that every request the SDK sends is one it counts and
// budgets (Policy.Backoff, MaxTooLargeRetries, Options.MaxRequests).
//
// client-go's REST client retries every 429 and 5xx answer that carries a
// Retry-After header, up to 10 times inside one call (rest.Request's
// default MaxRetries; rest/with_retry.go checkWait), sleeping the server's
// Retry-After each time; rest.Config has no setting for it. So a list that
// the lister charges as one attempt can be eleven on the wire, and the
// 504 "Too large resource version" of an Exact list far in the future
// (which the watch cache answers after waiting 3s, Retry-After 1s) costs
// about 44 s per attempt. NoHiddenRetries wraps the transport with
// OwnRetryAfter, which takes that header away from client-go and leaves the
// server's delay in the error the caller sees (Status
// details.retryAfterSeconds, read by RetryAfter), where the lister and the
// reflector honour it, capped by Policy.MaxRetryAfter, and count it.
//
// Use it for the clients you hand to lister and reflector:
//
//	cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
//
// A client built from another config keeps client-go's hidden retries; for
// a single request, rest.Request.MaxRetries(0) has the same effect.
// compat.Detector.ForConfig and kubectl-steadywatch build their clients this
// way. A nil cfg returns nil.
func NoHiddenRetries(cfg *rest.Config) *rest.Config {
	if cfg == nil {
		return nil
	}
	out := rest.CopyConfig(cfg)
	out.WrapTransport = transport.Wrappers(out.WrapTransport, OwnRetryAfter)
	return out
}

// OwnRetryAfter wraps rt so that client-go's REST client does not retry on
// its own (see NoHiddenRetries). For an answer 429 or 5xx with a numeric
// Retry-After header, it moves the header to HeaderRetryAfterOwned and makes
// sure the error body carries the delay: a Kubernetes Status in JSON gets
// details.retryAfterSeconds when it lacks it; a body that is not a Status
// (the apiserver's own 429 from priority and fairness is plain text, so is
// an HTML page from a proxy) is replaced by the JSON Status client-go would
// have built from it (apierrors.NewGenericServerResponse, with the delay
// and the first 2 KiB of the text). Protobuf and CBOR Status bodies are
// left as they are: the apiserver writes the Retry-After header from
// details.retryAfterSeconds, so they already carry it. Every other answer
// passes unchanged.
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
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < http.StatusInternalServerError {
		return resp, nil
	}
	ra := resp.Header.Get("Retry-After")
	secs, perr := strconv.Atoi(ra)
	if ra == "" || perr != nil || secs < 0 {
		return resp, nil // client-go does not retry what it cannot parse either
	}
	// Untrusted: a value past int32 would wrap in Status.details; the
	// caller caps any wait at Policy.MaxRetryAfter anyway.
	secs = min(secs, math.MaxInt32)
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
