// Package knobs holds the settings of lister.Options and reflector.Options
// that no user sets: the retry budgets, the backoffs, page growth, clocks.
// They have one value on every path (their defaults, below and in package
// policy); the SDK's own tests, e2e and benchmarks change them through
// ListerOf and ReflectorOf, and the reflector sets the lister settings it
// owns (LastObservedRV) the same way.
package knobs

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/steadywatch/steadywatch/internal/policy"
)

// Lister is the unexported part of a lister.Options.
type Lister struct {
	// Policy holds the retry budgets and the backoff of one list call.
	// Its MaxRetryAfter and ResponseTimeout are lister.Options' own fields,
	// which replace the values here when they are set.
	Policy policy.Policy
	// MaxPageSize, when larger than a paginated query's limit, makes each
	// continuation page ask for twice the previous page's limit, up to
	// MaxPageSize objects. Default 0: every page asks for the query's own
	// limit; a reflector's lists grow to 8 x PageSize (see Reflector).
	MaxPageSize int64
	// MaxPageBytes bounds that growth in bytes (the previous page's objects,
	// sampled). Default 16 MiB; negative: bounded by MaxPageSize only.
	MaxPageBytes int64
	// DisableInitialEventsCount turns off the limit=1 list sent beside each
	// streaming list to learn how many objects to expect.
	DisableInitialEventsCount bool
	// MaxRequests bounds the requests of one list call that deliver no
	// page. Default 64.
	MaxRequests int
	// LastObservedRV returns the newest resourceVersion the caller has
	// observed: rule 1 and list restarts use it as the newer
	// resourceVersion. The reflector sets it to its LastSyncResourceVersion.
	LastObservedRV func() string
	// Unchanged, if set, is asked by ListPages with ItemByItem about each
	// item before it is decoded (decode.Each.Known): true, the caller holds
	// that object at that resourceVersion and took it as handed over, so it
	// is not decoded. The reflector sets it for the store of its own
	// informer.
	Unchanged func(namespace, name, rv string) (bool, error)
}

// Reflector is the unexported part of a reflector.Options.
type Reflector struct {
	// MaxTooLargeWatchRetries: watches answered "too large resource
	// version" retried from the same resourceVersion before a MostRecent
	// relist. Default 3; negative: relist at once.
	MaxTooLargeWatchRetries int
	// MaxShortWatches: consecutive watches that close at once without
	// progress before a relist NotOlderThan the held resourceVersion.
	// Default 2; negative: relist at the first.
	MaxShortWatches int
	// MaxStaleListRetries: relists served older than the store retried
	// before a MostRecent list. Default 2; negative: MostRecent at once.
	MaxStaleListRetries int
	// WatchTimeoutMin and WatchTimeoutMax bound each watch's randomized
	// timeoutSeconds. Defaults 5m and 10m (client-go's).
	WatchTimeoutMin, WatchTimeoutMax time.Duration
	// ShortWatch: a watch that closed without progress within it is short.
	// Default 1s.
	ShortWatch time.Duration
	// Backoff is the delay between failed attempts and between relists
	// without a watch event in between. Default policy.DefaultReflectorBackoff.
	Backoff policy.Backoff
	// Unpaginated makes the reflector's own MostRecent, Any and Exact lists
	// unpaginated (one response; benchmarks compare it).
	Unpaginated bool
	// Clock: default the real clock.
	Clock clock.WithTicker
}

// ListerOf returns the knobs of a *lister.Options. Package lister sets it
// when it is initialized (as grpc's internal package does), so that the
// knobs stay out of the public API.
var ListerOf func(opts any) *Lister

// ReflectorOf returns the knobs of a *reflector.Options; package reflector
// sets it when it is initialized.
var ReflectorOf func(opts any) *Reflector

// WithLister returns opts, a lister.Options, with k as its knobs.
func WithLister[T any](opts T, k Lister) T {
	*ListerOf(&opts) = k
	return opts
}

// WithReflector returns opts, a reflector.Options, with k as its knobs.
func WithReflector[T any](opts T, k Reflector) T {
	*ReflectorOf(&opts) = k
	return opts
}
