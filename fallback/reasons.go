package fallback

// ReasonCode names why a list executor took a decision. It is the Reason of
// an Event and of a lister *Error, and the "reason" label of the
// steadywatch_fallbacks_total metric. The constants below are the
// complete set of values the lister emits (docs/reasons.md lists them with
// the reflector's and compat's); nothing builds a reason from a string at run
// time.
type ReasonCode string

// Reasons of the decision table (one or more rows each; docs/rules.md has
// the rows). Each comment says what happened and what, if anything, a user
// can do; docs/troubleshooting.md is generated from these comments.
const (
	// ReasonOK: the server answered as asked and the page or list was accepted.
	ReasonOK ReasonCode = "ok"
	// ReasonContextDone: the caller's context ended (cancelled or past its
	// deadline); nothing is retried after it.
	ReasonContextDone ReasonCode = "context-done"
	// ReasonInvalid: the server rejected the request as invalid (400 or 422):
	// a bad selector, or a parameter the server does not accept. Never
	// retried; the error names what the server objected to. Fix the request.
	ReasonInvalid ReasonCode = "invalid-not-retried"
	// ReasonNotRetriable: an error that is not about resourceVersions
	// (Forbidden, NotFound, ...), returned as it is. Check RBAC and the
	// resource's name and group/version.
	ReasonNotRetriable ReasonCode = "not-retriable"
	// ReasonThrottledBackoff: 429 Too Many Requests; waited (the server's
	// Retry-After, capped by Policy.MaxRetryAfter, or the backoff) and
	// retried.
	ReasonThrottledBackoff ReasonCode = "throttled-backoff"
	// ReasonServerErrorBackoff: a 5xx answer; waited and retried.
	ReasonServerErrorBackoff ReasonCode = "server-error-backoff"
	// ReasonTransportBackoff: connection refused or reset, EOF or a timeout;
	// waited and retried.
	ReasonTransportBackoff ReasonCode = "transport-backoff"
	// ReasonNoAnswerBackoff: the server (or a proxy in front of it)
	// accepted a request and then sent nothing for Policy.ResponseTimeout:
	// no response headers, or a list body that stopped delivering bytes.
	// The request was ended with a *NoAnswerError, waited (Policy.Backoff)
	// and retried. A real apiserver answers a list within its
	// --request-timeout (60s by default); if a proxy holds requests, check
	// it, or raise ResponseTimeout if the server is known to be slower.
	ReasonNoAnswerBackoff ReasonCode = "no-answer-backoff"
	// ReasonRetriesExhausted: the retry budget for transient errors
	// (Policy.Backoff) ran out and the last error is returned: the server or
	// the network stayed unavailable for that long.
	ReasonRetriesExhausted ReasonCode = "retries-exhausted"
	// ReasonRule1RetryNewerRV: KEP-2523's first backward-compatibility rule.
	// A NotOlderThan list with a limit was answered 410 by a server that
	// ignores resourceVersionMatch (before v1.19: it served the list as a
	// legacy Exact); asked again at a newer resourceVersion.
	ReasonRule1RetryNewerRV ReasonCode = "rule1-gone-retry-newer-rv"
	// ReasonRule1FallbackMostRecent: rule 1's retries were used up; listed
	// MostRecent (resourceVersion ""), which is never older than asked.
	ReasonRule1FallbackMostRecent ReasonCode = "rule1-gone-fallback-most-recent"
	// ReasonRule1Exhausted: rule 1's retries were used up and the caller did
	// not allow the MostRecent fallback; the 410 is returned.
	ReasonRule1Exhausted ReasonCode = "rule1-gone-exhausted"
	// ReasonExactGone: an Exact list's resourceVersion was compacted away
	// (410). No other state is served in its place: the error matches
	// ErrExactUnavailable. List at a newer resourceVersion, or MostRecent.
	ReasonExactGone ReasonCode = "exact-gone"
	// ReasonGoneUnexpected: a MostRecent or Any list was answered 410, which
	// the API never does for them: a proxy or a broken server in between.
	ReasonGoneUnexpected ReasonCode = "gone-unexpected"
	// ReasonContinueExpiredExact: a continue token of an Exact list expired
	// (410); the snapshot cannot be finished, so the list fails with
	// ErrExactUnavailable rather than stitching two snapshots.
	ReasonContinueExpiredExact ReasonCode = "continue-expired-exact-unavailable"
	// ReasonContinueExpiredRestart: a continue token expired (410) in the
	// middle of a paginated list; the list restarted from its first page at
	// a resourceVersion not older than the pages already handed over
	// (ListPages callers get OnRestart).
	ReasonContinueExpiredRestart ReasonCode = "continue-expired-restart-newer-rv"
	// ReasonContinueExpiredUnpaginated: a continue token expired and, as
	// Policy.ContinueExpired asks, the list restarted without a limit (one
	// response, the whole collection).
	ReasonContinueExpiredUnpaginated ReasonCode = "continue-expired-restart-unpaginated"
	// ReasonContinueExpiredFail: a continue token expired and
	// Policy.ContinueExpired says to fail; the error matches
	// ErrContinueExpired.
	ReasonContinueExpiredFail ReasonCode = "continue-expired-fail"
	// ReasonContinueExpiredExhausted: continue tokens kept expiring until the
	// restarts allowed were used up: pages take longer than the server keeps
	// a token (etcd compaction, five minutes by default). Use a larger page
	// size or a faster consumer.
	ReasonContinueExpiredExhausted ReasonCode = "continue-expired-exhausted"
	// ReasonContinueRepeated: the server (or a proxy) handed out a continue
	// token it had already handed out in this list: its pagination loops.
	// The list ends at once with ErrBrokenPagination instead of requesting
	// forever.
	ReasonContinueRepeated ReasonCode = "continue-token-repeated"
	// ReasonRule2RetryWithLimit: KEP-2523's second backward-compatibility
	// rule. An Exact list without a limit was served at another (newer)
	// resourceVersion by a server that ignores resourceVersionMatch; asked
	// again with a limit, which such a server serves exactly.
	ReasonRule2RetryWithLimit ReasonCode = "rule2-exact-mismatch-retry-with-limit"
	// ReasonRule2MismatchWithLimit: an Exact list with a limit was still
	// served at another resourceVersion; it fails with ErrExactUnavailable
	// rather than returning another state as the answer.
	ReasonRule2MismatchWithLimit ReasonCode = "rule2-exact-mismatch-with-limit"
	// ReasonUnexpectedObservation: a response the decision table does not
	// expect for this semantic; the list fails with the observation in the
	// error. Please report it with the server's version.
	ReasonUnexpectedObservation ReasonCode = "unexpected-observation"
	// ReasonServedOlderRetry: a list came back older than the
	// resourceVersion asked for (a lagging watch cache or HA member); waited
	// and asked again.
	ReasonServedOlderRetry ReasonCode = "served-older-retry"
	// ReasonServedOlderExhausted: lists kept coming back older than asked;
	// the error matches ErrServedOlder. A server or member lags far behind
	// (kubernetes/kubernetes#97294).
	ReasonServedOlderExhausted ReasonCode = "served-older-exhausted"
	// ReasonRVNewerThanServer: the resourceVersion asked for is newer than
	// anything the server has (a resourceVersion from another cluster, or
	// made up); the error says so. Not a server fault.
	ReasonRVNewerThanServer ReasonCode = "requested-rv-newer-than-server"
	// ReasonTooLargeWait: "too large resource version": the server (its
	// watch cache) has not caught up with the resourceVersion yet; waited
	// Retry-After (capped) and retried.
	ReasonTooLargeWait ReasonCode = "too-large-rv-wait-retry-after"
	// ReasonTooLargeExhausted: the server stayed behind the resourceVersion
	// for the whole budget; the error matches ErrTooLargeResourceVersion.
	ReasonTooLargeExhausted ReasonCode = "too-large-rv-exhausted"
	// ReasonTooLargeExactUnavailable: an Exact list at a resourceVersion the
	// server never caught up with; fails with ErrExactUnavailable.
	ReasonTooLargeExactUnavailable ReasonCode = "too-large-rv-exact-unavailable"
	// ReasonTooLargeFallbackMostRecent: a NotOlderThan list the server stayed
	// behind on was listed MostRecent instead (a consistent read is never
	// older than asked), as Policy.TooLargeAfterBudget allows.
	ReasonTooLargeFallbackMostRecent ReasonCode = "too-large-rv-fallback-most-recent"
	// ReasonTooLargeCheckRV: the first "too large resource version" of a
	// list with a resourceVersion: a consistent limit=1 read says whether
	// that version exists at all before any wait; a version newer than the
	// server's current one fails at once (ReasonRVNewerThanServer).
	ReasonTooLargeCheckRV ReasonCode = "too-large-rv-check-exists"
	// ReasonTooLargeCacheStuck: a NotOlderThan list at a resourceVersion that
	// exists was answered "too large" by a server whose watch cache advances
	// only on writes of the listed resource (no watch progress notifications
	// before KEP-1904: compat's watchCacheProgress=no, or two answers that
	// reported the same current resourceVersion): waiting cannot help, so it
	// was listed MostRecent at once (a consistent read is never older than
	// asked). Writes to other resources moved the resourceVersion on; nothing
	// to do.
	ReasonTooLargeCacheStuck ReasonCode = "too-large-rv-cache-stuck-most-recent"
)

