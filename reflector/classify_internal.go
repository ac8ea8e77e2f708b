package reflector

// This file is an interim copy of the error classes that fallback.Classify
// will own (docs/design.md, "Error classes"). Delete it, and switch callers to
// fallback.Classify, once that lands. It is kept small on purpose.

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// errClass is what the reflector needs to know about an error to decide the
// next state.
type errClass int

const (
	classOther      errClass = iota // never retried without backoff; a relist after backoff
	classGone                       // 410 / Expired: the resourceVersion is compacted away
	classTooLargeRV                 // 504 ResourceVersionTooLarge (or the 1.17.0-1.18.5 message form)
	classThrottled                  // 429
	classServer                     // 5xx other than too-large
	classTransport                  // connection refused/reset, EOF, timeouts
	classInvalid                    // 400 / 422: the request itself is wrong
)

func (c errClass) String() string {
	switch c {
	case classGone:
		return "Gone"
	case classTooLargeRV:
		return "TooLargeRV"
	case classThrottled:
		return "Throttled"
	case classServer:
		return "ServerError"
	case classTransport:
		return "Transport"
	case classInvalid:
		return "Invalid"
	default:
		return "Other"
	}
}

// classify returns the class of err and the server's Retry-After (0 if none).
func classify(err error) (errClass, time.Duration) {
	retryAfter := time.Duration(0)
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	switch {
	case err == nil:
		return classOther, 0
	case isTooLargeRV(err):
		return classTooLargeRV, retryAfter
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return classGone, 0
	case apierrors.IsTooManyRequests(err):
		return classThrottled, retryAfter
	case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
		return classInvalid, 0
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code >= 500 {
		return classServer, retryAfter
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || utilnet.IsConnectionRefused(err) ||
		utilnet.IsConnectionReset(err) || errors.Is(err, syscall.ECONNRESET) || utilnet.IsProbableEOF(err) {
		return classTransport, 0
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return classTransport, 0
	}
	return classOther, 0
}

func isTooLargeRV(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(s.Message, "Too large resource version")
}
