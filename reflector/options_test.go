package reflector

// The options walk: every exported field of lister.Options and
// reflector.Options, found by reflection, through every adoption path that
// takes it. On each path a field is either honoured (setting it changes the
// requests the in-memory apiserver receives, the metrics, or the outcome of
// the same scenario) or rejected with an *OptionsError. A field without an
// entry in optionProbes fails the test: a new option must say how it is
// observed on every path, or which path rejects it.

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// adoptionPath is one way a user adopts steadywatch.
type adoptionPath string

const (
	pathListerNew      adoptionPath = "lister.New"
	pathListerWatcher  adoptionPath = "lister.NewListerWatcher"
	pathWrap           adoptionPath = "lister.Wrap"
	pathFactory        adoptionPath = "reflector.NewSharedInformerFactory"
	pathSharedInformer adoptionPath = "reflector.NewSharedIndexInformerWithOptions"
	pathMetadata       adoptionPath = "reflector.NewMetadataInformer"
	pathReflector      adoptionPath = "reflector.New"
	pathReflectorList  adoptionPath = "reflector.New with Options.List"
)

// The decoding paths, with the in-memory server's client as the decoding
// client.
const (
	pathWrapDecoding   adoptionPath = "lister.WrapDecoding"
	pathNewInformerFor adoptionPath = "reflector.NewInformerFor"
)

var (
	dropInPaths    = []adoptionPath{pathListerNew, pathListerWatcher, pathWrap, pathWrapDecoding}
	reflectorPaths = []adoptionPath{pathReflector, pathReflectorList}
	// informerPaths build steadywatch's informer over reflector.New: the
	// reflector's scenarios run on the informer's reflector.
	informerPaths = []adoptionPath{pathFactory, pathSharedInformer, pathMetadata, pathNewInformerFor}
	allPaths      = slices.Concat(dropInPaths, reflectorPaths, informerPaths)
)

// pathsTaking says which paths take each options struct.
var pathsTaking = map[string][]adoptionPath{
	"lister.Options":        allPaths,
	"lister.Options.Policy": allPaths,
	"reflector.Options":     reflectorPaths,
}

// probe is one scenario in which a field's value matters. base prepares the
// scenario (both runs); set changes the field under test (one run).
type probe struct {
	faults steadywatchtest.Faults
	setup  func(e *env) // after the objects are written, before faults apply
	// noMetrics: the harness does not install its recorder (the Metrics probe).
	noMetrics bool
	base      func(e *env, o *lister.Options)
	set       func(e *env, o *lister.Options)
	rbase     func(e *env, o *Options)
	rset      func(e *env, o *Options)
	// dropIn drives a drop-in path's ListerWatcher, exactly as client-go's
	// reflector would call it.
	dropIn func(e *env, lw cache.ListerWatcherWithContext)
	// refl drives a reflector; nil: Run until synced.
	refl func(e *env, r *Reflector)
}

// fieldProbes says how one field is observed on each path that takes it.
type fieldProbes struct {
	dropIn    *probe // the drop-in paths
	reflector *probe // reflector.New, and reflector.New with List unless withList is set
	withList  *probe
	// informer: the informer paths, when their scenario is not the
	// reflector's (they take no reflector.Options).
	informer *probe
	rejected []adoptionPath // paths that reject the field (Options.Validate)
	// unused: the paths that do not use an internal knob (internal/knobs):
	// users cannot set it, so there is nothing to reject.
	unused []adoptionPath
	// container: a nested options struct, walked field by field on its own.
	container bool
}

const quiet = 400 * time.Millisecond // how long a run waits for an effect that a default value never produces

// effectBound is how long the run expected to show a scenario's effect
// waits for it (env.within): a loaded machine can take longer than quiet,
// and a run that shows it ends at once. It stays below every default that
// would produce the effect by itself (InitialEventsTimeout 10s,
// StallTimeout 3m), so an ignored field still shows.
const effectBound = 3 * time.Second

