// Package reason holds every reason code the SDK reports, each defined once
// with its meaning: the "reason" (or "cause") label of the metrics, the
// "reason" key of the log line of every fallback, the Reason of a
// fallback.Event, a lister *Error and a canonical *RejectedError. Public
// packages hand the codes to users as fallback.ReasonCode (fallback.Reasons
// lists them); nothing builds a reason code from a string at run time.
//
// The doc comment of each constant is its meaning: docs/reasons.md and
// docs/troubleshooting.md are generated from them, and a unit test checks
// both pages, the list All returns and that no value is defined twice.
package reason

// Code is a reason code. Its values are the constants of this package.
type Code string

// Reasons of a list call: a row of the decision table (docs/rules.md has
// the rows; one or more rows each) or a condition of the call itself. Each
// comment says what happened and what, if anything, a user can do.
const (
	// OK: the server answered as asked and the page or list was accepted.
	OK Code = "ok"
	// ContextDone: the caller's context ended (cancelled or past its
	// deadline); nothing is retried after it. For reflector.New: Run's
	// context ended and the reflector stopped.
	ContextDone Code = "context-done"
	// Invalid: the server rejected the request as invalid (400 or 422):
	// a bad selector, or a parameter the server does not accept. Never
	// retried; the error names what the server objected to. Fix the request.
	Invalid Code = "invalid-not-retried"
	// NotRetriable: an error that is not about resourceVersions
	// (Forbidden, NotFound, ...), returned as it is. Check RBAC and the
	// resource's name and group/version.
	NotRetriable Code = "not-retriable"
	// ThrottledBackoff: 429 Too Many Requests; waited (the server's
	// Retry-After, capped by Policy.MaxRetryAfter, or the backoff) and
	// retried.
	ThrottledBackoff Code = "throttled-backoff"
	// ServerErrorBackoff: a 5xx answer; waited and retried.
	ServerErrorBackoff Code = "server-error-backoff"
	// TransportBackoff: connection refused or reset, EOF or a timeout;
	// waited and retried.
	TransportBackoff Code = "transport-backoff"
	// NoAnswerBackoff: the server (or a proxy in front of it)
	// accepted a request and then sent nothing for Policy.ResponseTimeout:
	// no response headers, or a list body that stopped delivering bytes.
	// The request was ended with a *NoAnswerError, waited (Policy.Backoff)
	// and retried. A real apiserver answers a list within its
	// --request-timeout (60s by default); if a proxy holds requests, check
	// it, or raise ResponseTimeout if the server is known to be slower.
	NoAnswerBackoff Code = "no-answer-backoff"
	// RetriesExhausted: the retry budget for transient errors
	// (Policy.Backoff) ran out and the last error is returned: the server or
	// the network stayed unavailable for that long.
	RetriesExhausted Code = "retries-exhausted"
	// Rule1RetryNewerRV: KEP-2523's first backward-compatibility rule.
	// A NotOlderThan list with a limit was answered 410 by a server that
	// ignores resourceVersionMatch (before v1.19: it served the list as a
	// legacy Exact); asked again at a newer resourceVersion.
	Rule1RetryNewerRV Code = "rule1-gone-retry-newer-rv"
	// Rule1FallbackMostRecent: rule 1's retries were used up; listed
	// MostRecent (resourceVersion ""), which is never older than asked.
	Rule1FallbackMostRecent Code = "rule1-gone-fallback-most-recent"
	// Rule1Exhausted: rule 1's retries were used up and the caller did
	// not allow the MostRecent fallback; the 410 is returned.
	Rule1Exhausted Code = "rule1-gone-exhausted"
	// ExactGone: an Exact list's resourceVersion was compacted away
	// (410). No other state is served in its place: the error matches
	// ErrExactUnavailable. List at a newer resourceVersion, or MostRecent.
	ExactGone Code = "exact-gone"
	// GoneUnexpected: a MostRecent or Any list was answered 410, which
	// the API never does for them: a proxy or a broken server in between.
	GoneUnexpected Code = "gone-unexpected"
	// ContinueExpiredExact: a continue token of an Exact list expired
	// (410); the snapshot cannot be finished, so the list fails with
	// ErrExactUnavailable rather than stitching two snapshots.
	ContinueExpiredExact Code = "continue-expired-exact-unavailable"
	// ContinueExpiredRestart: a continue token expired (410) in the
	// middle of a paginated list; the list restarted from its first page at
	// a resourceVersion not older than the pages already handed over
	// (ListPages callers get OnRestart).
	ContinueExpiredRestart Code = "continue-expired-restart-newer-rv"
	// ContinueExpiredUnpaginated: a continue token expired and, as
	// Policy.ContinueExpired asks, the list restarted without a limit (one
	// response, the whole collection).
	ContinueExpiredUnpaginated Code = "continue-expired-restart-unpaginated"
	// ContinueExpiredFail: a continue token expired and
	// Policy.ContinueExpired says to fail; the error matches
	// ErrContinueExpired.
	ContinueExpiredFail Code = "continue-expired-fail"
	// ContinueExpiredExhausted: continue tokens kept expiring until the
	// restarts allowed were used up: pages take longer than the server keeps
	// a token (etcd compaction, five minutes by default). Use a larger page
	// size or a faster consumer.
	ContinueExpiredExhausted Code = "continue-expired-exhausted"
	// ContinueRepeated: the server (or a proxy) handed out a continue
	// token it had already handed out in this list: its pagination loops.
	// The list ends at once with ErrBrokenPagination instead of requesting
	// forever.
	ContinueRepeated Code = "continue-token-repeated"
	// Rule2RetryWithLimit: KEP-2523's second backward-compatibility
	// rule. An Exact list without a limit was served at another (newer)
	// resourceVersion by a server that ignores resourceVersionMatch; asked
	// again with a limit, which such a server serves exactly.
	Rule2RetryWithLimit Code = "rule2-exact-mismatch-retry-with-limit"
	// Rule2MismatchWithLimit: an Exact list with a limit was still
	// served at another resourceVersion; it fails with ErrExactUnavailable
	// rather than returning another state as the answer.
	Rule2MismatchWithLimit Code = "rule2-exact-mismatch-with-limit"
	// UnexpectedObservation: a response the decision table does not
	// expect for this semantic; the list fails with the observation in the
	// error. Please report it with the server's version.
	UnexpectedObservation Code = "unexpected-observation"
	// ServedOlderRetry: a list came back older than the
	// resourceVersion asked for (a lagging watch cache or HA member); waited
	// and asked again.
	ServedOlderRetry Code = "served-older-retry"
	// ServedOlderExhausted: lists kept coming back older than asked;
	// the error matches ErrServedOlder. A server or member lags far behind
	// (kubernetes/kubernetes#97294).
	ServedOlderExhausted Code = "served-older-exhausted"
	// RVNewerThanServer: the resourceVersion asked for is newer than
	// anything the server has (a resourceVersion from another cluster, or
	// made up); the error says so. Not a server fault.
	RVNewerThanServer Code = "requested-rv-newer-than-server"
	// TooLargeWait: "too large resource version": the server (its
	// watch cache) has not caught up with the resourceVersion yet; waited
	// Retry-After (capped) and retried.
	TooLargeWait Code = "too-large-rv-wait-retry-after"
	// TooLargeExhausted: the server stayed behind the resourceVersion
	// for the whole budget; the error matches ErrTooLargeResourceVersion.
	TooLargeExhausted Code = "too-large-rv-exhausted"
	// TooLargeExactUnavailable: an Exact list at a resourceVersion the
	// server never caught up with; fails with ErrExactUnavailable.
	TooLargeExactUnavailable Code = "too-large-rv-exact-unavailable"
	// TooLargeFallbackMostRecent: a NotOlderThan list the server stayed
	// behind on was listed MostRecent instead (a consistent read is never
	// older than asked), as Policy.TooLargeAfterBudget allows.
	TooLargeFallbackMostRecent Code = "too-large-rv-fallback-most-recent"
	// TooLargeCheckRV: the first "too large resource version" of a
	// list with a resourceVersion: a consistent limit=1 read says whether
	// that version exists at all before any wait; a version newer than the
	// server's current one fails at once (requested-rv-newer-than-server).
	TooLargeCheckRV Code = "too-large-rv-check-exists"
	// TooLargeCacheStuck: a NotOlderThan list at a resourceVersion that
	// exists was answered "too large" by a server whose watch cache advances
	// only on writes of the listed resource (no watch progress notifications
	// before KEP-1904: compat's watchCacheProgress=no, or two answers that
	// reported the same current resourceVersion): waiting cannot help, so it
	// was listed MostRecent at once (a consistent read is never older than
	// asked). Writes to other resources moved the resourceVersion on; nothing
	// to do.
	TooLargeCacheStuck Code = "too-large-rv-cache-stuck-most-recent"

	// Conditions of the call itself rather than of one response.

	// MaxRequests: Options.MaxRequests requests delivered no page.
	MaxRequests Code = "max-requests"
	// RestartNotAllowed: a restart would void pages already handed over
	// and the caller did not allow it (no OnRestart), or the list began at the
	// caller's own continue token, whose first page is unknown.
	RestartNotAllowed Code = "restart-not-allowed"
	// NewerRVProbeFailed: the limit=1 list that finds a newer
	// resourceVersion (or checks that a requested one exists) failed after
	// its retries.
	NewerRVProbeFailed Code = "newer-rv-probe-failed"
	// NewerRVProbeRetry: that limit=1 list failed transiently and is
	// retried after a backoff.
	NewerRVProbeRetry Code = "newer-rv-probe-retry"
	// NotAList: a 200 whose body is not a list.
	NotAList Code = "not-a-list"
	// GetExactScan: GetExact scans the collection at the exact
	// resourceVersion because the server answered the single-name list at
	// another one (servers before v1.19).
	GetExactScan Code = "get-exact-name-list-not-exact-scan-collection"
)

