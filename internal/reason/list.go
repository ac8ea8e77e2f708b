package reason

// Source is a part of the SDK that reports reason codes, and so which
// metric labels carry them. A code may have several (Sources is a set).
type Source uint8

// The parts of the SDK that report reason codes.
const (
	// Lister: a list call (package lister): the Reason of a fallback.Event
	// and of a lister *Error; "reason" of steadywatch_fallbacks_total.
	Lister Source = 1 << iota
	// DropIn: the ListerWatcher under client-go's own reflector (package
	// lister's drop-in informer): "cause" of steadywatch_relists_total,
	// "reason" of steadywatch_watch_restarts_total and of
	// steadywatch_fallbacks_total.
	DropIn
	// Reflector: reflector.New's state machine: "reason" of
	// steadywatch_transitions_total, "cause" of steadywatch_relists_total,
	// "reason" of steadywatch_watch_restarts_total.
	Reflector
	// Compat: a capability belief changed (package compat): "reason" of
	// steadywatch_fallbacks_total under the name "compat" or
	// "compat/<group/version>".
	Compat
	// Shard: a sharded ListerWatcher (package shard): "reason" of
	// steadywatch_fallbacks_total.
	Shard
	// Canonical: a canonical ListerWatcher rejected an object (package
	// canonical): "canonical:<action>:<reason>" as the "reason" of
	// steadywatch_fallbacks_total.
	Canonical
	// ReadYourWrites: a read of package readyourwrites went to the server
	// instead of the cache: "reason" of steadywatch_read_fallbacks_total.
	ReadYourWrites
)

// Entry is one reason code and the parts of the SDK that report it.
type Entry struct {
	Code Code
	By   Source
}

// All returns every reason code, each once, in a stable order (a new slice
// each call): by the first part of the SDK that reports it, in the order of
// the Source constants.
func All() []Entry {
	return []Entry{
		{OK, Lister}, {ContextDone, Lister | Reflector}, {Invalid, Lister}, {NotRetriable, Lister},
		{ThrottledBackoff, Lister}, {ServerErrorBackoff, Lister}, {TransportBackoff, Lister},
		{NoAnswerBackoff, Lister}, {RetriesExhausted, Lister}, {Rule1RetryNewerRV, Lister},
		{Rule1FallbackMostRecent, Lister}, {Rule1Exhausted, Lister}, {ExactGone, Lister},
		{GoneUnexpected, Lister}, {ContinueExpiredExact, Lister}, {ContinueExpiredRestart, Lister},
		{ContinueExpiredUnpaginated, Lister}, {ContinueExpiredFail, Lister},
		{ContinueExpiredExhausted, Lister}, {ContinueRepeated, Lister}, {Rule2RetryWithLimit, Lister},
		{Rule2MismatchWithLimit, Lister}, {UnexpectedObservation, Lister}, {ServedOlderRetry, Lister},
		{ServedOlderExhausted, Lister}, {RVNewerThanServer, Lister}, {TooLargeWait, Lister},
		{TooLargeExhausted, Lister}, {TooLargeExactUnavailable, Lister},
		{TooLargeFallbackMostRecent, Lister}, {TooLargeCheckRV, Lister}, {TooLargeCacheStuck, Lister},
		{MaxRequests, Lister}, {RestartNotAllowed, Lister}, {NewerRVProbeFailed, Lister},
		{NewerRVProbeRetry, Lister}, {NotAList, Lister}, {GetExactScan, Lister},

		{ClientGoRelist, DropIn}, {ClientGoRewatch, DropIn}, {WatchStalled, DropIn},
		{StaleListReasked, DropIn}, {StaleEvent, DropIn | Reflector},
		{BadResourceVersion, DropIn | Reflector}, {StreamingListAbandoned, DropIn},
		{UnservedRVMostRecent, DropIn}, {NoProgressBackoff, DropIn}, {TransformFailed, DropIn},
		{DecodingScopeMismatch, DropIn}, {NoDecodingClient, DropIn},

		{Start, Reflector}, {Listed, Reflector}, {Streamed, Reflector}, {WatchOpened, Reflector},
		{WatchClosed, Reflector}, {ShortWatch, Reflector}, {Stalled, Reflector},
		{WatchGone, Reflector}, {ListGone, Reflector}, {TooLargeRV, Reflector},
		{StaleList, Reflector}, {NoResumeVersion, Reflector}, {Retry, Reflector},
		{WatchError, Reflector}, {ListError, Reflector}, {StreamIgnored, Reflector},
		{StreamRejected, DropIn | Reflector}, {StreamFailed, Reflector}, {BackoffDone, Reflector},
		{Initial, Reflector}, {InvalidOptions, Reflector},

		{ResourceVersionMatchUnknown, Compat}, {ResourceVersionMatchYes, Compat},
		{ResourceVersionMatchNo, Compat}, {WatchBookmarksUnknown, Compat},
		{WatchBookmarksYes, Compat}, {WatchBookmarksNo, Compat}, {StreamingListUnknown, Compat},
		{StreamingListYes, Compat}, {StreamingListNo, Compat},
		{ConsistentListFromCacheUnknown, Compat}, {ConsistentListFromCacheYes, Compat},
		{ConsistentListFromCacheNo, Compat}, {TooLargeRVMessageUnknown, Compat},
		{TooLargeRVMessageYes, Compat}, {TooLargeRVMessageNo, Compat},
		{WatchCacheProgressUnknown, Compat}, {WatchCacheProgressYes, Compat},
		{WatchCacheProgressNo, Compat}, {UnlistedCapability, Compat},

		{ShardClientFilter, Shard}, {ShardEventOutsideRange, Shard}, {ShardInfoMismatch, Shard},
		{ShardRangeChanged, Shard},

		{NewerShape, Canonical}, {Unrecognized, Canonical}, {ConversionFailed, Canonical},
		{RecognizerPanicked, Canonical}, {NotUnstructured, Canonical},

		{ReadBound, ReadYourWrites}, {ReadIncomparable, ReadYourWrites},
	}
}

// By returns the codes src reports, in All's order.
func By(src Source) []Code {
	var out []Code
	for _, e := range All() {
		if e.By&src != 0 {
			out = append(out, e.Code)
		}
	}
	return out
}
