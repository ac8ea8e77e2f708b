package fallback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Class is what one list response means for the decision table: an error
// class from Classify, or an observation the executor adds after a 200
// (ServedNewerThanExact, ServedOlder) or from context (ContinueExpired).
type Class int

const (
	// OK: a 200 whose ListMeta satisfies the requested semantic.
	OK Class = iota
	// Gone: 410 (reason Expired or Gone) on a request without a continue token.
	Gone
	// ContinueExpired: 410 on a request that carried a continue token (API Concepts:
	// "a continue token will expire ... and return a 410 Gone").
	ContinueExpired
	// TooLargeRV: the server has not reached the requested resourceVersion yet:
	// 504 with cause ResourceVersionTooLarge, or (1.17.0-1.18.5) a 504 whose
	// message or cause message is "Too large resource version", or a raw 500
	// "etcdserver: mvcc: required revision is a future revision" (1.18 from etcd).
	TooLargeRV
	// Throttled: 429 Too Many Requests.
	Throttled
	// ServerError: 5xx other than TooLargeRV (500, 502, 503, 504 without the cause).
	ServerError
	// Transport: the request did not get an HTTP answer: connection refused or
	// reset, EOF, network timeouts.
	Transport
	// Invalid: 400 or 422. Never retried.
	Invalid
	// Forbidden: 401 or 403. Never retried.
	Forbidden
	// NotFound: 404. Never retried.
	NotFound
	// Canceled: the caller's context ended. Never retried.
	Canceled
	// Other: anything else. Never retried.
	Other
	// ServedNewerThanExact: a 200 for Exact(N) whose ListMeta.resourceVersion
	// is not N (in practice newer: the server ignored resourceVersionMatch=Exact,
	// KEP-2523 "clients must verify that the ResourceVersion in the ListMeta ...
	// matches").
	ServedNewerThanExact
	// ServedOlder: a 200 whose ListMeta.resourceVersion is older than the
	// NotOlderThan floor (compared as uint64; incomparable values are not flagged).
	ServedOlder
	// ContinueRepeated: a 200 whose continue token was already handed out
	// earlier in the same list: the server's (or a proxy's) pagination is
	// broken and following it would loop forever (the failure
	// apache/iceberg-go#1484 and boto/botocore#3778 describe for other APIs).
	ContinueRepeated
	// NoAnswer: the server accepted the request and then said nothing for
	// Policy.ResponseTimeout (a *NoAnswerError): no headers, or a list body
	// that stopped. Retried like Transport.
	NoAnswer

	numClasses
)

var classNames = [...]string{
	OK: "ok", Gone: "gone", ContinueExpired: "continue-expired", TooLargeRV: "too-large-rv",
	Throttled: "throttled", ServerError: "server-error", Transport: "transport", Invalid: "invalid",
	Forbidden: "forbidden", NotFound: "not-found", Canceled: "canceled", Other: "other",
	ServedNewerThanExact: "served-newer-than-exact", ServedOlder: "served-older",
	ContinueRepeated: "continue-repeated", NoAnswer: "no-answer",
}

