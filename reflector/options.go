package reflector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// Defaults of Options. They are the values used when a field is zero.
const (
	DefaultPageSize = lister.DefaultPageSize
	// DefaultMaxPageSizeFactor: Options.Lister.MaxPageSize defaults to this
	// many times PageSize on a reflector.
	DefaultMaxPageSizeFactor       int64 = 8
	DefaultWatchTimeoutMin               = 5 * time.Minute
	DefaultWatchTimeoutMax               = 10 * time.Minute
	DefaultStallTimeout                  = lister.DefaultStallTimeout
	DefaultInitialEventsTimeout          = lister.DefaultInitialEventsTimeout
	DefaultShortWatch                    = time.Second
	DefaultMaxTooLargeWatchRetries       = 3
	DefaultMaxStaleListRetries           = 2
	DefaultMaxShortWatches               = 2
)

// DefaultBackoff returns Options.Backoff's defaults, client-go's reflector
// backoff: 800ms doubling to 30s, +/-50% jitter, reset after 2 minutes
// without a failure.
func DefaultBackoff() fallback.BackoffPolicy {
	return fallback.BackoffPolicy{Initial: 800 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2, Jitter: 0.5, ResetAfter: 2 * time.Minute}
}

// ListFunc performs one complete list (every page) with an explicit
// KEP-2523 semantic. The returned list's ListMeta.resourceVersion must be the
// resourceVersion the list was served at. A *lister.Lister's List method,
// with its *Record dropped, is a ListFunc.
type ListFunc func(ctx context.Context, q fallback.Query) (runtime.Object, error)