// Reasons the executor adds around the table: conditions of the call itself
// rather than of one response.
const (
	// ReasonMaxRequests: Options.MaxRequests requests delivered no page.
	ReasonMaxRequests ReasonCode = "max-requests"
	// ReasonRestartNotAllowed: a restart would void pages already handed over
	// and the caller did not allow it (no OnRestart), or the list began at the
	// caller's own continue token, whose first page is unknown.
	ReasonRestartNotAllowed ReasonCode = "restart-not-allowed"
	// ReasonNewerRVProbeFailed: the limit=1 list that finds a newer
	// resourceVersion (or checks that a requested one exists) failed after
	// its retries.
	ReasonNewerRVProbeFailed ReasonCode = "newer-rv-probe-failed"
	// ReasonNewerRVProbeRetry: that limit=1 list failed transiently and is
	// retried after a backoff.
	ReasonNewerRVProbeRetry ReasonCode = "newer-rv-probe-retry"
	// ReasonNotAList: a 200 whose body is not a list.
	ReasonNotAList ReasonCode = "not-a-list"
	// ReasonGetExactScan: GetExact scans the collection at the exact
	// resourceVersion because the server answered the single-name list at
	// another one (servers before v1.19).
	ReasonGetExactScan ReasonCode = "get-exact-name-list-not-exact-scan-collection"
)

