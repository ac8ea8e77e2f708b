package reflector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/policy"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// Defaults of the reflector's knobs (internal/knobs.Reflector).
const (
	defaultMaxPageSizeFactor       int64 = 8
	defaultWatchTimeoutMin               = 5 * time.Minute
	defaultWatchTimeoutMax               = 10 * time.Minute
	defaultShortWatch                    = time.Second
	defaultMaxTooLargeWatchRetries       = 3
	defaultMaxStaleListRetries           = 2
	defaultMaxShortWatches               = 2
)

// ListFunc performs one complete list (every page) with an explicit
// KEP-2523 semantic. The returned list's ListMeta.resourceVersion must be the
// resourceVersion the list was served at. A *lister.Lister's List method,
// with its *Record dropped, is a ListFunc.
type ListFunc func(ctx context.Context, q fallback.Query) (runtime.Object, error)

// Options configures a Reflector. The zero value is the safe default; each
// field has the same default as on every other path of the SDK.
type Options struct {
	// Lister holds every setting the reflector shares with package lister
	// (Server, Name, selectors, PageSize, MaxRetryAfter, ResponseTimeout,
	// StallTimeout, ListGate, Transform, ...), with the same defaults.
	// Resource and Name are derived from the expected type.
	Lister lister.Options

	// List performs lists. Default nil: a steadywatch lister over the Client
	// built from Lister. A List of the caller's own is given the query only,
	// so it cannot apply Lister's selectors or Transform: Validate rejects
	// them together.
	List ListFunc

	// PaginateLists lists MostRecent page by page (Lister.PageSize, growing)
	// from the first attempt: a lower client heap, but before Kubernetes 1.34
	// every page is read from etcd. Default false: one response from the
	// watch cache, applied object by object as the SDK's own clients decode it
	// (pages where Lister.Server says consistent lists are read from etcd:
	// before v1.31).
	PaginateLists bool

	// InitialListSemantic is the semantic of the first list: fallback.MostRecent
	// (default: a consistent read, never older than anything the cluster
	// showed) or fallback.Any (resourceVersion "0", cheapest; in HA it can
	// go back in time). Other semantics are treated as MostRecent.
	InitialListSemantic fallback.Semantic

	// ResyncPeriod, if positive, calls the store's Resync at that interval
	// (meaningful for queues such as DeltaFIFO). Default 0: never.
	ResyncPeriod time.Duration

	// ConsistencyCheckInterval, if positive, compares the store with an Exact
	// list at a bookmark's resourceVersion at most this often, logging and
	// counting any difference (it never changes the store). Default 0: off;
	// each check is a full list: keep it to tens of minutes.
	ConsistencyCheckInterval time.Duration

	// knobs are the settings no user sets (internal/knobs).
	knobs knobs.Reflector
}

func init() {
	knobs.ReflectorOf = func(opts any) *knobs.Reflector { return &opts.(*Options).knobs }
}

// withDefaults returns o with every zero reflector-only field set to its
// default (Lister is resolved by New, which knows the expected type).
// Applying it twice changes nothing.
func (o Options) withDefaults() Options {
	if o.InitialListSemantic != fallback.Any {
		o.InitialListSemantic = fallback.MostRecent
	}
	k := &o.knobs
	if k.WatchTimeoutMin <= 0 {
		k.WatchTimeoutMin = defaultWatchTimeoutMin
	}
	if k.WatchTimeoutMax <= 0 {
		k.WatchTimeoutMax = defaultWatchTimeoutMax
	}
	if k.WatchTimeoutMax < k.WatchTimeoutMin {
		k.WatchTimeoutMax = k.WatchTimeoutMin
	}
	if k.ShortWatch <= 0 {
		k.ShortWatch = defaultShortWatch
	}
	k.Backoff = k.Backoff.WithDefaults(policy.DefaultReflectorBackoff())
	k.MaxTooLargeWatchRetries = policy.CountOrDefault(k.MaxTooLargeWatchRetries, defaultMaxTooLargeWatchRetries)
	k.MaxStaleListRetries = policy.CountOrDefault(k.MaxStaleListRetries, defaultMaxStaleListRetries)
	k.MaxShortWatches = policy.CountOrDefault(k.MaxShortWatches, defaultMaxShortWatches)
	if k.Clock == nil {
		k.Clock = clock.RealClock{}
	}
	return o
}

// ErrInvalidOptions matches every *OptionsError (errors.Is).
var ErrInvalidOptions = errors.New("invalid reflector options")

// OptionsError is Validate's error: an option this reflector cannot honour,
// named by its path in Options (e.g. "Lister.Transform").
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
	if o.List == nil {
		return nil
	}
	switch {
	case lo.LabelSelector != "" || lo.FieldSelector != "":
		return &OptionsError{Field: "Lister.LabelSelector/FieldSelector", Reason: "List is given the query only and would not apply them, while the watches would; filter in your List's client and in the Client passed to New"}
	case lo.Transform != nil:
		return &OptionsError{Field: "Lister.Transform", Reason: "List is given the query only: its objects would reach the store untransformed while the watches' are transformed; set Transform on the lister.Options of the Lister your List uses"}
	}
	return nil
}