// Options configures a Reflector. The zero value is a safe default for
// every field; each field says its default and the trade-off of changing it.
//
// Everything the reflector shares with the lister (the server's
// capabilities, names, selectors, page sizes, metrics, streaming-list and
// stall settings, the ListGate) is set in Lister and only there; the
// fields below are the reflector's own.
type Options struct {
	// Lister holds the settings the reflector shares with package lister,
	// in one place: the reflector reads them from here and builds its
	// default List from them. They are resolved once, in New, with
	// lister.Options.Resolve and the expected type as example object
	// (Resource and Name derived from it, Server scoped to its
	// group/version); the godoc of each lister.Options field says what it
	// does on reflector.New. Three defaults differ from a plain Lister's:
	// MaxPageSize is DefaultMaxPageSizeFactor x PageSize, a negative
	// PageSize makes the reflector's own lists unpaginated, and
	// Policy.MaxNewerRVRetries is none (a 410 on the reflector's
	// unpaginated NotOlderThan list falls back to one MostRecent list at
	// once; set it to retry at a newer resourceVersion first).
	// LastObservedRV is the reflector's own (its LastSyncResourceVersion:
	// rule 1 and list restarts start from what the store reflects), so one
	// set here is rejected (Validate). With List set, the fields that only
	// configure the default List (Policy other than MaxRetryAfter and
	// ResponseTimeout, MaxPageSize, MaxPageBytes, MaxRequests), the selectors and Transform
	// (which List would not apply to its lists while the watches apply
	// them) are rejected too.
	Lister lister.Options

	// List performs lists. Default nil: a steadywatch lister over the Client
	// built from Lister, which applies the KEP-2523 decision table and
	// verifies every served resourceVersion. A List of the caller's own is
	// given the query only: see Lister for the fields it cannot honour.
	List ListFunc

	// MaxTooLargeWatchRetries is how many times a watch answered "too large
	// resource version" (an HA member whose cache is behind the store) is
	// retried from the same resourceVersion before the reflector relists
	// MostRecent. Default 3; negative: relist at once.
	MaxTooLargeWatchRetries int

	// MaxShortWatches is how many consecutive watches from one
	// resourceVersion may close at once without progress (no newer
	// resourceVersion adopted; each restarted
	// after a backoff) before the reflector relists NotOlderThan that
	// resourceVersion: a server whose history is gone but never answers 410
	// (kubernetes/kubernetes#104171). Default 2; negative: relist at the
	// first.
	MaxShortWatches int

	// MaxStaleListRetries is how many times a relist served older than the
	// store is retried as NotOlderThan(store) before a consistent MostRecent
	// list (never older than anything served) ends the loop. Default 2;
	// negative: MostRecent at once.
	MaxStaleListRetries int

	// PaginateLists lists MostRecent page by page (PageSize, growing to
	// MaxPageSize) from the first attempt. Default false: a MostRecent list
	// is served from the watch cache in one response (see planList: a
	// consistent list from the cache on 1.31+, else NotOlderThan the
	// resourceVersion of a limit=1 read), which costs the apiserver least.
	// Pages are Lister.PageSize objects, growing to Lister.MaxPageSize. The
	// trade-off: pages are decoded one by one, so this client's peak heap is
	// lower, but before v1.34 every page is read from etcd, which costs the
	// apiserver more (docs/benchmarks.md measures both). Retries of a failed
	// list are paginated either way. Into a store that lists fill object by
	// object (see New), a relist NotOlderThan the store is paginated too.
	// Without it, such a relist in one response is applied object by object
	// as it is decoded over the SDK's own clients (lister.FromClientset,
	// FromRESTClient, FromDynamicConfig, FromMetadataConfig), so the store's
	// old contents and the whole new list are not held at once either; over
	// other clients (lister.FromFuncs) the list is returned whole before it
	// is applied, and PaginateLists is what bounds it.
	PaginateLists bool

	// InitialListSemantic is the semantic of the first list: fallback.MostRecent
	// (the zero value, default) or fallback.Any.
	//
	// MostRecent is a consistent read: never older than anything the cluster
	// has shown anyone. Since Kubernetes 1.31 it is served from the watch cache
	// (ConsistentListFromCache), so it is cheap; on older servers it is a quorum
	// read from etcd, paginated. Any (resourceVersion "0", what client-go
	// uses) is cheapest everywhere, but in an HA control plane a lagging
	// apiserver may serve a state much older than one this process already
	// saw (a restarted controller "goes back in time"). Choose Any only if
	// your controller tolerates that. NotOlderThan and Exact are not valid
	// here (there is no resourceVersion to start from) and are treated as MostRecent.
	InitialListSemantic fallback.Semantic

	// WatchTimeoutMin and WatchTimeoutMax bound the randomized server-side
	// timeout of each watch (timeoutSeconds), spreading reconnects of many
	// clients over time. Defaults 5m and 10m (client-go's). Max < Min is
	// raised to Min.
	WatchTimeoutMin, WatchTimeoutMax time.Duration

	// ShortWatch is the duration under which a watch that closed without
	// progress (no newer resourceVersion adopted) counts as short-lived
	// (MaxShortWatches); every watch without progress is restarted only
	// after a backoff, so a server that closes watches at once is not
	// hammered. Default 1s.
	ShortWatch time.Duration

	// Backoff configures the jittered exponential backoff between failed
	// attempts, and between relists that follow each other without any watch
	// event in between (a server or proxy that answers every watch 410 is not
	// hammered). Zero fields take DefaultBackoff's values; MaxRetries and
	// MaxElapsedTime are ignored (a reflector retries until its context
	// ends). A server's Retry-After, capped by Lister.Policy.MaxRetryAfter,
	// replaces the computed delay when longer. Failures are consecutive unless
	// a watch delivered an event or bookmark in between.
	Backoff fallback.BackoffPolicy

	// ResyncPeriod, if positive, calls the store's Resync at that interval
	// (it only means something for queues such as DeltaFIFO). Default 0: never.
	ResyncPeriod time.Duration

	// ConsistencyCheckInterval, if positive, compares the store with an Exact
	// list at a bookmark's resourceVersion at most this often. A difference is
	// logged with the differing keys and counted (ConsistencyCheck "mismatch");
	// it never panics or changes the store. Default 0: off. Each check is a
	// full list, often from etcd: keep it rare (tens of minutes) in production.
	ConsistencyCheckInterval time.Duration

	// Clock is for tests. Default: the real clock.
	Clock clock.WithTicker
}

