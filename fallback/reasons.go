package fallback

// ReasonCode names why a list executor took a decision. It is the Reason of
// an Event and of a lister *Error, and the "reason" label of the
// steadywatch_list_fallbacks_total metric. The constants below are the
// complete set of values the lister emits (docs/reasons.md lists them with
// the reflector's and compat's); nothing builds a reason from a string at run
// time.
type ReasonCode string

// Reasons of the decision table (one or more rows each).
const (
	ReasonOK                         ReasonCode = "ok"
	ReasonContextDone                ReasonCode = "context-done"
	ReasonInvalid                    ReasonCode = "invalid-not-retried"
	ReasonNotRetriable               ReasonCode = "not-retriable"
	ReasonThrottledBackoff           ReasonCode = "throttled-backoff"
	ReasonServerErrorBackoff         ReasonCode = "server-error-backoff"
	ReasonTransportBackoff           ReasonCode = "transport-backoff"
	ReasonRetriesExhausted           ReasonCode = "retries-exhausted"
	ReasonRule1RetryNewerRV          ReasonCode = "rule1-gone-retry-newer-rv"
	ReasonRule1FallbackMostRecent    ReasonCode = "rule1-gone-fallback-most-recent"
	ReasonRule1Exhausted             ReasonCode = "rule1-gone-exhausted"
	ReasonExactGone                  ReasonCode = "exact-gone"
	ReasonGoneUnexpected             ReasonCode = "gone-unexpected"
	ReasonContinueExpiredExact       ReasonCode = "continue-expired-exact-unavailable"
	ReasonContinueExpiredRestart     ReasonCode = "continue-expired-restart-newer-rv"
	ReasonContinueExpiredUnpaginated ReasonCode = "continue-expired-restart-unpaginated"
	ReasonContinueExpiredFail        ReasonCode = "continue-expired-fail"
	ReasonContinueExpiredExhausted   ReasonCode = "continue-expired-exhausted"
	ReasonContinueRepeated           ReasonCode = "continue-token-repeated"
	ReasonRule2RetryWithLimit        ReasonCode = "rule2-exact-mismatch-retry-with-limit"
	ReasonRule2MismatchWithLimit     ReasonCode = "rule2-exact-mismatch-with-limit"
	ReasonUnexpectedObservation      ReasonCode = "unexpected-observation"
	ReasonServedOlderRetry           ReasonCode = "served-older-retry"
	ReasonServedOlderExhausted       ReasonCode = "served-older-exhausted"
	ReasonRVNewerThanServer          ReasonCode = "requested-rv-newer-than-server"
	ReasonTooLargeWait               ReasonCode = "too-large-rv-wait-retry-after"
	ReasonTooLargeExhausted          ReasonCode = "too-large-rv-exhausted"
	ReasonTooLargeExactUnavailable   ReasonCode = "too-large-rv-exact-unavailable"
	ReasonTooLargeFallbackMostRecent ReasonCode = "too-large-rv-fallback-most-recent"
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
	// resourceVersion failed after its retries.
	ReasonNewerRVProbeFailed ReasonCode = "newer-rv-probe-failed"
	// ReasonNewerRVProbeRetry: that probe failed transiently and is retried
	// after a backoff.
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
		ReasonOK, ReasonContextDone, ReasonInvalid, ReasonNotRetriable, ReasonThrottledBackoff,
		ReasonServerErrorBackoff, ReasonTransportBackoff, ReasonRetriesExhausted, ReasonRule1RetryNewerRV,
		ReasonRule1FallbackMostRecent, ReasonRule1Exhausted, ReasonExactGone, ReasonGoneUnexpected,
		ReasonContinueExpiredExact, ReasonContinueExpiredRestart, ReasonContinueExpiredUnpaginated,
		ReasonContinueExpiredFail, ReasonContinueExpiredExhausted, ReasonContinueRepeated,
		ReasonRule2RetryWithLimit, ReasonRule2MismatchWithLimit, ReasonUnexpectedObservation,
		ReasonServedOlderRetry, ReasonServedOlderExhausted, ReasonRVNewerThanServer, ReasonTooLargeWait, ReasonTooLargeExhausted,
		ReasonTooLargeExactUnavailable, ReasonTooLargeFallbackMostRecent,
		ReasonMaxRequests, ReasonRestartNotAllowed, ReasonNewerRVProbeFailed, ReasonNewerRVProbeRetry,
		ReasonNotAList, ReasonGetExactScan,
	}
}