// Scenarios shared by several fields.
var (
	listNotOlderThanCurrent = func(e *env, lw cache.ListerWatcherWithContext) {
		e.list(lw, metav1.ListOptions{ResourceVersion: e.rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	}
	listPaginated = func(e *env, lw cache.ListerWatcherWithContext) {
		e.list(lw, metav1.ListOptions{Limit: 2})
	}
	listAndWatch = func(e *env, lw cache.ListerWatcherWithContext) {
		e.list(lw, metav1.ListOptions{})
		e.watch(lw, metav1.ListOptions{ResourceVersion: e.rv, AllowWatchBookmarks: true}, 0, nil)
	}
	streamingListOptions = metav1.ListOptions{SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	untilEndBookmark     = func(ev watch.Event) bool {
		m, err := meta.Accessor(ev.Object)
		return ev.Type == watch.Bookmark && err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	}
	streams = func() compat.Server {
		return capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes}})
	}
	paginate      = func(_ *env, o *Options) { o.PaginateLists = true }
	lagging       = steadywatchtest.Faults{Lagging: 2}
	shortRetry    = func(_ *env, o *lister.Options) { o.MaxRetryAfter = time.Millisecond }
	shortBackoffs = func(_ *env, o *lister.Options) {
		knobs.ListerOf(o).Policy.Backoff = policy.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
	}
	streamNoCount = func(_ *env, o *lister.Options) {
		o.Server = streams()
		knobs.ListerOf(o).DisableInitialEventsCount = true
	}
	tooLargeWatch = func(e *env) { e.client.watchErr = testfake.TooLarge(0) }
	emptyWatches  = steadywatchtest.Faults{EmptyWatches: true}
	untilRelisted = func(e *env, r *Reflector) {
		e.run(r, func() bool { return e.replaces.Load() >= 2 }, 3*time.Second)
		e.outcome("relisted=%v, watch restarts %v", e.replaces.Load() >= 2, e.rec.restartReasons())
	}
	// rejectFirstLists: the first request (the informer's limit=1 read of
	// the current resourceVersion) answered 429: the reflector retries the
	// list itself, paginated.
	rejectFirstLists = steadywatchtest.Faults{RetryAfter: 1, RetryAfterRequests: 1}
	legacyStreaming  = steadywatchtest.Faults{IgnoreSendInitialEvents: true, IgnoreResourceVersionMatch: true}
)