// withDefaults returns o with every zero reflector-only field set to its
// default (Lister is resolved by New, which knows the expected type).
// Applying it twice changes nothing.
func (o Options) withDefaults() Options {
	if o.InitialListSemantic != fallback.Any {
		o.InitialListSemantic = fallback.MostRecent
	}
	if o.WatchTimeoutMin <= 0 {
		o.WatchTimeoutMin = DefaultWatchTimeoutMin
	}
	if o.WatchTimeoutMax <= 0 {
		o.WatchTimeoutMax = DefaultWatchTimeoutMax
	}
	if o.WatchTimeoutMax < o.WatchTimeoutMin {
		o.WatchTimeoutMax = o.WatchTimeoutMin
	}
	if o.ShortWatch <= 0 {
		o.ShortWatch = DefaultShortWatch
	}
	o.Backoff = o.Backoff.WithDefaults(DefaultBackoff())
	o.MaxTooLargeWatchRetries = fallback.CountOrDefault(o.MaxTooLargeWatchRetries, DefaultMaxTooLargeWatchRetries)
	o.MaxStaleListRetries = fallback.CountOrDefault(o.MaxStaleListRetries, DefaultMaxStaleListRetries)
	o.MaxShortWatches = fallback.CountOrDefault(o.MaxShortWatches, DefaultMaxShortWatches)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// ErrInvalidOptions matches every *OptionsError (errors.Is).
var ErrInvalidOptions = errors.New("invalid reflector options")

// OptionsError is Validate's error: an option this reflector cannot honour,
// named by its path in Options (e.g. "Lister.LastObservedRV").
type OptionsError struct {
	// Field is the option's path in Options.
	Field string
	// Reason says why it cannot be honoured.
	Reason string
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("reflector.Options.%s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidOptions) true.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// Validate reports the first option that a reflector built with o could
// not honour, as an *OptionsError; nil if it honours every field set. New
// does not fail: a Reflector built from options Validate rejects logs the
// error when Run is called, records it in State (PhaseStopped, reason
// "invalid-options") and returns without sending a request, so it never
// syncs. Call Validate first to handle the error yourself.
func (o Options) Validate() error {
	lo := o.Lister
	if lo.LastObservedRV != nil {
		return &OptionsError{Field: "Lister.LastObservedRV", Reason: "the reflector owns it (its LastSyncResourceVersion); leave it nil"}
	}
	if o.Backoff.MaxRetries != 0 || o.Backoff.MaxElapsedTime != 0 {
		return &OptionsError{Field: "Backoff", Reason: "MaxRetries and MaxElapsedTime do not apply: a reflector retries until its context ends"}
	}
	if o.List == nil {
		return nil
	}
	const onlyDefault = "configures the default List only; with List set, configure your own list function instead"
	p := lo.Policy
	p.MaxRetryAfter, p.ResponseTimeout = 0, 0 // they bound the watches too
	switch {
	case lo.LabelSelector != "" || lo.FieldSelector != "":
		return &OptionsError{Field: "Lister.LabelSelector/FieldSelector", Reason: "List is given the query only and would not apply them, while the watches would; filter in your List's client and in the Client passed to New"}
	case p != (fallback.Policy{}):
		return &OptionsError{Field: "Lister.Policy", Reason: "apart from MaxRetryAfter and ResponseTimeout, it " + onlyDefault}
	case lo.MaxPageSize != 0:
		return &OptionsError{Field: "Lister.MaxPageSize", Reason: onlyDefault}
	case lo.MaxPageBytes != 0:
		return &OptionsError{Field: "Lister.MaxPageBytes", Reason: onlyDefault}
	case lo.MaxRequests != 0:
		return &OptionsError{Field: "Lister.MaxRequests", Reason: onlyDefault}
	case lo.Transform != nil:
		return &OptionsError{Field: "Lister.Transform", Reason: "List is given the query only: its objects would reach the store untransformed while the watches' are transformed; set Transform on the lister.Options of the Lister your List uses"}
	}
	return nil
}