// ListReasons returns every reason code a list call can report, in a stable
// order (for docs and exhaustive tests).
func ListReasons() []ReasonCode {
	return []ReasonCode{
		reason.OK, reason.ContextDone, reason.Invalid, reason.NotRetriable, reason.ThrottledBackoff,
		reason.ServerErrorBackoff, reason.TransportBackoff, reason.NoAnswerBackoff, reason.RetriesExhausted, reason.Rule1RetryNewerRV,
		reason.Rule1FallbackMostRecent, reason.Rule1Exhausted, reason.ExactGone, reason.GoneUnexpected,
		reason.ContinueExpiredExact, reason.ContinueExpiredRestart, reason.ContinueExpiredUnpaginated,
		reason.ContinueExpiredFail, reason.ContinueExpiredExhausted, reason.ContinueRepeated,
		reason.Rule2RetryWithLimit, reason.Rule2MismatchWithLimit, reason.UnexpectedObservation,
		reason.ServedOlderRetry, reason.ServedOlderExhausted, reason.RVNewerThanServer, reason.TooLargeWait, reason.TooLargeExhausted,
		reason.TooLargeExactUnavailable, reason.TooLargeFallbackMostRecent, reason.TooLargeCheckRV, reason.TooLargeCacheStuck,
		reason.MaxRequests, reason.RestartNotAllowed, reason.NewerRVProbeFailed, reason.NewerRVProbeRetry,
		reason.NotAList, reason.GetExactScan,
	}
}
