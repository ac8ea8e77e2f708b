package vocab

import "fmt"

// Action is what a list executor does after one response. Every Event names
// the Action taken; the decision itself is made by the SDK's internal engine,
// whose table cites each rule (docs/rules.md shows it row by row).
type Action int

const (
	// Accept the response (hand the page over; follow its continue token).
	Accept Action = iota
	// RetryNewerRV retries the first page as NotOlderThan(newer RV) (KEP-2523 rule 1).
	RetryNewerRV
	// FallbackMostRecent retries the first page as MostRecent (resourceVersion="", quorum read).
	FallbackMostRecent
	// RetryWithLimit retries Exact(N) with a limit, which legacy servers serve at exactly N (KEP-2523 rule 2).
	RetryWithLimit
	// FailExactUnavailable fails with "exact version unavailable" (410 semantics).
	FailExactUnavailable
	// WaitRetryAfter waits the server's Retry-After (capped by the policy's MaxRetryAfter,
	// or a backoff delay when none was given) and sends the same request again.
	WaitRetryAfter
	// Backoff waits a jittered backoff delay (or the server's Retry-After when
	// larger, capped) and sends the same request again.
	Backoff
	// RestartListNewerRV voids the pages handed over so far and restarts the
	// list from page 1 at a resource version not older than any page handed over.
	RestartListNewerRV
	// RestartListUnpaginated voids the pages handed over so far and restarts the
	// list with no limit.
	RestartListUnpaginated
	// Fail returns the error to the caller.
	Fail
	// CheckRVExists reads the server's current resourceVersion (a limit=1
	// MostRecent list, a consistent read) after a "too large resource
	// version": a requested resourceVersion newer than it was never handed
	// out, so the call fails at once; otherwise the same request is sent
	// again after the server's Retry-After (a lagging member catches up).
	CheckRVExists
	// Relist refills a reflector's store with a list not older than the
	// resourceVersion it holds (NotOlderThan, served from the watch cache).
	Relist

	numActions
)

var actionNames = [...]string{
	Accept: "Accept", RetryNewerRV: "RetryNewerRV", FallbackMostRecent: "FallbackMostRecent",
	RetryWithLimit: "RetryWithLimit", FailExactUnavailable: "FailExactUnavailable",
	WaitRetryAfter: "WaitRetryAfter", Backoff: "Backoff", RestartListNewerRV: "RestartListNewerRV",
	RestartListUnpaginated: "RestartListUnpaginated", Fail: "Fail", CheckRVExists: "CheckRVExists", Relist: "Relist",
}

func (a Action) String() string {
	if a >= 0 && a < numActions {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Actions returns every Action, for exhaustive tests.
func Actions() []Action {
	out := make([]Action, 0, numActions)
	for a := Accept; a < numActions; a++ {
		out = append(out, a)
	}
	return out
}

// IsFallback reports whether the action changes the request (an Event is
// recorded for it). Accept, Fail and plain retries of the same request
// (Backoff, WaitRetryAfter) are logged but are not fallbacks.
func (a Action) IsFallback() bool {
	switch a {
	case RetryNewerRV, FallbackMostRecent, RetryWithLimit, RestartListNewerRV, RestartListUnpaginated, CheckRVExists, Relist:
		return true
	}
	return false
}

// IsFailure reports whether the action ends the list call with an error.
func (a Action) IsFailure() bool { return a == Fail || a == FailExactUnavailable }