var optionProbes = map[string]fieldProbes{
	"lister.Options.Server": {
		// Known not to read resourceVersionMatch: the legacy wire form.
		dropIn: &probe{set: func(_ *env, o *lister.Options) {
			o.Server = capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.ResourceVersionMatch: capability.No}})
		}, dropIn: listNotOlderThanCurrent},
		// Known to stream: a streaming list instead of a list.
		reflector: &probe{set: func(_ *env, o *lister.Options) { o.Server = streams() }},
	},
	"lister.Options.Policy": {
		// A lagging HA member answers "too large" (504): retried, or at once MostRecent.
		dropIn:    &probe{faults: lagging, base: shortRetry, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).Policy.MaxTooLargeRetries = -1 }, dropIn: listNotOlderThanCurrent},
		reflector: &probe{faults: lagging, base: shortRetry, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).Policy.MaxTooLargeRetries = -1 }},
		unused:    []adoptionPath{pathReflectorList},
	},
	// The bound each request is sent with (the request context's, which
	// the SDK's own clients and NoHiddenRetries' transport enforce on the
	// wire: lister/noanswer_test.go), seen where the executor asks about
	// the server and by the client's lists and watches.
	"lister.Options.MaxRetryAfter": {
		// The first request is answered "Retry-After: 1": waited (longer
		// than the run) or capped. The backoffs are made short so that only
		// the Retry-After can delay the list.
		dropIn: &probe{faults: rejectFirstLists, base: shortBackoffs, set: shortRetry, dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
			e.listWithin(lw, metav1.ListOptions{}, quiet)
		}},
		reflector: &probe{faults: rejectFirstLists, base: shortBackoffs, rbase: func(_ *env, o *Options) {
			o.knobs.Backoff = policy.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
		},
			set: shortRetry, refl: func(e *env, r *Reflector) {
				e.run(r, r.HasSynced, quiet)
				e.outcome("synced=%v", r.HasSynced())
			}},
	},
	"lister.Options.ResponseTimeout": {
		dropIn: &probe{base: recordBounds, set: shortResponseTimeout, dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
			listAndWatch(e, lw)
			e.outcome("request bounds %v", e.requestBounds())
		}},
		reflector: &probe{base: recordBounds, set: shortResponseTimeout, refl: func(e *env, r *Reflector) {
			e.run(r, func() bool { return r.HasSynced() && e.srv.Watches() > 0 }, 3*time.Second)
			e.outcome("synced=%v, request bounds %v", r.HasSynced(), e.requestBounds())
		}},
	},
	"lister.Options.PageSize": {
		// Exact on a server that ignores resourceVersionMatch: retried with a limit (rule 2).
		dropIn: &probe{faults: steadywatchtest.Faults{IgnoreResourceVersionMatch: true}, set: func(_ *env, o *lister.Options) { o.PageSize = 3 },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				e.list(lw, metav1.ListOptions{ResourceVersion: e.rv0, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			}},
		reflector: &probe{rbase: paginate, set: func(_ *env, o *lister.Options) { o.PageSize = 3 }},
		// The informer's first list is served in one response; the
		// reflector's own retry of a failed list is paginated.
		informer: &probe{faults: rejectFirstLists, base: shortRetry, set: func(_ *env, o *lister.Options) { o.PageSize = 3 }},
	},
	"lister.Options.MaxPageSize": {
		dropIn:    &probe{set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageSize = 8 }, dropIn: listPaginated},
		reflector: &probe{rbase: paginate, base: func(_ *env, o *lister.Options) { o.PageSize = 2 }, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageSize = -1 }},
		informer:  &probe{faults: rejectFirstLists, base: func(e *env, o *lister.Options) { shortRetry(e, o); o.PageSize = 2 }, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageSize = -1 }},
		unused:    []adoptionPath{pathReflectorList},
	},
	"lister.Options.MaxPageBytes": {
		dropIn:    &probe{base: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageSize = 8 }, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageBytes = 1 }, dropIn: listPaginated},
		reflector: &probe{rbase: paginate, base: func(_ *env, o *lister.Options) { o.PageSize = 2 }, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageBytes = 1 }},
		informer:  &probe{faults: rejectFirstLists, base: func(e *env, o *lister.Options) { shortRetry(e, o); o.PageSize = 2 }, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxPageBytes = 1 }},
		unused:    []adoptionPath{pathReflectorList},
	},
	"lister.Options.Metrics": {
		dropIn:    &probe{noMetrics: true, set: func(e *env, o *lister.Options) { o.Metrics = e.rec }, dropIn: listAndWatch},
		reflector: &probe{noMetrics: true, set: func(e *env, o *lister.Options) { o.Metrics = e.rec }},
	},
	"lister.Options.Resource": {
		dropIn:    &probe{set: setResource, dropIn: listAndWatch},
		reflector: &probe{set: setResource},
	},
	"lister.Options.Name": {
		dropIn:    &probe{set: func(_ *env, o *lister.Options) { o.Name = "probe" }, dropIn: listAndWatch},
		reflector: &probe{set: func(_ *env, o *lister.Options) { o.Name = "probe" }},
	},
	"lister.Options.LabelSelector": {
		dropIn:    &probe{set: func(_ *env, o *lister.Options) { o.LabelSelector = "half=yes" }, dropIn: listAndWatch},
		reflector: &probe{set: func(_ *env, o *lister.Options) { o.LabelSelector = "half=yes" }},
		rejected:  []adoptionPath{pathReflectorList},
	},
	"lister.Options.FieldSelector": {
		dropIn:    &probe{set: func(_ *env, o *lister.Options) { o.FieldSelector = "metadata.name=cm-01" }, dropIn: listAndWatch},
		reflector: &probe{set: func(_ *env, o *lister.Options) { o.FieldSelector = "metadata.name=cm-01" }},
		rejected:  []adoptionPath{pathReflectorList},
	},
	"lister.Options.LastObservedRV": {
		// Rule 1 after a 410: the caller's newer resourceVersion instead of a limit=1 probe.
		// A server that ignores resourceVersionMatch reads NotOlderThan with a
		// limit as Exact: 410 once compacted.
		dropIn: &probe{faults: steadywatchtest.Faults{IgnoreResourceVersionMatch: true}, setup: func(e *env) { e.compact() },
			set: func(e *env, o *lister.Options) { knobs.ListerOf(o).LastObservedRV = func() string { return e.rv } },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				e.list(lw, metav1.ListOptions{ResourceVersion: e.rv0, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 4})
			}},
		reflector: &probe{set: func(e *env, o *lister.Options) { knobs.ListerOf(o).LastObservedRV = func() string { return e.rv } }},
		unused:    slices.Concat(reflectorPaths, informerPaths), // the reflector sets it: its LastSyncResourceVersion
	},
	"lister.Options.Unchanged": {
		// Set only by the reflector, for its own informer's store (its
		// lists keep the objects held at the listed version undecoded);
		// the unit tests in itemrelist_test.go and unchanged_test.go
		// observe it. No user sets it, so no path rejects it.
		unused: allPaths,
	},
	"lister.Options.InitialEventsTimeout": {
		// A server that ignores sendInitialEvents: the streaming list is given up after the timeout.
		dropIn: &probe{faults: legacyStreaming,
			base: func(_ *env, o *lister.Options) { knobs.ListerOf(o).DisableInitialEventsCount = true },
			set:  func(_ *env, o *lister.Options) { o.InitialEventsTimeout = 20 * time.Millisecond },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				e.watch(lw, withRV(streamingListOptions, e.rv), e.within(true), nil)
			}},
		reflector: &probe{faults: legacyStreaming, base: streamNoCount,
			set: func(_ *env, o *lister.Options) { o.InitialEventsTimeout = 20 * time.Millisecond },
			refl: func(e *env, r *Reflector) {
				e.run(r, r.HasSynced, e.within(true))
				e.outcome("synced=%v", r.HasSynced())
			}},
	},
	"lister.Options.DisableStreamingList": {
		dropIn: &probe{base: func(_ *env, o *lister.Options) { knobs.ListerOf(o).DisableInitialEventsCount = true },
			set: func(_ *env, o *lister.Options) { o.DisableStreamingList = true },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				e.watch(lw, streamingListOptions, 3*time.Second, untilEndBookmark)
			}},
		reflector: &probe{base: streamNoCount, set: func(_ *env, o *lister.Options) { o.DisableStreamingList = true }},
	},
	"lister.Options.DisableInitialEventsCount": {
		// The limit=1 list beside a streaming list.
		dropIn: &probe{set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).DisableInitialEventsCount = true },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				// The count is sent beside the stream, under its context:
				// wait for it (and, through WrapDecoding, for its scope
				// check) before the stream ends.
				sent := false
				e.watch(lw, streamingListOptions, 3*time.Second, func(ev watch.Event) bool {
					if !untilEndBookmark(ev) {
						return false
					}
					sent = e.waitFor(e.countListSent, e.within(false))
					if sent && e.scopeChecked {
						sent = e.waitFor(e.scopeCheckSent, e.within(false))
					}
					return true
				})
				e.outcome("count list sent=%v", sent)
			}},
		reflector: &probe{base: func(_ *env, o *lister.Options) { o.Server = streams() },
			set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).DisableInitialEventsCount = true },
			refl: func(e *env, r *Reflector) {
				// Through the decoding informer, the count list's scope
				// check follows it: wait for that too.
				e.run(r, func() bool {
					return r.HasSynced() && e.countListSent() && (!e.scopeChecked || e.scopeCheckSent())
				}, e.within(false))
				e.outcome("count list sent=%v", e.countListSent())
			}},
	},
	"lister.Options.StallTimeout": {
		dropIn: &probe{set: func(_ *env, o *lister.Options) { o.StallTimeout = 30 * time.Millisecond },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				e.watch(lw, metav1.ListOptions{ResourceVersion: e.rv, AllowWatchBookmarks: true}, e.within(true), nil)
			}},
		reflector: &probe{set: func(_ *env, o *lister.Options) { o.StallTimeout = 30 * time.Millisecond },
			refl: func(e *env, r *Reflector) {
				e.run(r, func() bool { return e.srv.Count("watch") >= 2 }, e.within(true))
				e.outcome("watched again=%v", e.srv.Count("watch") >= 2)
			}},
	},
	"lister.Options.ListGate": {
		// The gate's one slot is held: a gated list waits.
		dropIn: &probe{set: func(e *env, o *lister.Options) { o.ListGate = e.gate },
			dropIn: func(e *env, lw cache.ListerWatcherWithContext) {
				defer e.holdGate()()
				e.listWithin(lw, metav1.ListOptions{}, e.within(false))
			}},
		reflector: &probe{set: func(e *env, o *lister.Options) { o.ListGate = e.gate }, refl: runWhileGateHeld},
		// A List of the caller's own is not gated; its streaming lists are.
		withList: &probe{base: streamNoCount, set: func(e *env, o *lister.Options) { o.ListGate = e.gate }, refl: runWhileGateHeld},
	},
	"lister.Options.MaxRequests": {
		dropIn:    &probe{faults: lagging, base: shortRetry, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxRequests = 1 }, dropIn: listNotOlderThanCurrent},
		reflector: &probe{faults: lagging, base: shortRetry, set: func(_ *env, o *lister.Options) { knobs.ListerOf(o).MaxRequests = 1 }},
		unused:    []adoptionPath{pathReflectorList},
	},

	"lister.Options.Transform": {
		// Every list item and watch event's object comes out transformed.
		dropIn:    &probe{set: markTransformed, dropIn: listAndWatchTransformed},
		reflector: &probe{set: markTransformed, refl: syncAndWatchTransformed},
		rejected:  []adoptionPath{pathReflectorList},
	},

	"reflector.Options.Lister": {container: true},
	"reflector.Options.List": {
		reflector: &probe{rset: func(e *env, o *Options) { o.List = e.customList("probe") }},
	},
	"reflector.Options.MaxTooLargeWatchRetries": {
		reflector: &probe{setup: tooLargeWatch, rset: func(_ *env, o *Options) { o.knobs.MaxTooLargeWatchRetries = -1 }, refl: untilRelisted},
	},
	"reflector.Options.MaxShortWatches": {
		reflector: &probe{faults: emptyWatches, rset: func(_ *env, o *Options) { o.knobs.MaxShortWatches = -1 }, refl: untilRelisted},
	},
	"reflector.Options.MaxStaleListRetries": {
		// Watches fail "too large" (relist MostRecent at once), and every
		// MostRecent list after the first sync is served older than the store.
		reflector: &probe{setup: func(e *env) { tooLargeWatch(e); e.client.staleAfterSync = true },
			rbase: func(_ *env, o *Options) { o.PaginateLists, o.knobs.MaxTooLargeWatchRetries = true, -1 },
			rset:  func(_ *env, o *Options) { o.knobs.MaxStaleListRetries = -1 },
			refl: func(e *env, r *Reflector) {
				e.run(r, func() bool { return e.replaces.Load() >= 2 }, quiet)
				e.outcome("relists after the first sync=%v", e.relistSemantics())
			}},
	},
	"reflector.Options.PaginateLists": {reflector: &probe{rset: paginate}},
	"reflector.Options.Unpaginated": {
		// A paginated MostRecent list is sent without a limit.
		reflector: &probe{rbase: paginate, rset: func(_ *env, o *Options) { o.knobs.Unpaginated = true }},
	},
	"reflector.Options.InitialListSemantic": {reflector: &probe{rset: func(_ *env, o *Options) { o.InitialListSemantic = fallback.Any }}},
	"reflector.Options.WatchTimeoutMin": {
		reflector: &probe{rset: func(_ *env, o *Options) { o.knobs.WatchTimeoutMin = 20 * time.Minute }, refl: watchTimeouts},
	},
	"reflector.Options.WatchTimeoutMax": {
		reflector: &probe{rset: func(_ *env, o *Options) { o.knobs.WatchTimeoutMax = 5 * time.Minute }, refl: watchTimeouts},
	},
	"reflector.Options.ShortWatch": {
		reflector: &probe{faults: emptyWatches, rset: func(_ *env, o *Options) { o.knobs.ShortWatch = time.Nanosecond },
			refl: func(e *env, r *Reflector) {
				e.run(r, func() bool { return e.srv.Count("watch") >= 3 }, 3*time.Second)
				e.outcome("watch restarts %v", e.rec.restartReasons())
			}},
	},
	"reflector.Options.Backoff": {
		// Watches close at once; the relist that follows waits a backoff.
		reflector: &probe{faults: emptyWatches, rbase: func(_ *env, o *Options) { o.knobs.MaxShortWatches = -1 },
			rset: func(_ *env, o *Options) { o.knobs.Backoff = policy.Backoff{Initial: time.Hour, Max: time.Hour} },
			refl: func(e *env, r *Reflector) {
				e.run(r, func() bool { return e.replaces.Load() >= 2 }, e.within(false))
				e.outcome("relisted=%v", e.replaces.Load() >= 2)
			}},
	},
	"reflector.Options.ResyncPeriod": {
		reflector: &probe{rset: func(_ *env, o *Options) { o.ResyncPeriod = 5 * time.Millisecond },
			refl: func(e *env, r *Reflector) {
				e.run(r, func() bool { return e.resyncs.Load() > 0 }, e.within(true))
				e.outcome("resynced=%v", e.resyncs.Load() > 0)
			}},
	},
	"reflector.Options.ConsistencyCheckInterval": {
		reflector: &probe{rset: func(_ *env, o *Options) { o.ConsistencyCheckInterval = time.Nanosecond },
			refl: func(e *env, r *Reflector) {
				e.run(r, func() bool {
					if r.State().Phase == PhaseWatching {
						e.srv.Bookmark()
					}
					return e.exactListSent()
				}, e.within(true))
				e.outcome("checked=%v", e.exactListSent())
			}},
	},
	"reflector.Options.Clock": {
		reflector: &probe{rset: func(_ *env, o *Options) {
			o.knobs.Clock = testingclock.NewFakeClock(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
		},
			refl: func(e *env, r *Reflector) { e.outcome("status since %d", r.State().Since.Year()) }},
	},
}

