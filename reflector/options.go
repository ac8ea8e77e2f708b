package reflector

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
)

// Defaults of Options. They are the values used when a field is zero.
const (
	DefaultPageSize int64 = 500
	// DefaultMaxPageSizeFactor: Options.MaxPageSize defaults to this many
	// times PageSize.
	DefaultMaxPageSizeFactor       int64 = 8
	DefaultWatchTimeoutMin               = 5 * time.Minute
	DefaultWatchTimeoutMax               = 10 * time.Minute
	DefaultStallTimeout                  = 3 * time.Minute
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
type Options struct {
	// Name identifies the reflector in logs and metrics. Default: Resource
	// as "v1/configmaps" when known, else the expected type's description
	// (e.g. "*v1.ConfigMap").
	Name string

	// Resource is the group/version/resource reflected. Default: derived
	// from the expected type (lister.ResourceOf). It scopes what is learned
	// about the server (streaming lists, resourceVersionMatch) to that API
	// group/version: a CRD or aggregated API that does not stream lists
	// leaves core resources streaming.
	Resource schema.GroupVersionResource

	// Server says what the apiserver supports (compat). Default nil: every
	// capability is Unknown, so the reflector never uses a streaming list and
	// sends resourceVersionMatch only where a legacy server would read the
	// request the same way. Give it a compat Detector's Server to use streaming
	// lists on servers that honour them.
	Server compat.Server

	// List performs lists. Default nil: a steadywatch lister over the Client
	// built from Lister (below), which applies the KEP-2523 decision table and
	// verifies every served resourceVersion.
	List ListFunc

	// Lister configures the default List. Precedence: a field set here wins;
	// its zero Server, PageSize, MaxPageSize, Metrics, Name, InitialEventsTimeout and ListGate take
	// this Options' values; LastObservedRV is always the reflector's
	// LastSyncResourceVersion (rule 1 and list restarts then start from what
	// the store already reflects). Its Policy.MaxRetryAfter also caps every
	// Retry-After the reflector honours between attempts.
	Lister lister.Options

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

	// ListGate, shared among the reflectors, informers and listers of a
	// process that read from one apiserver, bounds how many collection
	// reads they have in flight at once: every list request of more than
	// one object (each page), and each streaming list until its
	// initial-events-end bookmark; and identical list requests of the same
	// client are sent once (MostRecent ones when they queued together).
	// Reflectors that start together then cost the apiserver about the
	// work of one list instead of the sum of theirs, and with different
	// collections the later ones sync later (lister.ListGate). Default
	// nil: no bound, nothing shared. A List of the caller's own is not
	// gated; its streaming lists are.
	ListGate *lister.ListGate

	// PaginateLists lists MostRecent page by page (PageSize, growing to
	// MaxPageSize) from the first attempt. Default false: a MostRecent list
	// is served from the watch cache in one response (see planList: a
	// consistent list from the cache on 1.31+, else NotOlderThan the
	// resourceVersion of a limit=1 read), which costs the apiserver least.
	// The trade-off: pages are decoded one by one, so this client's peak
	// heap is lower, but before v1.34 every page is read from etcd, which
	// costs the apiserver more (docs/benchmarks.md, P1 and P5). Retries of
	// a failed list are paginated either way.
	PaginateLists bool

	// PageSize is the page size of MostRecent, Any and Exact lists. Default 500
	// (client-go's pager default). Negative: unpaginated (one response holds
	// everything: fewer round trips, unbounded memory on both sides).
	// NotOlderThan lists are never paginated: a limit would send them to etcd
	// (and legacy servers read NotOlderThan+limit as Exact).
	PageSize int64

	// MaxPageSize lets the pages of one paginated list grow: each
	// continuation page asks for twice the previous page's limit, up to
	// MaxPageSize objects (lister.Options.MaxPageSize). 10,000 objects then
	// take 5 requests (500, 1000, 2000, 4000, 2500) instead of 20, which
	// matters because client-go throttles every REST client on its own side
	// (rest.Config QPS 5 after a burst of 10 unless set): with fixed pages of
	// 500, such a list spent about 2 of its 2.05 seconds waiting for that
	// limiter. The first page stays PageSize and every page stays bounded
	// (the apiserver builds each response in memory), in objects and, by
	// Lister.MaxPageBytes (16 MiB by default), in bytes: large objects keep
	// PageSize. Default 8 x PageSize (4000); negative: every page asks for
	// PageSize.
	MaxPageSize int64

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

	// DisableStreamingList turns off streaming lists (sendInitialEvents) even
	// where Server says they are supported. Default false: stream where
	// supported. With the apiserver's watch cache a streaming list costs it
	// about what a list does; without it for the resource
	// (--watch-cache=false, or --watch-cache-sizes=<resource>#0) every
	// streaming list reads the whole collection from etcd into the
	// apiserver's memory at once (8 informers on 244 MiB: about 9 GiB more
	// apiserver heap than paginated lists, docs/benchmarks.md P5). Set it for
	// resources the watch cache does not hold (lister.Options has the same
	// for the drop-in informers).
	DisableStreamingList bool

	// InitialEventsTimeout bounds how long a streaming list may go without
	// any event before the k8s.io/initial-events-end bookmark arrives while
	// the number of initial events is unknown or none arrived yet (while a
	// known count is partly delivered, or not started on the initial
	// MostRecent stream, the bound is
	// lister.DefaultInitialEventsBeforeCountFactor times it: a pause or a
	// slow start, not a lost bookmark; once it is reached,
	// lister.DefaultInitialEventsAfterCount applies). When it passes, the
	// server is taken to ignore sendInitialEvents (as v1.18 does: it never
	// sends that bookmark), compat is told so, and the reflector lists
	// instead. Default lister.DefaultInitialEventsTimeout (10s), the one
	// default of every streaming list in the SDK (lister.GuardInitialEvents).
	// Shorter: faster recovery from a wrong capability; longer: tolerates a
	// server that pauses mid-stream.
	InitialEventsTimeout time.Duration

	// WatchTimeoutMin and WatchTimeoutMax bound the randomized server-side
	// timeout of each watch (timeoutSeconds), spreading reconnects of many
	// clients over time. Defaults 5m and 10m (client-go's). Max < Min is
	// raised to Min.
	WatchTimeoutMin, WatchTimeoutMax time.Duration

	// StallTimeout restarts a watch (from the last resourceVersion, no relist)
	// that delivered no event and no bookmark for this long. It must exceed
	// the server's bookmark interval (about a minute), else quiet watches
	// restart needlessly. The restart comes StallTimeout after the last
	// event, and at most min(StallTimeout/4, 1s) later (the watch checks on
	// a tick, not per event). Default 3m. Negative disables stall detection
	// (a half-open connection is then only noticed at the watch timeout).
	StallTimeout time.Duration

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

	// Metrics receives counts and transitions. Default: metrics.Nop.
	Metrics metrics.Recorder

	// Clock is for tests. Default: the real clock.
	Clock clock.WithTicker
}

// withDefaults returns o with every zero field set to its default. Applying
// it twice changes nothing.
func (o Options) withDefaults() Options {
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.PageSize < 0 {
		o.PageSize = 0
	}
	if o.MaxPageSize == 0 {
		o.MaxPageSize = DefaultMaxPageSizeFactor * o.PageSize
	}
	if o.InitialListSemantic != fallback.Any {
		o.InitialListSemantic = fallback.MostRecent
	}
	if o.InitialEventsTimeout <= 0 {
		o.InitialEventsTimeout = DefaultInitialEventsTimeout
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
	if o.StallTimeout == 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.ShortWatch <= 0 {
		o.ShortWatch = DefaultShortWatch
	}
	o.Backoff = o.Backoff.WithDefaults(DefaultBackoff())
	o.MaxTooLargeWatchRetries = fallback.CountOrDefault(o.MaxTooLargeWatchRetries, DefaultMaxTooLargeWatchRetries)
	o.MaxStaleListRetries = fallback.CountOrDefault(o.MaxStaleListRetries, DefaultMaxStaleListRetries)
	o.MaxShortWatches = fallback.CountOrDefault(o.MaxShortWatches, DefaultMaxShortWatches)
	o.Lister.Policy = o.Lister.Policy.WithDefaults()
	o.Metrics = metrics.OrNop(o.Metrics)
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}
