package policy

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/steadywatch/steadywatch/fallback"
)

// ContinueExpiredPolicy says how to recover when a continue token expires
// (410 on page 2 or later). Pages from two snapshots are never stitched.
type ContinueExpiredPolicy int

const (
	// RestartNewerRV (default) restarts the whole list from page 1 at a newer
	// resource version (NotOlderThan: the newer RV; MostRecent/Any: the same
	// semantic), keeping the page size. API Concepts: "the client will need to
	// start from the beginning".
	RestartNewerRV ContinueExpiredPolicy = iota
	// RestartUnpaginated restarts the list with the same semantic and no limit.
	// API Concepts: "... or omit the limit parameter". One request, more memory.
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

// Backoff configures a jittered exponential backoff
// (github.com/cenkalti/backoff/v4 ExponentialBackOff). It is the one backoff
// type of the SDK: the lister's retries within one list call (Policy.Backoff)
// and the reflector's waits between failed list and watch attempts
// (reflector.Options.Backoff) both use it, each with its own defaults
// (DefaultListBackoff, reflector.DefaultBackoff).
//
// Convention, as for every option struct of the SDK: a zero field takes the
// default; a negative count or duration means "none" where that makes sense
// (documented per field).
type Backoff struct {
	// Initial is the first delay.
	Initial time.Duration
	// Max caps one delay, jitter included.
	Max time.Duration
	// Multiplier grows the delay per attempt. Values below 1 take the default.
	Multiplier float64
	// Jitter spreads each delay over [1-Jitter, 1+Jitter] times the current
	// interval (0.5 = +/-50%). Negative disables jitter (for tests); values
	// above 1 are 1.
	Jitter float64
	// MaxRetries bounds the retries of one call. Negative = no retry.
	// Ignored by the reflector, which retries until its context ends.
	MaxRetries int
	// MaxElapsedTime bounds the total time spent backing off in one call.
	// Ignored by the reflector.
	MaxElapsedTime time.Duration
	// ResetAfter starts the delays again from Initial once this long has
	// passed without a failure. Used by the reflector.
	ResetAfter time.Duration
}

// DefaultListBackoff returns Policy.Backoff's defaults: retries inside one
// list call are quick and few (200ms doubling to 5s, +/-50% jitter, at most 5
// retries and 30s).
func DefaultListBackoff() Backoff {
	return Backoff{
		Initial: 200 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.5,
		MaxRetries: 5, MaxElapsedTime: 30 * time.Second, ResetAfter: 2 * time.Minute,
	}
}

// WithDefaults returns b with every zero field taken from def; negative
// counts and a negative Jitter stay negative ("none"). Applying it twice
// changes nothing.
func (b Backoff) WithDefaults(def Backoff) Backoff {
	if b.Initial <= 0 {
		b.Initial = def.Initial
	}
	if b.Max <= 0 {
		b.Max = def.Max
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Multiplier < 1 {
		b.Multiplier = def.Multiplier
	}
	switch {
	case b.Jitter < 0:
		b.Jitter = -1
	case b.Jitter == 0:
		b.Jitter = def.Jitter
	case b.Jitter > 1:
		b.Jitter = 1
	}
	b.MaxRetries = CountOrDefault(b.MaxRetries, def.MaxRetries)
	if b.MaxElapsedTime <= 0 {
		b.MaxElapsedTime = def.MaxElapsedTime
	}
	if b.ResetAfter <= 0 {
		b.ResetAfter = def.ResetAfter
	}
	return b
}

// New returns a fresh cenkalti ExponentialBackOff configured from b (b's
// defaults applied by the caller). It never stops by itself: callers count
// retries against MaxRetries and MaxElapsedTime.
func (b Backoff) New() *backoff.ExponentialBackOff {
	e := backoff.NewExponentialBackOff()
	e.InitialInterval = b.Initial
	e.MaxInterval = b.Max
	e.Multiplier = b.Multiplier
	e.RandomizationFactor = max(b.Jitter, 0)
	e.MaxElapsedTime = 0
	e.Reset()
	return e
}

// Policy configures the decisions. Its zero value is the safe default
// described on each field.
type Policy struct {
	// MaxNewerRVRetries bounds rule-1 retries at a newer resource version.
	// Default 3; negative = no retry (go straight to the most-recent fallback).
	MaxNewerRVRetries int
	// DisableMostRecentFallback forbids falling back to a MostRecent
	// (resourceVersion="", quorum read) list. Default false: the fallback is
	// allowed (KEP-2523: "or fall back to ResourceVersion=\"\"").
	DisableMostRecentFallback bool
	// ContinueExpired is the recovery when a continue token expires. Default RestartNewerRV.
	ContinueExpired ContinueExpiredPolicy
	// MaxListRestarts bounds restarts after continue-token expiry. Default 2;
	// negative = none.
	MaxListRestarts int
	// MaxRetryAfter caps how long one Retry-After is honoured: a server or
	// proxy that answers "Retry-After: 3600" is retried after this cap, not
	// after an hour. Default 10s (at most 30s is recommended).
	MaxRetryAfter time.Duration
	// ResponseTimeout bounds how long one request hears nothing from the
	// server: the wait for the response's headers once the request is
	// written, and, while a list body is read, the wait for its next bytes.
	// It is not a bound on the whole request: a huge list that keeps
	// delivering bytes takes as long as it needs (client-go's
	// rest.Request.Timeout would bound the whole body, and end it). A
	// watch is bounded until its headers arrive; after that the stall
	// watchdog decides (lister.Options.StallTimeout). A request past the
	// bound ends with a *NoAnswerError, retried after Backoff and counted
	// like any other request. Default DefaultResponseTimeout (70s: a real
	// apiserver answers a list within its --request-timeout, 60s by
	// default, or with a 504; it writes a watch's headers at once);
	// negative = no bound (client-go's behaviour: the caller's context).
	//
	// Honoured on every request the SDK's own clients send
	// (lister.FromClientset, FromRESTClient, FromDynamicConfig,
	// FromMetadataConfig) and on clients built from NoHiddenRetries; the
	// requests of other clients (a plain clientset given to FromFuncs or
	// lister.Wrap) keep client-go's behaviour.
	ResponseTimeout time.Duration
	// MaxTooLargeRetries bounds retries of "too large resource version". Default 2
	// (each attempt against a watch cache already waits up to 3s there, plus
	// its Retry-After of 1s: about 11s in all, so a resourceVersion far in the
	// future fails within seconds); negative = none.
	MaxTooLargeRetries int
	// TooLargeAfterBudget is what happens when that budget is spent. Default
	// TooLargeFallbackMostRecent.
	TooLargeAfterBudget TooLargePolicy
	// Backoff configures retry delays. Default DefaultListBackoff.
	Backoff Backoff
}

// CountOrDefault applies the SDK's one defaulting convention to a count: 0
// takes def, negative means none (kept as -1, so that applying defaults twice
// changes nothing; read it with max(v, 0)).
func CountOrDefault(v, def int) int {
	switch {
	case v < 0:
		return -1
	case v == 0:
		return def
	}
	return v
}

// WithDefaults returns p with every zero field replaced by its default;
// negative counts stay negative ("none"). Applying it twice changes nothing.
func (p Policy) WithDefaults() Policy {
	p.MaxNewerRVRetries = CountOrDefault(p.MaxNewerRVRetries, 3)
	p.MaxListRestarts = CountOrDefault(p.MaxListRestarts, 2)
	p.MaxTooLargeRetries = CountOrDefault(p.MaxTooLargeRetries, 2)
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 10 * time.Second
	}
	switch {
	case p.ResponseTimeout < 0:
		p.ResponseTimeout = -1
	case p.ResponseTimeout == 0:
		p.ResponseTimeout = fallback.DefaultResponseTimeout
	}
	p.Backoff = p.Backoff.WithDefaults(DefaultListBackoff())
	return p
}

// DefaultReflectorBackoff is the backoff between a reflector's failed
// attempts, client-go's reflector backoff: 800ms doubling to 30s, +/-50%
// jitter, reset after 2 minutes without a failure. MaxRetries and
// MaxElapsedTime do not apply: a reflector retries until its context ends.
func DefaultReflectorBackoff() Backoff {
	return Backoff{Initial: 800 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2, Jitter: 0.5, ResetAfter: 2 * time.Minute}
}