// markTransformed sets a Transform that annotates every object.
func markTransformed(_ *env, o *lister.Options) {
	o.Transform = func(obj any) (any, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		m.SetAnnotations(map[string]string{"transformed": "yes"})
		return obj, nil
	}
}

func transformedCount(objs []runtime.Object) int {
	n := 0
	for _, obj := range objs {
		if m, err := meta.Accessor(obj); err == nil && m.GetAnnotations()["transformed"] == "yes" {
			n++
		}
	}
	return n
}

// listAndWatchTransformed lists, then watches from the list's
// resourceVersion while an object is created, and records how many of the
// objects it got were transformed.
func listAndWatchTransformed(e *env, lw cache.ListerWatcherWithContext) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		e.outcome("list failed: %s", errClass(err))
		return
	}
	items, _ := meta.ExtractList(obj)
	e.outcome("list: %d items, %d transformed", len(items), transformedCount(items))
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: e.rv})
	if err != nil {
		e.outcome("watch refused: %s", errClass(err))
		return
	}
	defer w.Stop()
	e.srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "watched"}})
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Bookmark {
				continue
			}
			e.outcome("watch: %s, transformed %d", ev.Type, transformedCount([]runtime.Object{ev.Object}))
			return
		case <-ctx.Done():
			e.outcome("watch: no event")
			return
		}
	}
}

