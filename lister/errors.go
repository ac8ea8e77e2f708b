package lister

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// Sentinel errors, matched with errors.Is on the *Error a call returns.
var (
	// ErrExactUnavailable: Exact(rv) cannot be served at rv (410 Gone, or the
	// server answered at another resourceVersion even with a limit). The error
	// also matches apierrors.IsResourceExpired (410 semantics).
	ErrExactUnavailable = errors.New("exact resource version unavailable")
	// ErrServedOlder: the server kept serving data older than the requested
	// NotOlderThan resourceVersion.
	ErrServedOlder = errors.New("served data older than the requested resource version")
	// ErrTooLargeResourceVersion: the server has not reached the requested
	// resourceVersion within the retry budget.
	ErrTooLargeResourceVersion = errors.New("resource version too large")
	// ErrContinueExpired: a continue token expired and the list was not restarted.
	ErrContinueExpired = errors.New("continue token expired")
	// ErrBrokenPagination: the server handed out a continue token it had
	// already handed out in the same list (a loop): the list ends at once.
	ErrBrokenPagination = errors.New("broken pagination: continue token repeated")
	// ErrRetriesExhausted: a retry budget was spent.
	ErrRetriesExhausted = errors.New("retries exhausted")
	// ErrStreamingListUnsupported: a watch with sendInitialEvents=true was asked
	// of a server that does not stream lists. Not retriable by client-go, whose
	// reflector then falls back to a list.
	ErrStreamingListUnsupported = watchpipe.ErrStreamingListUnsupported
)

// Error is a failed list call. It unwraps to one of the sentinel errors (when
// one applies) and to the server's error (when there was one).
type Error struct {
	// Reason is the table row's reason code (or an executor reason such as
	// "max-requests" or "restart-not-allowed").
	Reason fallback.ReasonCode
	// Class of the last response.
	Class fallback.Class
	// Requested is the query the caller asked for; Last the last one sent.
	Requested, Last fallback.Query
	// Attempt is the number of requests sent.
	Attempt int
	// Err is the server's or transport's error, if any.
	Err  error
	kind error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("list %s", e.Requested)
	if e.kind != nil {
		s += ": " + e.kind.Error()
	}
	s += fmt.Sprintf(" (%s after %d request(s), last %s)", e.Reason, e.Attempt, e.Last)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	var out []error
	if e.kind != nil {
		out = append(out, e.kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

func kindOf(r reason.Code) error {
	switch r {
	case reason.ExactGone, reason.ContinueExpiredExact, reason.Rule2MismatchWithLimit, reason.TooLargeExactUnavailable:
		return ErrExactUnavailable
	case reason.ServedOlderExhausted:
		return ErrServedOlder
	case reason.TooLargeExhausted, reason.RVNewerThanServer:
		return ErrTooLargeResourceVersion
	case reason.ContinueExpiredFail, reason.ContinueExpiredExhausted, reason.RestartNotAllowed:
		return ErrContinueExpired
	case reason.RetriesExhausted, reason.Rule1Exhausted, reason.MaxRequests:
		return ErrRetriesExhausted
	case reason.ContinueRepeated:
		return ErrBrokenPagination
	}
	return nil
}

// ResourceVersionTooLargeError says that the requested resourceVersion is
// newer than anything the server has: its watch cache answered 504 "Too
// large resource version" for the whole retry budget, or a consistent read
// stayed older than it. Waiting longer rarely helps (the version was taken
// from another cluster, or mistyped); the caller's input is the likely
// cause. Match it with errors.As; it also matches ErrTooLargeResourceVersion
// with errors.Is, and unwraps to the server's last error.
type ResourceVersionTooLargeError struct {
	// Requested is the resourceVersion asked for.
	Requested string
	// Current is the server's newest resourceVersion as it named it (the
	// "current: M" of its 504, or a consistent read's); "" when unknown.
	Current string
	// Requests is the number of requests sent before giving up.
	Requests int
	// Err is the server's last error, if any.
	Err error
}

func (e *ResourceVersionTooLargeError) Error() string {
	cur := e.Current
	if cur == "" {
		cur = "unknown"
	}
	s := fmt.Sprintf("resourceVersion %s is newer than the server's newest (%s) after %d request(s): it was never served by this server (%s)",
		e.Requested, cur, e.Requests, fallback.SourceResourceVersions)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches ErrTooLargeResourceVersion.
func (e *ResourceVersionTooLargeError) Is(target error) bool {
	return target == ErrTooLargeResourceVersion
}

// Unwrap returns the server's error.
func (e *ResourceVersionTooLargeError) Unwrap() error { return e.Err }

// currentRVPattern finds the server's resourceVersion in the apiserver's
// message "Too large resource version: N, current: M".
var currentRVPattern = regexp.MustCompile(`current: ?([0-9]+)`)

// currentRVOf returns M from such a message, or "".
func currentRVOf(err error) string {
	if err == nil {
		return ""
	}
	if m := currentRVPattern.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// ErrListBody matches (errors.Is) every error of decoding a list response
// body item by item (the SDK's client adapters do): truncated, malformed, or
// not a list.
var ErrListBody = decode.ErrListBody

// ListBodyError is the error of decoding a list response body: where it
// failed (byte offset into the body) and why. It never holds body bytes.
type ListBodyError struct {
	Encoding string // "protobuf" or "json"
	Offset   int64  // bytes of the body read before the failure
	Reason   string
	Err      error // the underlying error, if any (io.ErrUnexpectedEOF, ...)
}

func (e *ListBodyError) Error() string { return (*decode.BodyError)(e).Error() }

func (e *ListBodyError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrListBody) true.
func (e *ListBodyError) Is(target error) bool { return target == ErrListBody }

// decoded returns a list decoded by package decode, its body errors as
// *ListBodyError.
func decoded[L runtime.Object](list L, err error) (L, error) {
	if be, ok := err.(*decode.BodyError); ok {
		return list, (*ListBodyError)(be)
	}
	return list, err
}