// Reasons of the ListerWatcher under client-go's own reflector (the drop-in
// informer, package lister) and of Options.Transform.
const (
	// ClientGoRelist: client-go's reflector listed again (after a 410,
	// a watch error, or a failed streaming list).
	ClientGoRelist Code = "client-go-relist"
	// ClientGoRewatch: client-go's reflector opened another watch.
	ClientGoRewatch Code = "client-go-rewatch"
	// WatchStalled: a watch delivered nothing for StallTimeout (a proxy
	// or balancer holding a dead connection) and was ended; client-go
	// watches again from its resourceVersion, without a relist.
	WatchStalled Code = "watch-stalled"
	// StreamingListAbandoned: a streaming list ended without its
	// initial-events-end bookmark (guarded) and client-go lists instead.
	StreamingListAbandoned Code = "streaming-list-abandoned"
	// UnservedRVMostRecent: client-go relisted at a resourceVersion
	// whose streaming list had just failed (too large, 5xx, no response);
	// a MostRecent list was sent instead.
	UnservedRVMostRecent Code = "unserved-rv-most-recent"
	// StaleListReasked: a list came back older than what this
	// ListerWatcher already delivered (a lagging HA member answering
	// resourceVersion "0" or ""); it was not returned as current but asked
	// again NotOlderThan what was delivered, so the informer's cache never
	// goes back in time.
	StaleListReasked Code = "stale-list-reasked"
	// StaleEvent: a watch event's resourceVersion was older than the one
	// already delivered (or applied) for the same object, than the object's
	// deletion, or than the watch's starting resourceVersion (a watch cache
	// re-delivering history, kubernetes/kubernetes#73845, or a proxy mixing
	// streams, linkerd/linkerd#1680). It was not delivered: under client-go's
	// reflector the watch ended with 410 Expired and client-go relists
	// NotOlderThan what it holds; reflector.New counts it and re-syncs its
	// store, after a backoff delay, with a list not older than it. Only where
	// resourceVersions compare as numbers.
	StaleEvent Code = "event-older-than-store"
	// BadResourceVersion: a bookmark or event carried a resourceVersion
	// that does not parse on a server whose versions do. It is never adopted
	// as the watch position (every watch from it would fail with 400): a
	// bookmark is not forwarded; an event ends the watch with 410 Expired
	// before it is delivered or applied, and the store is refilled by a
	// list. For the bookmark that ends a streaming list, the streaming list
	// was abandoned instead and a list sent.
	BadResourceVersion Code = "unparsable-resource-version"
	// NoProgressBackoff: a watch (a streaming list or a plain watch)
	// was delayed because the previous ones ended without progress — nothing
	// newer than where they started, such as a server answering every watch
	// with 410 Expired, which client-go's streaming list retries at once.
	// The delay grows from 800ms to 30s, jittered, and resets on progress.
	NoProgressBackoff Code = "no-progress-backoff"
	// DecodingScopeMismatch: the decoding client given to WrapDecoding
	// (or built from a Decoding) does not list what the caller's
	// ListerWatcher lists: another namespace, or a selector set only inside
	// the caller's functions — or the check itself failed on three lists.
	// Lists go through the caller's ListerWatcher from then on (read whole,
	// then decoded); set Decoding.Namespace and lister.Options' selectors to
	// what the ListerWatcher uses.
	DecodingScopeMismatch Code = "decoding-scope-mismatch"
	// NoDecodingClient: no item-by-item decoding client could be built
	// for an informer's example object from the Decoding it was given (a
	// custom resource's Go type, an object without apiVersion and kind, no
	// Mapper); its lists go through the caller's ListerWatcher.
	NoDecodingClient Code = "no-decoding-client"
	// TransformFailed: Options.Transform failed on an object (it returned
	// an error, nil, another type, or changed the object's name, namespace,
	// UID, resourceVersion, apiVersion or kind). Nothing untransformed is kept in its place: a list
	// fails with the *TransformError (client-go's reflector, or reflector.New,
	// lists again after a backoff), a watch ends with an error event, so the
	// informer relists. Counted on every adoption path that has a Transform
	// (reflector.New too), and logged with the object and the error. Fix the
	// transform: while it keeps failing on an object, the informer's cache
	// does not move past that object's list or event.
	TransformFailed Code = "transform-failed"
)