// syncAndWatchTransformed runs the reflector until it synced and a created
// object reached its store, and records how many stored objects were
// transformed.
func syncAndWatchTransformed(e *env, r *Reflector) {
	store := r.store.(traceStore).Store
	created := false
	e.run(r, func() bool {
		if !r.HasSynced() || r.State().Phase != PhaseWatching {
			return false
		}
		if !created {
			created = true
			e.srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "watched"}})
		}
		_, ok, _ := store.GetByKey("ns/watched")
		return ok
	}, 3*time.Second)
	var objs []runtime.Object
	for _, o := range store.List() {
		objs = append(objs, o.(runtime.Object))
	}
	e.outcome("store: %d objects, %d transformed", len(objs), transformedCount(objs))
}

func setResource(_ *env, o *lister.Options) {
	o.Resource = corev1.SchemeGroupVersion.WithResource("secrets")
}

func runWhileGateHeld(e *env, r *Reflector) {
	defer e.holdGate()()
	e.run(r, r.HasSynced, e.within(false))
	e.outcome("synced while the gate was held=%v", r.HasSynced())
}

func watchTimeouts(e *env, r *Reflector) {
	lo, hi := int64(1<<62), int64(0)
	for range 200 {
		s := r.watchTimeoutSeconds()
		lo, hi = min(lo, s), max(hi, s)
	}
	e.outcome("200 watch timeouts: all <= 300s %v, all >= 1200s %v", hi <= 300, lo >= 1200)
}

