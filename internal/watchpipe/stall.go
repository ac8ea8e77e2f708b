package watchpipe

import (
	"sync"
	"sync/atomic"
	"time"
)

// StallCheckInterval is how often a watch is checked for a stall (and its
// resourceVersion-advanced metric reported) for a given StallTimeout:
// min(StallTimeout/4, 1s), at least 1ms; 1s when stall detection is off
// (StallTimeout <= 0). A stalled watch ends between StallTimeout and one
// interval later.
func StallCheckInterval(stallTimeout time.Duration) time.Duration {
	const most = time.Second
	if stallTimeout <= 0 {
		return most
	}
	return min(most, max(stallTimeout/4, time.Millisecond))
}

// StallVerdict is what one check of a watch found.
type StallVerdict uint8

const (
	// Quiet: nothing was delivered since the last check, not yet for the
	// stall timeout.
	Quiet StallVerdict = iota
	// Advanced: something was delivered since the last check.
	Advanced
	// Stalled: nothing was delivered for the stall timeout: end the watch
	// and watch again from the resourceVersion held.
	Stalled
)

// Stall is the one stall detector of the SDK: the watch loop only counts
// what it delivers (one atomic add or one increment per event); Check, every
// Interval, compares the count with the last check's. Quiet time adds up one
// interval per check that saw nothing, so a stall is declared no earlier
// than Timeout after the last event and at most one interval later.
type Stall struct {
	timeout, tick time.Duration
	seen          uint64
	quiet         time.Duration
}

// NewStall returns a detector for timeout (<= 0: never stalls).
func NewStall(timeout time.Duration) Stall {
	return Stall{timeout: timeout, tick: StallCheckInterval(timeout)}
}

// Interval is how often Check is to be called.
func (s *Stall) Interval() time.Duration { return s.tick }

// Check decides, one interval after the previous check, from the number of
// events delivered so far.
func (s *Stall) Check(delivered uint64) StallVerdict {
	if delivered != s.seen {
		s.seen, s.quiet = delivered, 0
		return Advanced
	}
	if s.quiet += s.tick; s.timeout > 0 && s.quiet >= s.timeout {
		return Stalled
	}
	return Quiet
}

// StartWatchdog runs a Stall beside a watch loop that counts its deliveries
// in delivered, on a timer of its own: advanced is called (at the check's
// time) when something was delivered since the last check, stalled once when
// nothing was for timeout. It returns the function that stops it (which
// reports a last advance, if any).
func StartWatchdog(timeout time.Duration, delivered *atomic.Uint64, advanced func(time.Time), stalled func()) (stop func()) {
	s := NewStall(timeout)
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		switch s.Check(delivered.Load()) {
		case Advanced:
			advanced(time.Now())
		case Stalled:
			stopped = true
			stalled()
			return
		}
		t.Reset(s.tick)
	}
	mu.Lock()
	t = time.AfterFunc(s.tick, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		n := delivered.Load()
		mu.Unlock()
		if n != s.seen {
			advanced(time.Now())
		}
	}
}
