package fallback

import "time"

// ContinueExpiredPolicy says how to recover when a continue token expires
// (410 on page 2 or later). Pages from two snapshots are never stitched.
type ContinueExpiredPolicy int

const (
	// RestartNewerRV (default) restarts the whole list from page 1 at a newer
	// resource version (NotOlderThan: the newer RV; MostRecent/Any: the same
	// semantic), keeping the page size. Seed 004: "the client will need to
	// start from the beginning".
	RestartNewerRV ContinueExpiredPolicy = iota
	// RestartUnpaginated restarts the list with the same semantic and no limit.
	// Seed 004: "... or omit the limit parameter". One request, more memory.
	RestartUnpaginated
	// FailOnContinueExpired returns the 410 to the caller.
	FailOnContinueExpired
)

func (p ContinueExpiredPolicy) String() string {
	switch p {
	case RestartNewerRV:
		return "RestartNewerRV"
	case RestartUnpaginated:
		return "RestartUnpaginated"
	case FailOnContinueExpired:
		return "Fail"
	}
	return "ContinueExpiredPolicy(?)"
}

// TooLargePolicy says what to do once the "too large resource version" retry
// budget is spent.
type TooLargePolicy int

const (
	// TooLargeFallbackMostRecent (default) falls back to a MostRecent
	// (quorum) list for NotOlderThan queries, if most-recent fallback is
	// allowed. The served resource version is still verified against the
	// requested one: data older than requested is never returned.
	TooLargeFallbackMostRecent TooLargePolicy = iota
	// TooLargeFail returns the 504 to the caller.
	TooLargeFail
)

func (p TooLargePolicy) String() string {
	if p == TooLargeFail {
		return "Fail"
	}
	return "FallbackMostRecent"
}

// BackoffPolicy configures the jittered exponential backoff
// (github.com/cenkalti/backoff/v4 ExponentialBackOff) used between retries
// of 429, 5xx, transport errors, served-older answers and rule-1 retries.
// Zero fields take the defaults shown.
type BackoffPolicy struct {
	// InitialInterval is the first delay. Default 200ms.
	InitialInterval time.Duration
	// MaxInterval caps one delay. Default 5s.
	MaxInterval time.Duration
	// Multiplier grows the delay per attempt. Default 2.
	Multiplier float64
	// RandomizationFactor is the jitter (0.5 = +/-50%). Default 0.5; a negative
	// value disables jitter (for tests).
	RandomizationFactor float64
	// MaxRetries bounds the retries of one list call. Default 5; negative = none.
	MaxRetries int
	// MaxElapsedTime bounds the total time spent backing off in one list call.
	// Default 30s.
	MaxElapsedTime time.Duration
}

// Policy configures the decisions. Its zero value is the safe default
// described on each field.
type Policy struct {
	// MaxNewerRVRetries bounds rule-1 retries at a newer resource version.
	// Default 3; negative = no retry (go straight to the most-recent fallback).
	MaxNewerRVRetries int
	// DisableMostRecentFallback forbids falling back to a MostRecent
	// (resourceVersion="", quorum read) list. Default false: the fallback is
	// allowed (seed 001: "or fall back to ResourceVersion=\"\"").
	DisableMostRecentFallback bool
	// ContinueExpired is the recovery when a continue token expires. Default RestartNewerRV.
	ContinueExpired ContinueExpiredPolicy
	// MaxListRestarts bounds restarts after continue-token expiry. Default 2;
	// negative = none.
	MaxListRestarts int
	// MaxRetryAfter caps how long one Retry-After is honoured. Default 10s.
	MaxRetryAfter time.Duration
	// MaxTooLargeRetries bounds retries of "too large resource version". Default 3;
	// negative = none.
	MaxTooLargeRetries int
	// TooLargeAfterBudget is what happens when that budget is spent. Default
	// TooLargeFallbackMostRecent.
	TooLargeAfterBudget TooLargePolicy
	// Backoff configures retry delays.
	Backoff BackoffPolicy
}

func defInt(v, def int) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}

// WithDefaults returns p with every zero field replaced by its default and
// negative counts replaced by 0.
func (p Policy) WithDefaults() Policy {
	p.MaxNewerRVRetries = defInt(p.MaxNewerRVRetries, 3)
	p.MaxListRestarts = defInt(p.MaxListRestarts, 2)
	p.MaxTooLargeRetries = defInt(p.MaxTooLargeRetries, 3)
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 10 * time.Second
	}
	b := &p.Backoff
	if b.InitialInterval <= 0 {
		b.InitialInterval = 200 * time.Millisecond
	}
	if b.MaxInterval <= 0 {
		b.MaxInterval = 5 * time.Second
	}
	if b.Multiplier < 1 {
		b.Multiplier = 2
	}
	switch {
	case b.RandomizationFactor < 0:
		b.RandomizationFactor = 0
	case b.RandomizationFactor == 0:
		b.RandomizationFactor = 0.5
	case b.RandomizationFactor > 1:
		b.RandomizationFactor = 1
	}
	b.MaxRetries = defInt(b.MaxRetries, 5)
	if b.MaxElapsedTime <= 0 {
		b.MaxElapsedTime = 30 * time.Second
	}
	return p
}

// Budget names the retry budget that decides Situation.AttemptsLeft for a class.
type Budget int

const (
	// NoBudget: the class is never retried; AttemptsLeft is irrelevant.
	NoBudget Budget = iota
	// NewerRVBudget: Policy.MaxNewerRVRetries (rule 1, 410 Gone).
	NewerRVBudget
	// RestartBudget: Policy.MaxListRestarts (continue-token expiry).
	RestartBudget
	// TooLargeBudget: Policy.MaxTooLargeRetries (504 too large resource version).
	TooLargeBudget
	// BackoffBudget: Policy.Backoff (429, 5xx, transport, served-older).
	BackoffBudget
)

// BudgetFor returns the budget whose remaining attempts the executor reports
// in Situation.AttemptsLeft for class c.
func BudgetFor(c Class) Budget {
	switch c {
	case Gone:
		return NewerRVBudget
	case ContinueExpired:
		return RestartBudget
	case TooLargeRV:
		return TooLargeBudget
	case Throttled, ServerError, Transport, ServedOlder:
		return BackoffBudget
	}
	return NoBudget
}
