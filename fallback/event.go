package fallback

import (
	"fmt"

	"github.com/steadywatch/steadywatch/internal/vocab"
)

// Event records one fallback or retry the executor took.
type Event struct {
	// Reason is the reason code of the table row that decided it.
	Reason ReasonCode
	// Action is the action taken; its String names it (e.g. "RetryNewerRV",
	// "FallbackMostRecent", "Fail"). Act on Reason, which is stable.
	Action vocab.Action
	// Attempt counts the requests of the list call so far (1 = the first request).
	Attempt int
	// Class is the class of the response decided on; its String names it
	// (e.g. "gone", "too-large-rv", "throttled").
	Class vocab.Class
	// Before is the request that was answered; After is the next request
	// (zero when the call failed).
	Before, After Query
	// Detail says where a newer resource version came from, how long the
	// executor waited, or which pages were voided.
	Detail string
	// Err is the error that caused it (nil for observations on a 200).
	Err error
}

func (e Event) String() string {
	s := fmt.Sprintf("%s (attempt %d): %s -> %s, %s", e.Reason, e.Attempt, e.Before, e.After, e.Action)
	if e.Detail != "" {
		s += "; " + e.Detail
	}
	return s
}
