package vocab

import "fmt"

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

// Retriable reports whether a class is ever retried by the table (with a
// budget): TooLargeRV, Throttled, ServerError, Transport, NoAnswer.
func (c Class) Retriable() bool {
	switch c {
	case TooLargeRV, Throttled, ServerError, Transport, NoAnswer:
		return true
	}
	return false
}