// exportedFields returns "<struct>.<field>" for every exported field of v's type.
func exportedFields(v any, prefix string) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() {
			out = append(out, prefix+"."+f.Name)
		}
	}
	return out
}

// policyFieldsInPolicyProbe are the policy.Policy fields the
// lister.Options.Policy probe stands for (each is also walked by the
// decision table's exhaustive test, internal/engine). Every other Policy
// field needs its own entry in optionProbes.
var policyFieldsInPolicyProbe = []string{"MaxNewerRVRetries", "DisableMostRecentFallback", "ContinueExpired",
	"MaxListRestarts", "MaxTooLargeRetries", "TooLargeAfterBudget", "Backoff"}

func TestEveryOptionIsHonouredOrRejectedOnEveryPath(t *testing.T) {
	var fields []string
	fields = append(fields, exportedFields(lister.Options{}, "lister.Options")...)
	fields = append(fields, exportedFields(knobs.Lister{}, "lister.Options")...)
	for _, f := range exportedFields(policy.Policy{}, "lister.Options.Policy") {
		name := strings.TrimPrefix(f, "lister.Options.Policy.")
		if !slices.Contains(policyFieldsInPolicyProbe, name) && !slices.Contains(fields, "lister.Options."+name) {
			fields = append(fields, f)
		}
	}
	fields = append(fields, exportedFields(Options{}, "reflector.Options")...)
	fields = append(fields, exportedFields(knobs.Reflector{}, "reflector.Options")...)
	for name := range optionProbes {
		if !slices.Contains(fields, name) {
			t.Errorf("optionProbes has %s, which is no option field: remove it", name)
		}
	}
	for _, field := range fields {
		fp, ok := optionProbes[field]
		if !ok {
			t.Errorf("%s has no entry in optionProbes: say how it is observed on every path that takes it, or which path rejects it", field)
			continue
		}
		if fp.container {
			continue
		}
		structName := field[:strings.LastIndex(field, ".")]
		for _, path := range pathsTaking[structName] {
			if slices.Contains(fp.unused, path) {
				continue
			}
			t.Run(field+"/"+string(path), func(t *testing.T) {
				pr := fp.probeFor(path)
				if slices.Contains(fp.rejected, path) {
					if pr == nil {
						t.Fatalf("no probe to set %s with", field)
					}
					checkRejected(t, path, pr, field)
					return
				}
				if pr == nil {
					t.Fatalf("%s is taken by %s but optionProbes has no scenario for it there", field, path)
				}
				base := runProbe(t, path, pr, false)
				if again := runProbe(t, path, pr, false); again != base {
					t.Fatalf("the scenario is not deterministic without the field set:\n%s\n-- and --\n%s", base, again)
				}
				if got := runProbe(t, path, pr, true); got == base {
					t.Errorf("setting %s changed nothing on %s (on the wire, in metrics or in the outcome):\n%s", field, path, got)
				}
			})
		}
	}
}