func (c Class) String() string {
	if c >= 0 && c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classes returns every Class, for exhaustive tests.
func Classes() []Class {
	out := make([]Class, 0, numClasses)
	for c := OK; c < numClasses; c++ {
		out = append(out, c)
	}
	return out
}

const (
	tooLargeMessage   = "too large resource version"
	futureRevisionMsg = "required revision is a future revision"
)

// Classify maps an error returned by a list call to a Class. It never
// returns ContinueExpired, ServedNewerThanExact, ServedOlder or
// ContinueRepeated: those need
// the request (see ClassifyRequest) or the response.
func Classify(err error) Class {
	if err == nil {
		return OK
	}
	if errors.Is(err, ErrNoAnswer) {
		return NoAnswer
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Canceled
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st != nil {
		return classifyStatus(st.Status())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return Transport
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return Transport
	}
	return Other
}

// ClassifyRequest is Classify for a response to the given wire options: a
// 410 on a request that carried a continue token is ContinueExpired.
func ClassifyRequest(opts metav1.ListOptions, err error) Class {
	c := Classify(err)
	if c == Gone && opts.Continue != "" {
		return ContinueExpired
	}
	return c
}

func classifyStatus(s metav1.Status) Class {
	if isTooLarge(s) {
		return TooLargeRV
	}
	code := int(s.Code)
	switch {
	case code == http.StatusGone || s.Reason == metav1.StatusReasonExpired || s.Reason == metav1.StatusReasonGone:
		return Gone
	case code == http.StatusTooManyRequests || s.Reason == metav1.StatusReasonTooManyRequests:
		return Throttled
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity ||
		s.Reason == metav1.StatusReasonBadRequest || s.Reason == metav1.StatusReasonInvalid:
		return Invalid
	case code == http.StatusUnauthorized || code == http.StatusForbidden ||
		s.Reason == metav1.StatusReasonUnauthorized || s.Reason == metav1.StatusReasonForbidden:
		return Forbidden
	case code == http.StatusNotFound || s.Reason == metav1.StatusReasonNotFound:
		return NotFound
	case code >= 500 || s.Reason == metav1.StatusReasonInternalError ||
		s.Reason == metav1.StatusReasonServerTimeout || s.Reason == metav1.StatusReasonTimeout ||
		s.Reason == metav1.StatusReasonServiceUnavailable:
		return ServerError
	}
	return Other
}

// isTooLarge mirrors client-go's isTooLargeResourceVersionError
// (tools/cache/reflector.go) and adds the raw etcd "future revision" 500 that
// v1.18 returns when it lists from etcd.
func isTooLarge(s metav1.Status) bool {
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Type == metav1.CauseTypeResourceVersionTooLarge ||
				strings.EqualFold(c.Message, tooLargeMessage) {
				return true
			}
		}
	}
	msg := strings.ToLower(s.Message)
	if strings.Contains(msg, tooLargeMessage) && (s.Code == http.StatusGatewayTimeout || s.Reason == metav1.StatusReasonTimeout) {
		return true
	}
	return s.Code >= 500 && strings.Contains(msg, futureRevisionMsg)
}

// RetryAfter returns the delay the server asked for (Retry-After header, or
// Status.details.retryAfterSeconds), if any.
func RetryAfter(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	secs, ok := apierrors.SuggestsClientDelay(err)
	if !ok || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// Retriable reports whether a class is ever retried by the table (with a
// budget): TooLargeRV, Throttled, ServerError, Transport, NoAnswer.
func (c Class) Retriable() bool {
	switch c {
	case TooLargeRV, Throttled, ServerError, Transport, NoAnswer:
		return true
	}
	return false
}

// RejectsStreamingList reports whether err is a server's refusal of the
// streaming-list parameters themselves: a 400/422 naming sendInitialEvents or
// resourceVersionMatch, as 1.27+ servers with the WatchList gate off and
// 1.19-1.26 servers answer a watch with sendInitialEvents=true (API Concepts,
// Streaming lists). That is evidence the server does not stream lists. Any
// other 400/422 (a bad label or field selector, a garbage resourceVersion)
// is the caller's own invalid request and says nothing about the server.
// When the Status lists causes with fields, the fields decide; otherwise the
// message does.
func RejectsStreamingList(err error) bool {
	if Classify(err) != Invalid {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		if d := st.Status().Details; d != nil {
			named := false
			for _, c := range d.Causes {
				if c.Field == "" {
					continue
				}
				named = true
				if streamingParam(c.Field) {
					return true
				}
			}
			if named {
				return false
			}
		}
	}
	msg := err.Error()
	return strings.Contains(msg, "sendInitialEvents") || strings.Contains(msg, "resourceVersionMatch")
}

func streamingParam(field string) bool {
	field = strings.TrimPrefix(field, "ListOptions.")
	return field == "sendInitialEvents" || field == "resourceVersionMatch"
}