// Reasons of reflector.New's state machine: why it moved, relisted or
// restarted a watch.
const (
	// Start: Run was called.
	Start Code = "start"
	// Listed: a list filled the store; a watch follows from its
	// resourceVersion.
	Listed Code = "listed"
	// Streamed: a streaming list (sendInitialEvents) ended with its
	// initial-events-end bookmark and filled the store.
	Streamed Code = "streamed"
	// WatchOpened: a watch was opened from the store's resourceVersion.
	WatchOpened Code = "watch-opened"
	// WatchClosed: the server ended a watch after events (normal: the
	// apiserver ends watches after a timeout); watching again from the last
	// resourceVersion, without a relist.
	WatchClosed Code = "watch-closed"
	// ShortWatch: watches closed at once without any event, again and
	// again (kubernetes/kubernetes#104171: some servers and proxies do this
	// instead of a 410); backing off, then relisting after
	// Options.MaxShortWatches of them.
	ShortWatch Code = "short-watch"
	// Stalled: no event or bookmark for Options.Lister.StallTimeout (a proxy
	// holding a dead connection); the watch was restarted from the last
	// resourceVersion.
	Stalled Code = "stalled"
	// WatchGone: the watch's resourceVersion is no longer available
	// (410 Gone, after etcd compaction or a restart of the watch cache);
	// relisting, cheapest safe list first.
	WatchGone Code = "watch-gone"
	// ListGone: a list or streaming list was answered 410; listing
	// MostRecent instead.
	ListGone Code = "list-gone"
	// TooLargeRV: "too large resource version": the server has not
	// caught up with the resourceVersion (a lagging HA member); waiting its
	// Retry-After (capped by the lister Policy's MaxRetryAfter), then
	// MostRecent after Options.MaxTooLargeWatchRetries.
	TooLargeRV Code = "too-large-rv"
	// StaleList: a relist came back older than what the store already
	// holds; never applied (the store never goes back in time), asked again
	// after a backoff, then MostRecent after Options.MaxStaleListRetries.
	StaleList Code = "stale-list"
	// NoResumeVersion: a watch ended while the store's resourceVersion
	// was "" or "0" (a list answered there). A watch from "" or "0" is "get
	// state and start at most recent" (Kubernetes API Concepts, "Resource
	// versions"): its synthetic ADDED events never delete an object the
	// store holds and the server no longer has, so it resumes nothing; the
	// store is refilled with a list after a backoff delay instead.
	NoResumeVersion Code = "no-resume-version"
	// Retry: a watch failed with a transient error (429, 5xx,
	// connection); retrying the watch after a backoff, without a relist.
	Retry Code = "retry"
	// WatchError: a watch failed in a way a retry will not fix;
	// relisting after a backoff.
	WatchError Code = "watch-error"
	// ListError: a list failed (its lister error says which rule) or
	// its result could not be stored; retrying after a backoff.
	ListError Code = "list-error"
	// StreamIgnored: the server answered a streaming list as a plain
	// watch (it ignores sendInitialEvents: servers before v1.27, some
	// aggregated APIs); listing instead. The belief is kept per API
	// group/version and expires.
	StreamIgnored Code = "streaming-ignored"
	// StreamRejected: the server refused sendInitialEvents (422 with
	// the WatchList feature off, kubernetes/kubernetes#135583), or the
	// drop-in refused a streaming list without a request (the server is
	// known to refuse it, or lister.Options.DisableStreamingList); listing
	// instead.
	StreamRejected Code = "streaming-rejected"
	// StreamFailed: a streaming list failed or closed before its
	// initial-events-end bookmark (kubernetes/kubernetes#140890, proxies
	// that filter bookmarks: gravitational/teleport#64188); listing instead
	// after a backoff.
	StreamFailed Code = "streaming-failed"
	// BackoffDone: a backoff wait ended; the next step runs.
	BackoffDone Code = "backoff-done"
	// Initial: the first list or streaming list after Run.
	Initial Code = "initial"
	// InvalidOptions: Run was called on a reflector whose Options
	// Validate rejects (an option it cannot honour, named in the log line);
	// it stopped without sending a request. Fix the option.
	InvalidOptions Code = "invalid-options"
)

