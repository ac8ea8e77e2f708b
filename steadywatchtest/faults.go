package steadywatchtest

// Faults are switchable misbehaviours. The zero value is a well-behaved
// apiserver (1.34 or newer with the watch cache on). Each field reproduces
// one publicly reported failure of a server, proxy or aggregated API; set
// it with Options.Faults or Server.SetFaults, e.g.
//
//	srv.SetFaults(steadywatchtest.Faults{DropBookmarks: true})
type Faults struct {
	// IgnoreResourceVersionMatch makes the server behave like v1.18, the last
	// minor without resourceVersionMatch: the parameter is dropped before the
	// request is read, so an Exact list without a limit is served at the
	// newest resourceVersion, a NotOlderThan list with a limit is served as
	// legacy Exact (410 once compacted), and resourceVersionMatch without
	// resourceVersion is accepted. KEP-2523, section "Backward
	// Compatibility", obliges clients to tolerate exactly this.
	IgnoreResourceVersionMatch bool

	// NameListsFromNewest answers a list whose field selector names one
	// object (metadata.name=N) from that object's newest revision, ignoring
	// resourceVersion and limit, as v1.18 does (k8s.io/apiserver v0.18's
	// registry Store.List turns it into a GetToList; observed on a real
	// v1.18.19): such a list is never Exact there.
	NameListsFromNewest bool

	// IgnoreSendInitialEvents drops sendInitialEvents from watch requests:
	// a streaming list becomes a plain watch (ADDED events of the current
	// state for resourceVersion "" or "0") and never ends with the
	// k8s.io/initial-events-end bookmark, so a client waiting for it hangs.
	// With IgnoreResourceVersionMatch too this is v1.18; alone it is
	// 1.19–1.26, which then answer resourceVersionMatch on a watch with 422
	// ("resourceVersionMatch is forbidden for watch unless sendInitialEvents
	// is provided").
	IgnoreSendInitialEvents bool

	// RefuseStreamingList answers every watch with sendInitialEvents with
	// 422 "sendInitialEvents is forbidden for watch unless the WatchList
	// feature gate is enabled", as a 1.27+ server with the WatchList gate
	// off (1.33 by default) does: kubernetes/kubernetes#135583.
	RefuseStreamingList bool

	// DropBookmarks removes every BOOKMARK event from watch streams, the
	// k8s.io/initial-events-end one included, as a filtering proxy did:
	// gravitational/teleport#64188 (client-go v0.35+ informers never sync).
	DropBookmarks bool

	// NoInitialEventsAnnotation sends the bookmark that ends a streaming
	// list without the k8s.io/initial-events-end annotation:
	// antrea-io/antrea#8123 (watch-list informers hang).
	NoInitialEventsAnnotation bool

	// CloseBeforeEndBookmark ends a streaming list's watch after its
	// initial ADDED events, before the end bookmark, as a connection cut by
	// a proxy or a short request timeout does. No public report is cited:
	// the behaviour is the server side of every "hasn't received required
	// bookmark event" report where the stream ends early.
	CloseBeforeEndBookmark bool

	// CloseAfterEndBookmark ends a streaming list's watch right after the
	// end bookmark: kubernetes/kubernetes#134837 ("APIServer ends watches
	// way too early, defeating the purpose of sendInitialEvents").
	CloseAfterEndBookmark bool

	// GoneOnEveryWatch answers every watch with a 410 Expired ERROR event
	// inside the stream, then closes it (the watch cache's form of 410).
	// Clients must then relist; Kubernetes API Concepts, "410 Gone responses".
	GoneOnEveryWatch bool

	// EmptyWatches answers every watch with an empty stream that closes at
	// once (HTTP 200, no events), as the Events API did for a stale
	// resourceVersion instead of a 410: kubernetes/kubernetes#104171 (a
	// client that retries at once busy-loops).
	EmptyWatches bool

	// Lagging > 0 puts the server behind a watch cache that is this many
	// revisions behind the store, like one member of an HA control plane:
	// kubernetes/kubernetes#97294. Any lists ("0") and watches from "0" are
	// served at the lagging revision (watches then catch up); NotOlderThan
	// and Exact lists newer than it are answered 504 "Too large resource
	// version". MostRecent lists are consistent reads and stay current.
	Lagging int64

	// RepeatContinueToken answers every continue request with the same
	// token it was given (and the same page), a broken pagination that makes
	// a naive client loop forever, as in apache/iceberg-go#1484.
	RepeatContinueToken bool

	// RetryAfter > 0 answers lists and watches with 429 Too Many Requests
	// and this Retry-After in seconds (API Priority and Fairness rejects so).
	// RetryAfterRequests bounds how many requests are rejected before the
	// server serves again; 0 rejects every request.
	RetryAfter         int
	RetryAfterRequests int

	// GarbageBookmarkRV gives every BOOKMARK the resourceVersion
	// "not-a-resource-version", which a client must not store as its
	// resume point. No public report is cited: it probes robustness.
	GarbageBookmarkRV bool

	// StaleEvent re-delivers, after each MODIFIED event of a watch, the
	// object's previous state (an older resourceVersion), so the watcher
	// goes back in time: the watch cache bug fixed in kubernetes/kubernetes#73845.
	StaleEvent bool

	// GoneOnLists answers every list that names a resourceVersion (anything
	// but "" and "0"), and every continue request, with 410 Expired, as an
	// apiserver reading from etcd does once that resourceVersion is compacted
	// ("too old resource version"; Kubernetes API Concepts, "410 Gone
	// responses"). A client recovers only with a list without a
	// resourceVersion ("") or at "0".
	GoneOnLists bool

	// ReplayWatchEvents > 0 makes a watch from a resourceVersion first
	// re-deliver up to this many changes at or before that resourceVersion
	// (those still in the history), then continue as usual: a lagging HA
	// member or a watch cache re-delivering history the client already has
	// (kubernetes/kubernetes#73845). Each re-delivered event carries its own,
	// older resourceVersion; a client that applies them goes back in time,
	// and a deleted object can reappear.
	ReplayWatchEvents int

	// DuplicateEvents delivers every watch event of a change twice in a row
	// (the initial events of a streaming list or of a watch from "" or "0"
	// once). No public report is cited: it probes that applying an event is
	// idempotent.
	DuplicateEvents bool

	// CutWatchesAfter > 0 ends every watch cleanly (the stream closes, no
	// error) once it delivered this many events, bookmarks and initial
	// events included, as a proxy or load balancer that cuts long-lived
	// streams does. A streaming list with more initial events than this
	// ends before its k8s.io/initial-events-end bookmark.
	CutWatchesAfter int
}

// V118 returns the faults of a v1.18 apiserver, the last minor before
// KEP-2523's parameter: it ignores resourceVersionMatch and
// sendInitialEvents, and serves single-name lists from the newest revision.
func V118() Faults {
	return Faults{IgnoreResourceVersionMatch: true, IgnoreSendInitialEvents: true, NameListsFromNewest: true}
}
