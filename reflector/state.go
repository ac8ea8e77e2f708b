package reflector

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// Phase names a state of the reflector's state machine, for introspection,
// logs and metrics.
type Phase string

const (
	// PhaseNotStarted: Run has not been called yet.
	PhaseNotStarted Phase = "NotStarted"
	// PhaseInitialList: the first (paginated) list is running.
	PhaseInitialList Phase = "InitialList"
	// PhaseStreamingList: a streaming list (watch with sendInitialEvents) is
	// collecting the initial events, as the first sync or as a relist.
	PhaseStreamingList Phase = "StreamingList"
	// PhaseRelisting: a list after the first one is running (after a 410, a
	// stale list, or a watch error).
	PhaseRelisting Phase = "Relisting"
	// PhaseStartingWatch: a watch request from the last resourceVersion is being opened.
	PhaseStartingWatch Phase = "StartingWatch"
	// PhaseWatching: events and bookmarks are flowing into the store.
	PhaseWatching Phase = "Watching"
	// PhaseBackingOff: waiting (jittered backoff or the server's Retry-After)
	// before the next attempt.
	PhaseBackingOff Phase = "BackingOff"
	// PhaseStopped: Run returned because its context ended.
	PhaseStopped Phase = "Stopped"
)

// Status is a snapshot of a reflector, for introspection (State).
type Status struct {
	// Phase is the current state.
	Phase Phase
	// Reason says, in a few words, why the reflector entered Phase.
	Reason string
	// Since is when it entered Phase.
	Since time.Time
	// ResourceVersion is the last resourceVersion the store reflects.
	ResourceVersion string
	// Synced is true once the store has been filled by a complete list.
	Synced bool
	// Items is the number of objects the store reflects.
	Items int
}

// state is one phase of the state machine. Each implementation carries
// exactly the data valid in its phase, so that, for example, an open watch
// exists only in watching.
type state interface {
	phase() Phase
}

// listing: make one list with query, then replace the store with it.
type listing struct {
	query   fallback.Query
	initial bool        // the first sync: no store contents yet
	cause   reason.Code // why we list (metrics code): "initial", "watch-gone", "stale-list", ...
	attempt int         // 0 for the first try of this list
}

// streamingList: open a watch with sendInitialEvents and collect the initial
// events until the k8s.io/initial-events-end bookmark; then keep the watch.
type streamingList struct {
	query   fallback.Query // MostRecent or NotOlderThan(rv)
	initial bool
	cause   reason.Code
	attempt int
}

// startingWatch: open a watch from rv.
type startingWatch struct {
	rv      string
	attempt int // consecutive failed attempts to watch from rv
}

// watching: w is open and was opened at rv.
type watching struct {
	rv     string
	w      watch.Interface
	opened time.Time
}

// backingOff: wait delay, then go to next.
type backingOff struct {
	delay time.Duration
	next  state
}

// stopped: the context ended.
type stopped struct{}

func (s listing) phase() Phase {
	if s.initial {
		return PhaseInitialList
	}
	return PhaseRelisting
}
func (streamingList) phase() Phase { return PhaseStreamingList }
func (startingWatch) phase() Phase { return PhaseStartingWatch }
func (watching) phase() Phase      { return PhaseWatching }
func (backingOff) phase() Phase    { return PhaseBackingOff }
func (stopped) phase() Phase       { return PhaseStopped }

// why is the reason of a transition: a short code for metrics (bounded
// cardinality) and a human detail for logs. A transition a row of the
// decision table decided names it (row is its index + 1; 0: none) and the
// situation it was asked with.
type why struct {
	code   reason.Code
	detail string
	row    int
	sit    engine.Situation
	// delay is the wait the row's Wait came to when it was carried out
	// (after); the next state is a backingOff of this delay.
	delay time.Duration
}

// by names the row d, asked with sit, as the decision of w.
func (w why) by(d engine.Decision, sit engine.Situation) why {
	w.row, w.sit = d.Row+1, sit
	return w
}

func because(code reason.Code, format string, args ...any) why {
	return why{code: code, detail: fmt.Sprintf(format, args...)}
}
