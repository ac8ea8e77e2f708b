package engine

import (
	"slices"

	"github.com/steadywatch/steadywatch/internal/reason"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Gone, TooLargeRV, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Accept, Relist, Backoff, ...), row by row
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// Then is the state a reflector step's row leads to.
type Then int

const (
	// ThenByAction: the row's action says (the list executor's rows,
	// OpRelist's and OpWatch's but those below).
	ThenByAction Then = iota
	// ThenListSame: the same (re)fill, with a list instead of a stream.
	ThenListSame
	// ThenListMostRecent: a MostRecent list.
	ThenListMostRecent
	// ThenSyncMostRecent: a MostRecent (re)fill, streamed where the server
	// is known to stream.
	ThenSyncMostRecent
	// ThenStreamMostRecent: a MostRecent streaming list.
	ThenStreamMostRecent
	// ThenListNotOlder: a list not older than the resourceVersion the store
	// requires (MostRecent if it has none).
	ThenListNotOlder
	// ThenSyncNotOlder: a (re)fill not older than the store's
	// resourceVersion, streamed where the server is known to stream.
	ThenSyncNotOlder
	// ThenWatch: watch on, from the initial-events-end bookmark.
	ThenWatch
	// ThenWatchAgain: a new watch from the store's resourceVersion.
	ThenWatchAgain
)

var thenNames = [...]string{
	ThenByAction: "", ThenListSame: "list the same query", ThenListMostRecent: "list MostRecent",
	ThenSyncMostRecent: "(re)fill MostRecent", ThenStreamMostRecent: "stream MostRecent",
	ThenListNotOlder: "list NotOlderThan the store", ThenSyncNotOlder: "(re)fill NotOlderThan the store",
	ThenWatch: "watch on", ThenWatchAgain: "watch again",
}

func (t Then) String() string {
	if t == ThenStop {
		return "stop"
	}
	if n, ok := planThenNames[t]; ok {
		return n
	}
	return thenNames[t]
}

// Ending is how a reflector's streaming list or watch ended.
type Ending int

const (
	// EndedOK: the initial-events-end bookmark arrived and the store took
	// the list (OpStreamEnd).
	EndedOK Ending = iota
	// EndedStoreFailed: the store rejected a streamed object or the list's
	// end (OpStreamEnd).
	EndedStoreFailed
	// EndedStale: the stream is older than the store: an object older than
	// one it holds, or an initial-events-end bookmark older than its
	// resourceVersion (OpStreamEnd).
	EndedStale
	// EndedCut: the stream closed or was cut before its initial-events-end
	// bookmark (OpStreamEnd).
	EndedCut
	// EndedError: the stream sent an ERROR event; Class is its class
	// (OpStreamEnd).
	EndedError
	// EndedIgnored: the server sent plain ADDED events and no
	// initial-events-end bookmark: it ignores sendInitialEvents (OpStreamEnd).
	EndedIgnored
	// EndedBadRV: a resourceVersion that does not parse on a server whose
	// versions do (the initial-events-end bookmark's, or a watch event's).
	EndedBadRV
	// EndedClosed: the server closed the watch (OpWatchEnd).
	EndedClosed
	// EndedStalled: no event or bookmark for StallTimeout (OpWatchEnd).
	EndedStalled
	// EndedStaleEvent: an event older than the store, refused by the watch
	// pipeline (OpWatchEnd).
	EndedStaleEvent
)

var endingNames = [...]string{
	EndedOK: "ok", EndedStoreFailed: "store-failed", EndedStale: "stale", EndedCut: "cut", EndedError: "error",
	EndedIgnored: "ignored", EndedBadRV: "bad-rv", EndedClosed: "closed", EndedStalled: "stalled", EndedStaleEvent: "stale-event",
}

func (e Ending) String() string { return endingNames[e] }

// streamEndings and watchEndings are the endings of each op.
var (
	streamEndings = []Ending{EndedOK, EndedStoreFailed, EndedStale, EndedCut, EndedError, EndedIgnored, EndedBadRV}
	watchEndings  = []Ending{EndedClosed, EndedStalled, EndedStaleEvent, EndedBadRV}
	ends          = func(e ...Ending) []Ending { return e }
	allClasses    = Classes()
)