func (fp fieldProbes) probeFor(path adoptionPath) *probe {
	switch {
	case path == pathReflectorList && fp.withList != nil:
		return fp.withList
	case path == pathReflector || path == pathReflectorList:
		return fp.reflector
	case slices.Contains(informerPaths, path) && fp.informer != nil:
		return fp.informer
	case slices.Contains(informerPaths, path):
		return fp.reflector
	}
	return fp.dropIn
}

// checkRejected: Validate names the field, and Run never sends a request.
func checkRejected(t *testing.T, path adoptionPath, pr *probe, field string) {
	e := newEnv(t, pr)
	o := e.reflectorOptions(path, pr, true)
	err := o.Validate()
	var oe *OptionsError
	if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Validate() = %v, want an *OptionsError for %s", err, field)
	}
	if short := strings.TrimPrefix(field, "lister.Options."); !strings.Contains(oe.Field, short) {
		t.Errorf("OptionsError names %q, want %s", oe.Field, short)
	}
	e.srv.ResetRequests()
	r := New(e.client, &corev1.ConfigMap{}, e.store(), o)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run with rejected options did not return")
	}
	if n := len(e.srv.Requests()); n != 0 || r.HasSynced() {
		t.Errorf("Run with rejected options sent %d requests, synced %v; want none, false", n, r.HasSynced())
	}
	if st := r.State(); st.Phase != PhaseStopped || !strings.Contains(st.Reason, oe.Field) {
		t.Errorf("State() = %s %q, want %s naming %s", st.Phase, st.Reason, PhaseStopped, oe.Field)
	}
}

