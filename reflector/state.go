package reflector

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/fallback"
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
	initial bool   // the first sync: no store contents yet
	cause   string // why we list (metrics code): "initial", "watch-gone", "stale-list", ...
	attempt int    // 0 for the first try of this list
}

// streamingList: open a watch with sendInitialEvents and collect the initial
// events until the k8s.io/initial-events-end bookmark; then keep the watch.
type streamingList struct {
	query   fallback.Query // MostRecent or NotOlderThan(rv)
	initial bool
	cause   string
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
// cardinality) and a human detail for logs.
type why struct {
	code   string
	detail string
}

func because(code, format string, args ...any) why {
	return why{code: code, detail: fmt.Sprintf(format, args...)}
}

// Reason codes of the reflector: the "reason" label of the transitions
// metric, the "cause" of relists and the "reason" of watch restarts. They
// are the complete set (Reasons); docs/reasons.md lists them.
const (
	// ReasonStart: Run was called.
	ReasonStart = "start"
	// ReasonListed: a list filled the store; a watch follows from its
	// resourceVersion.
	ReasonListed = "listed"
	// ReasonStreamed: a streaming list (sendInitialEvents) ended with its
	// initial-events-end bookmark and filled the store.
	ReasonStreamed = "streamed"
	// ReasonWatchOpened: a watch was opened from the store's resourceVersion.
	ReasonWatchOpened = "watch-opened"
	// ReasonWatchClosed: the server ended a watch after events (normal: the
	// apiserver ends watches after a timeout); watching again from the last
	// resourceVersion, without a relist.
	ReasonWatchClosed = "watch-closed"
	// ReasonShortWatch: watches closed at once without any event, again and
	// again (kubernetes/kubernetes#104171: some servers and proxies do this
	// instead of a 410); backing off, then relisting after 2 of them.
	ReasonShortWatch = "short-watch"
	// ReasonStalled: no event or bookmark for Options.Lister.StallTimeout (a proxy
	// holding a dead connection); the watch was restarted from the last
	// resourceVersion.
	ReasonStalled = "stalled"
	// ReasonWatchGone: the watch's resourceVersion is no longer available
	// (410 Gone, after etcd compaction or a restart of the watch cache);
	// relisting, cheapest safe list first.
	ReasonWatchGone = "watch-gone"
	// ReasonListGone: a list or streaming list was answered 410; listing
	// MostRecent instead.
	ReasonListGone = "list-gone"
	// ReasonTooLargeRV: "too large resource version": the server has not
	// caught up with the resourceVersion (a lagging HA member); waiting its
	// Retry-After (capped by lister.Options.MaxRetryAfter), then
	// MostRecent after 3 attempts.
	ReasonTooLargeRV = "too-large-rv"
	// ReasonStaleList: a relist came back older than what the store already
	// holds; never applied (the store never goes back in time), asked again
	// after a backoff, then MostRecent after 2 attempts.
	ReasonStaleList = "stale-list"
	// ReasonStaleEvent: a watch event's resourceVersion is older than the
	// stored object's, than the object's deletion, or than the watch's
	// starting resourceVersion (a watch cache re-delivering events,
	// kubernetes/kubernetes#73845, or a proxy mixing streams); not applied,
	// counted, and the store re-synced, after a backoff delay, with a list
	// not older than it.
	ReasonStaleEvent = "event-older-than-store"
	// ReasonBadResourceVersion: a bookmark or event carried a
	// resourceVersion that does not parse on a server whose versions do; it
	// was not adopted as the watch position (an event was not applied: the
	// watch ended and the store re-synced; a streaming list whose end
	// bookmark carried it was replaced by a list).
	ReasonBadResourceVersion = "unparsable-resource-version"
	// ReasonNoResumeVersion: a watch ended while the store's resourceVersion
	// was "" or "0" (a list answered there). A watch from "" or "0" is "get
	// state and start at most recent" (Kubernetes API Concepts, "Resource
	// versions"): its synthetic ADDED events never delete an object the
	// store holds and the server no longer has, so it resumes nothing; the
	// store is refilled with a list after a backoff delay instead.
	ReasonNoResumeVersion = "no-resume-version"
	// ReasonRetry: a watch failed with a transient error (429, 5xx,
	// connection); retrying the watch after a backoff, without a relist.
	ReasonRetry = "retry"
	// ReasonWatchError: a watch failed in a way a retry will not fix;
	// relisting after a backoff.
	ReasonWatchError = "watch-error"
	// ReasonListError: a list failed (its lister error says which rule) or
	// its result could not be stored; retrying after a backoff.
	ReasonListError = "list-error"
	// ReasonStreamIgnored: the server answered a streaming list as a plain
	// watch (it ignores sendInitialEvents: servers before v1.27, some
	// aggregated APIs); listing instead. The belief is kept per API
	// group/version and expires.
	ReasonStreamIgnored = "streaming-ignored"
	// ReasonStreamRejected: the server refused sendInitialEvents (422 with
	// the WatchList feature off, kubernetes/kubernetes#135583); listing
	// instead.
	ReasonStreamRejected = "streaming-rejected"
	// ReasonStreamFailed: a streaming list failed or closed before its
	// initial-events-end bookmark (kubernetes/kubernetes#140890, proxies
	// that filter bookmarks: gravitational/teleport#64188); listing instead
	// after a backoff.
	ReasonStreamFailed = "streaming-failed"
	// ReasonBackoffDone: a backoff wait ended; the next step runs.
	ReasonBackoffDone = "backoff-done"
	// ReasonContextDone: Run's context ended; the reflector stopped.
	ReasonContextDone = "context-done"
	// ReasonInitial: the first list or streaming list after Run.
	ReasonInitial = "initial"
	// ReasonInvalidOptions: Run was called on a reflector whose Options
	// Validate rejects (an option it cannot honour, named in the log line);
	// it stopped without sending a request. Fix the option.
	ReasonInvalidOptions = "invalid-options"
)

// Reasons returns every reason code of the reflector, in a stable order.
func Reasons() []string {
	return []string{ReasonStart, ReasonListed, ReasonStreamed, ReasonWatchOpened, ReasonWatchClosed, ReasonShortWatch,
		ReasonStalled, ReasonWatchGone, ReasonListGone, ReasonTooLargeRV, ReasonStaleList, ReasonStaleEvent, ReasonBadResourceVersion, ReasonNoResumeVersion, ReasonRetry,
		ReasonWatchError, ReasonListError, ReasonStreamIgnored, ReasonStreamRejected, ReasonStreamFailed,
		ReasonBackoffDone, ReasonContextDone, ReasonInitial, ReasonInvalidOptions}
}