// Reasons of a sharded ListerWatcher (package shard).
const (
	// ShardClientFilter: a list came back without shardInfo (the server
	// ignored the shardSelector); the objects outside the range were dropped
	// on the client.
	ShardClientFilter Code = "shard-client-filter"
	// ShardEventOutsideRange: a watch delivered an object outside the
	// range (the server does not filter watches); it was dropped.
	ShardEventOutsideRange Code = "shard-event-outside-range"
	// ShardInfoMismatch: a list's shardInfo named another selector; the
	// list was repeated without the parameter and filtered on the client.
	ShardInfoMismatch Code = "shard-info-mismatch"
	// ShardRangeChanged: the range changed (members joined or left); the
	// watch ended with 410 Expired so that client-go lists the new range.
	ShardRangeChanged Code = "shard-range-changed"
)

// Reasons a canonical ListerWatcher rejected an object (package canonical):
// the Reason of a *RejectedError, the rejected-object annotation of a
// tombstone, and the last part of the "canonical:<action>:<reason>" label.
const (
	// NewerShape: a recogniser of a shape after the canonical one
	// claimed the object; the Gateway API versioning guide says controllers
	// MUST ignore CRs in shapes created after they were written.
	NewerShape Code = "newer-shape"
	// Unrecognized: no recogniser claimed the object, so its shape is
	// unknown (typically a field from a future shape that the chain has no
	// name for).
	Unrecognized Code = "unrecognized"
	// ConversionFailed: an Upgrade returned an error or panicked, or its
	// result was not claimed by the canonical shape's recogniser.
	ConversionFailed Code = "conversion-failed"
	// RecognizerPanicked: a recogniser panicked on the object.
	RecognizerPanicked Code = "recognizer-panicked"
	// NotUnstructured: the wrapped ListerWatcher returned an object
	// that is not *unstructured.Unstructured.
	NotUnstructured Code = "not-unstructured"
)