// runProbe runs pr's scenario on path, with the field set or not, and
// returns what was observed.
func runProbe(t *testing.T, path adoptionPath, pr *probe, set bool) string {
	t.Helper()
	e := newEnv(t, pr)
	e.set = set
	switch path {
	case pathReflector, pathReflectorList:
		o := e.reflectorOptions(path, pr, set)
		if err := o.Validate(); err != nil {
			t.Fatalf("%s rejects options it should honour: %v", path, err)
		}
		r := New(e.client, &corev1.ConfigMap{}, e.store(), o)
		if pr.refl != nil {
			pr.refl(e, r)
		} else {
			e.run(r, r.HasSynced, 3*time.Second)
			e.outcome("synced=%v", r.HasSynced())
		}
	case pathFactory, pathSharedInformer, pathMetadata, pathNewInformerFor:
		r := e.informerReflector(path, e.listerOptions(pr, set), pr, set)
		if pr.refl != nil {
			pr.refl(e, r)
		} else {
			e.run(r, r.HasSynced, 3*time.Second)
			e.outcome("synced=%v", r.HasSynced())
		}
	default:
		lo := e.listerOptions(pr, set)
		if pr.dropIn == nil {
			t.Fatalf("no drop-in scenario")
		}
		pr.dropIn(e, e.listerWatcher(path, lo))
	}
	return e.trace()
}