const (
	srcKEP3157          = "KEP-3157, watch-list (https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/3157-watch-list)"
	srcStreamFallsTo    = srcKEP3157 + `; client-go's Reflector (tools/cache/reflector.go): "Data couldn't be fetched in watchlist mode. Falling back to regular list."`
	srcStreamEnd        = srcKEP3157 + `: the initial events end with a bookmark annotated "k8s.io/initial-events-end"; before it the store holds no complete list`
	srcNoResume         = SourceResourceVersions + `, "Efficient detection of changes": a watch from "" or "0" is "get state and start at most recent", which resumes nothing; list instead`
	srcNeverBack        = SourceResourceVersions + `, Not older than: the store never goes back in time; ` + SourceKEP2523 + `: list NotOlderThan the store's resourceVersion`
	srcBadRV            = SourceResourceVersions + `: resourceVersions are opaque, but a server whose versions parse and then sends one that does not is broken; every watch from it would fail`
	srcWatchResume      = SourceResourceVersions + `, "Efficient detection of changes": a watch resumes from the last resourceVersion it delivered; client-go's Reflector watches again from it`
	srcShortWatch       = `client-go's Reflector (tools/cache/reflector.go) treats a watch that "lasted less than a second and no items received" as a failure (VeryShortWatchError); a server whose history is gone but never says 410 (kubernetes/kubernetes#104171, kubernetes/kubernetes#137089)`
	srcDropInProgress   = "a watch that delivered something newer than where it started, or a list that succeeded, is progress: the no-progress delay starts afresh"
	srcDropInNoProgress = `client-go's Reflector retries a streaming list answered 410 or "too large resource version" at once (tools/cache/reflector.go, watchList); a watch attempt that ends without progress is a failure, and the next waits a growing, jittered delay`
	srcStall            = `Kubernetes API Concepts, "Watch bookmarks" (https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks): a server sends bookmarks to keep a quiet watch's resourceVersion current; a watch with no event or bookmark for StallTimeout is held by a proxy or a dead connection: watch again from the store's resourceVersion`
)