// Capability beliefs (package compat): a belief about the server changed,
// "compat:<capability>=<support>" under the name "compat" or
// "compat/<group/version>". Beliefs are kept per host and per API
// group/version, and those learned from behaviour expire.
const (
	ResourceVersionMatchUnknown    Code = "compat:resourceVersionMatch=unknown"
	ResourceVersionMatchYes        Code = "compat:resourceVersionMatch=yes"
	ResourceVersionMatchNo         Code = "compat:resourceVersionMatch=no"
	WatchBookmarksUnknown          Code = "compat:watchBookmarks=unknown"
	WatchBookmarksYes              Code = "compat:watchBookmarks=yes"
	WatchBookmarksNo               Code = "compat:watchBookmarks=no"
	StreamingListUnknown           Code = "compat:streamingList=unknown"
	StreamingListYes               Code = "compat:streamingList=yes"
	StreamingListNo                Code = "compat:streamingList=no"
	ConsistentListFromCacheUnknown Code = "compat:consistentListFromCache=unknown"
	ConsistentListFromCacheYes     Code = "compat:consistentListFromCache=yes"
	ConsistentListFromCacheNo      Code = "compat:consistentListFromCache=no"
	TooLargeRVMessageUnknown       Code = "compat:tooLargeRVByMessage=unknown"
	TooLargeRVMessageYes           Code = "compat:tooLargeRVByMessage=yes"
	TooLargeRVMessageNo            Code = "compat:tooLargeRVByMessage=no"
	WatchCacheProgressUnknown      Code = "compat:watchCacheProgress=unknown"
	WatchCacheProgressYes          Code = "compat:watchCacheProgress=yes"
	WatchCacheProgressNo           Code = "compat:watchCacheProgress=no"
	// UnlistedCapability stands for every change of a Capability that is
	// not one of the declared constants, whatever its support.
	UnlistedCapability Code = "compat:unlisted-capability"
)

// Reasons a read of package readyourwrites went to the server instead of
// the cache: "reason" of steadywatch_read_fallbacks_total.
const (
	// ReadBound: the cache did not catch up with the client's own write
	// within readyourwrites.Options.Bound; the read went to the server.
	ReadBound Code = "bound"
	// ReadIncomparable: the server's resourceVersions are not comparable
	// (KEP-5504), so the cache's freshness cannot be known; the read went
	// to the server.
	ReadIncomparable Code = "incomparable"
)
