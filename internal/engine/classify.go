package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	//lint:ignore ST1001 the table reads in the KEP's vocabulary (OK, Gone, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the table reads in the KEP's vocabulary
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

const (
	tooLargeMessage   = "too large resource version"
	futureRevisionMsg = "required revision is a future revision"
)

// Classify maps an error returned by a list call to a Class. It never
// returns ContinueExpired, ServedNewerThanExact, ServedOlder or
// ContinueRepeated: those need the request or the response (Call.verify).
//
// A "too large resource version" Status is recognised as client-go's
// isTooLargeResourceVersionError (tools/cache/reflector.go) does, plus the
// raw etcd "future revision" 500 that v1.18 returns when it lists from
// etcd.
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
	var as apierrors.APIStatus
	if errors.As(err, &as) && as != nil {
		s := as.Status()
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				if c.Type == metav1.CauseTypeResourceVersionTooLarge || strings.EqualFold(c.Message, tooLargeMessage) {
					return TooLargeRV
				}
			}
		}
		msg := strings.ToLower(s.Message)
		if strings.Contains(msg, tooLargeMessage) && (s.Code == http.StatusGatewayTimeout || s.Reason == metav1.StatusReasonTimeout) ||
			s.Code >= 500 && strings.Contains(msg, futureRevisionMsg) {
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
