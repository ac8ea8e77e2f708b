package engine

import (
	"fmt"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

// MatchSupport is the executor's belief about the server's handling of
// resourceVersionMatch when it sent the request (mirrors capability.Support).
type MatchSupport int

const (
	// MatchUnknown: not known; the Match wire form is sent and the answer verified.
	MatchUnknown MatchSupport = iota
	// MatchHonoured: the server honours resourceVersionMatch (>= 1.19).
	MatchHonoured
	// MatchIgnored: the server ignores it; the Legacy wire form is sent.
	MatchIgnored
)

func (m MatchSupport) String() string {
	switch m {
	case MatchHonoured:
		return "honoured"
	case MatchIgnored:
		return "ignored"
	}
	return "unknown"
}

// Form returns the wire form to send under this belief.
func (m MatchSupport) Form() vocab.WireForm {
	if m == MatchIgnored {
		return vocab.Legacy
	}
	return vocab.Match
}

// Op names whose answer a situation describes.
type Op int

const (
	// OpPage: one request of a list call (the lister's executor), a probe included.
	OpPage Op = iota
	// OpRelist: a reflector's list call failed (after the lister's own rules).
	OpRelist
	// OpWatch: a reflector's watch failed.
	OpWatch
	// OpNewerRV: the limit=1 MostRecent read of a list call that needs a
	// newer resourceVersion (rule 1, list restarts).
	OpNewerRV
	// OpCurrentRV: the same read, sent to learn whether a "too large"
	// resourceVersion exists at all (CheckRVExists).
	OpCurrentRV
	// OpStreamOpen: a reflector's streaming list (sendInitialEvents) could
	// not be opened.
	OpStreamOpen
	// OpStreamEnd: a reflector's streaming list's initial events ended
	// (Ending says how).
	OpStreamEnd
	// OpWatchEnd: a reflector's watch ended without an ERROR event (Ending
	// says how; an ERROR event is OpWatch).
	OpWatchEnd
	// OpDropInAttempt: a drop-in ListerWatcher's watch attempt (a streaming
	// list or a plain watch) ended, or failed to open, or its list
	// succeeded: Progressed says whether it made progress.
	OpDropInAttempt
	// OpDropInStall: a drop-in ListerWatcher's watch delivered nothing for
	// StallTimeout.
	OpDropInStall
	// OpDropInList: client-go asks a drop-in ListerWatcher for a list;
	// Class is the class of the drop-in's streaming list at the same
	// resourceVersion when it just failed unserved (TooLargeRV,
	// ServerError, NoAnswer), OK otherwise.
	OpDropInList
	// OpDropInListed: a drop-in ListerWatcher's list came back; Class is
	// ServedOlder when it is older than what was already delivered, OK
	// otherwise.
	OpDropInListed
	// OpDropInStream: client-go asks a drop-in ListerWatcher for a
	// streaming list; Rejected says whether it is refused without a request
	// (the server is known not to stream, or the options disable it).
	OpDropInStream
)

func (o Op) String() string {
	switch o {
	case OpRelist:
		return "relist"
	case OpWatch:
		return "watch"
	case OpNewerRV:
		return "newer-rv-read"
	case OpCurrentRV:
		return "current-rv-read"
	case OpStreamOpen:
		return "stream-open"
	case OpStreamEnd:
		return "stream-end"
	case OpWatchEnd:
		return "watch-end"
	case OpDropInAttempt:
		return "dropin-attempt"
	case OpDropInStall:
		return "dropin-stall"
	case OpDropInList:
		return "dropin-list"
	case OpDropInListed:
		return "dropin-listed"
	case OpDropInStream:
		return "dropin-stream"
	case OpListEnd:
		return "list-end"
	case OpStop:
		return "stop"
	case OpListPlan:
		return "list-plan"
	}
	return "page"
}

// Situation is everything a row of the table matches on.
type Situation struct {
	// Op is whose answer it is (zero: a list request).
	Op Op
	// Semantic of the request as sent (after earlier fallbacks); for a
	// continue page, the semantic of the list's first page.
	Semantic fallback.Semantic
	// HasLimit: the request carried a limit.
	HasLimit bool
	// HasContinue: the request carried a continue token.
	HasContinue bool
	// Match is the belief about resourceVersionMatch support when it was sent.
	Match MatchSupport
	// Class is the response's class (Classify plus the executor's
	// verification of ListMeta).
	Class vocab.Class
	// AttemptsLeft: the budget of Class (budgetFor) is not spent yet.
	AttemptsLeft bool
	// RVChecked: a consistent read in this call already showed that the
	// requested resourceVersion exists (it is not newer than the server's).
	RVChecked bool
	// WatchCacheStuck: the server's watch cache advances only when the listed
	// resource is written (no watch progress notifications, KEP-1904), so a
	// resourceVersion moved on by writes of other resources is out of its
	// reach until then (capability.WatchCacheProgress is No, or two "too large"
	// answers to one request reported the same current resourceVersion).
	WatchCacheStuck bool
	// NotAList: a 200 whose body has no ListMeta (OpPage; its class is Other).
	NotAList bool
	// RequestsLeft: Config.MaxRequests is not reached by the page answers
	// that delivered no page, this one counted (OpPage).
	RequestsLeft bool
	// RestartAllowed: a restart may start the list again: the caller gave no
	// continue token of its own, and no page was handed over or the caller
	// allows them voided (OpPage).
	RestartAllowed bool
	// ListRV: the answer's ListMeta has a resourceVersion (OpNewerRV,
	// OpCurrentRV).
	ListRV bool
	// Resumable: the store's resourceVersion is one a watch can resume from
	// (neither "" nor "0") (OpWatch, OpWatchEnd).
	Resumable bool
	// Rejected: the server refused sendInitialEvents as unsupported
	// (OpStreamOpen); a drop-in refuses a streaming list without a request
	// (OpDropInStream).
	Rejected bool
	// NoResponse: the streaming list's request got no response at all
	// within InitialEventsTimeout (OpStreamOpen).
	NoResponse bool
	// Ending is how a streaming list's initial events or a watch ended
	// (OpStreamEnd, OpWatchEnd).
	Ending Ending
	// Progressed: the watch adopted a newer resourceVersion (OpWatchEnd);
	// the attempt delivered something newer than where it started, or the
	// list succeeded (OpDropInAttempt).
	Progressed bool
	// Short: the watch closed within Options.ShortWatch of its start
	// (OpWatchEnd); AttemptsLeft then says whether Options.MaxShortWatches
	// such watches in a row are not reached yet.
	Short bool
	// RetriesSpent: the list call failed because its own retries of a
	// transient failure were spent (reason retries-exhausted) (OpRelist).
	RetriesSpent bool
	// The list plan's conditions (OpListPlan): Initial, the first fill (not
	// a relist); Retrying, a retry after a failed list (attempt > 0);
	// Paginate, Options.PaginateLists; PageSize, a page size is set;
	// ObjectStore, the store is filled object by object; CacheReads, where
	// the server reads consistent lists; RetriesInside, the client retries a
	// 504 on its own; Probe, the limit=1 read's outcome.
	Initial, Retrying, Paginate, PageSize, ObjectStore, RetriesInside bool
	CacheReads                                                        CacheReads
	Probe                                                             PlanProbe
}

func (s Situation) String() string {
	return fmt.Sprintf("{op=%s %s limit=%t continue=%t match=%s class=%s attemptsLeft=%t rvChecked=%t watchCacheStuck=%t notAList=%t requestsLeft=%t restartAllowed=%t listRV=%t resumable=%t rejected=%t noResponse=%t ending=%s progressed=%t short=%t retriesSpent=%t initial=%t retrying=%t paginate=%t pageSize=%t objectStore=%t retriesInside=%t cacheReads=%s probe=%s}",
		s.Op, s.Semantic, s.HasLimit, s.HasContinue, s.Match, s.Class, s.AttemptsLeft, s.RVChecked, s.WatchCacheStuck,
		s.NotAList, s.RequestsLeft, s.RestartAllowed, s.ListRV, s.Resumable, s.Rejected, s.NoResponse, s.Ending, s.Progressed, s.Short, s.RetriesSpent,
		s.Initial, s.Retrying, s.Paginate, s.PageSize, s.ObjectStore, s.RetriesInside, s.CacheReads, s.Probe)
}