// stepRows are the reflector's own outcomes: a streaming list that did not
// open or ended (KEP-3157), and a watch that ended without an ERROR event.
var stepRows = []Row{
	// A streaming list that could not be opened.
	{when{op: OpStreamOpen, classes: allClasses, rejected: yes}, Relist, reason.StreamRejected, srcStreamFallsTo + "; a server that refuses sendInitialEvents does not stream (recorded)", WaitNone, ThenListSame},
	{when{op: OpStreamOpen, classes: cls(Invalid), rejected: no}, Relist, reason.StreamFailed, srcStreamFallsTo + "; the caller's own invalid request (a bad selector) is no evidence about the server", WaitNone, ThenListSame},
	{when{op: OpStreamOpen, classes: except(Invalid), rejected: no, semantics: onlyNOT, noResponse: yes}, FallbackMostRecent, reason.StreamFailed, srcStreamFallsTo + "; no response at all (a proxy holding the stream): " + SourceResourceVersions + ", Most recent: never older than anything served", WaitBackoffOnly, ThenListMostRecent},
	{when{op: OpStreamOpen, classes: cls(TooLargeRV, ServerError), rejected: no, semantics: onlyNOT, noResponse: no}, FallbackMostRecent, reason.TooLargeRV, srcTooLarge + "; this server is behind the store's resourceVersion: a consistent read is never older than anything served", WaitBackoff, ThenSyncMostRecent},
	{when{op: OpStreamOpen, classes: except(Invalid, TooLargeRV, ServerError), rejected: no, semantics: onlyNOT, noResponse: no}, Relist, reason.StreamFailed, srcStreamFallsTo, WaitBackoff, ThenListSame},
	{when{op: OpStreamOpen, classes: except(Invalid), rejected: no, semantics: []Semantic{MostRecent, Any, Exact}}, Relist, reason.StreamFailed, srcStreamFallsTo, WaitBackoff, ThenListSame},

	// A streaming list's initial events ended.
	{when{op: OpStreamEnd, classes: allClasses, endings: ends(EndedOK)}, Accept, reason.Streamed, srcStreamEnd + "; the watch goes on from the bookmark's resourceVersion", WaitNone, ThenWatch},
	{when{op: OpStreamEnd, classes: allClasses, endings: ends(EndedStale)}, Relist, reason.StaleList, srcNeverBack, WaitBackoffOnly, ThenListNotOlder},
	{when{op: OpStreamEnd, classes: allClasses, endings: ends(EndedStoreFailed)}, Relist, reason.ListError, srcStreamFallsTo + "; the store refused the streamed list", WaitBackoffOnly, ThenListSame},
	{when{op: OpStreamEnd, classes: allClasses, endings: ends(EndedCut)}, Relist, reason.StreamFailed, srcStreamEnd + "; " + srcStreamFallsTo, WaitBackoffOnly, ThenListSame},
	{when{op: OpStreamEnd, classes: cls(Gone), endings: ends(EndedError)}, FallbackMostRecent, reason.ListGone, srcWatch410, WaitBackoffOnly, ThenStreamMostRecent},
	{when{op: OpStreamEnd, classes: except(Gone), endings: ends(EndedError)}, Relist, reason.StreamFailed, srcStreamFallsTo, WaitBackoff, ThenListSame},
	{when{op: OpStreamEnd, classes: allClasses, endings: ends(EndedIgnored)}, Relist, reason.StreamIgnored, srcStreamEnd + "; a server that ignores sendInitialEvents (one older than the field) sends plain ADDED events: it does not stream (recorded)", WaitNone, ThenListSame},
	{when{op: OpStreamEnd, classes: allClasses, endings: ends(EndedBadRV)}, Relist, reason.BadResourceVersion, srcBadRV, WaitBackoffOnly, ThenListSame},

	// A watch ended without an ERROR event.
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedClosed, EndedStalled), resumable: no}, FallbackMostRecent, reason.NoResumeVersion, srcNoResume, WaitBackoffOnly, ThenSyncMostRecent},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedClosed), resumable: yes, progressed: yes}, Accept, reason.WatchClosed, srcWatchResume, WaitNone, ThenWatchAgain},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedClosed), resumable: yes, progressed: no, short: no}, Backoff, reason.WatchClosed, srcWatchResume + "; a watch that adopted nothing is a failure for the backoff", WaitBackoffOnly, ThenWatchAgain},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedClosed), resumable: yes, progressed: no, short: yes, attemptsLeft: yes}, Backoff, reason.ShortWatch, srcShortWatch, WaitBackoffOnly, ThenWatchAgain},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedClosed), resumable: yes, progressed: no, short: yes, attemptsLeft: no}, Relist, reason.ShortWatch, srcShortWatch + "; relist, as client-go does, after a backoff, as after a 410", WaitBackoffOnly, ThenSyncNotOlder},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedStalled), resumable: yes}, Accept, reason.Stalled, srcStall, WaitNone, ThenWatchAgain},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedStaleEvent)}, Relist, reason.StaleEvent, srcNeverBack + "; an event older than the store is never applied", WaitRegress, ThenSyncNotOlder},
	{when{op: OpWatchEnd, classes: allClasses, endings: ends(EndedBadRV)}, Relist, reason.BadResourceVersion, srcBadRV, WaitRegress, ThenSyncNotOlder},

	// A drop-in ListerWatcher's watch attempts (client-go decides what to
	// request; the drop-in decides when its next watch may be sent, and
	// ends a stalled one).
	{when{op: OpDropInAttempt, classes: allClasses, progressed: yes}, Accept, reason.OK, srcDropInProgress, WaitNone, ThenWatchAgain},
	{when{op: OpDropInAttempt, classes: allClasses, progressed: no}, Backoff, reason.NoProgressBackoff, srcDropInNoProgress, WaitNoProgress, ThenWatchAgain},
	{when{op: OpDropInStall, classes: allClasses}, Accept, reason.WatchStalled, srcStall + "; the drop-in ends it, and client-go watches again from its resourceVersion", WaitNone, ThenWatchAgain},
}

// except is every class but these.
func except(not ...Class) []Class {
	var out []Class
	for _, c := range Classes() {
		if !slices.Contains(not, c) {
			out = append(out, c)
		}
	}
	return out
}
