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
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/wirewait"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
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

// ---- the scenario's environment ----

type env struct {
	t      *testing.T
	srv    *cmServer
	client *faultClient
	rec    *traceRecorder
	gate   *listgate.Gate
	// rv0 is the resourceVersion after the first objects, rv the current one.
	rv0, rv string

	mu       sync.Mutex
	outcomes []string
	bounds   map[string]bool           // the bounds requests were sent with (sawBound)
	frozen   []steadywatchtest.Request // the requests at the first store.Replace (a reflector's first sync)
	replaces atomic.Int32
	resyncs  atomic.Int32
	// scopeChecked: the path lists through lister.WrapDecoding, which
	// checks its first list's scope with one more request (a limit=1 Exact
	// list through the caller's ListerWatcher) before it returns it.
	scopeChecked bool
	// set: this run has the field under test set (within).
	set bool
}

func newEnv(t *testing.T, pr *probe) *env {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	t.Cleanup(srv.Close)
	for i := range 10 {
		half := map[bool]string{true: "yes", false: "no"}[i%2 == 0]
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{"half": half}}})
	}
	e := &env{t: t, srv: srv, rec: &traceRecorder{}, gate: listgate.New(1), rv0: srv.ResourceVersion()}
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}})
	e.rv = srv.ResourceVersion()
	e.client = &faultClient{Client: srv.InNamespace("ns"), e: e}
	if pr.setup != nil {
		pr.setup(e)
	}
	srv.SetFaults(pr.faults)
	return e
}

func (e *env) compact() {
	if err := e.srv.Compact(e.rv); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) listerOptions(pr *probe, set bool) lister.Options {
	var o lister.Options
	if !pr.noMetrics {
		o.Metrics = e.rec
	}
	if pr.base != nil {
		pr.base(e, &o)
	}
	if set && pr.set != nil {
		pr.set(e, &o)
	}
	return o
}

func (e *env) reflectorOptions(path adoptionPath, pr *probe, set bool) Options {
	o := knobs.WithReflector(Options{Lister: e.listerOptions(pr, set)}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if path == pathReflectorList {
		o.List = e.customList("base")
	}
	if pr.rbase != nil {
		pr.rbase(e, &o)
	}
	if set && pr.rset != nil {
		pr.rset(e, &o)
	}
	return o
}

// customList is a caller's own List: a plain lister, each call recorded.
func (e *env) customList(tag string) ListFunc {
	l := lister.New(e.client, lister.Options{})
	return func(ctx context.Context, q fallback.Query) (runtime.Object, error) {
		if e.replaces.Load() == 0 { // later calls depend on timing
			e.outcome("List(%s) %s", tag, q)
		}
		obj, _, err := l.List(ctx, q)
		return obj, err
	}
}

// listerWatcher builds a drop-in path's ListerWatcher (dropInPaths) with
// lo, as client-go's reflector gets it.
func (e *env) listerWatcher(path adoptionPath, lo lister.Options) cache.ListerWatcherWithContext {
	switch path {
	case pathListerNew:
		return lister.New(e.client, lo).ListerWatcher()
	case pathListerWatcher:
		return lister.NewListerWatcher(e.client, lo)
	case pathWrap:
		return lister.Wrap(e.srv.InNamespace("ns").ListerWatcher(), lo)
	case pathWrapDecoding:
		e.scopeChecked = true
		return lister.WrapDecoding(e.srv.InNamespace("ns").ListerWatcher(), e.client, lo)
	}
	e.t.Fatalf("%s is not a drop-in path", path)
	return nil
}

// informerReflector builds path's informer with lo and returns the
// reflector that fills its store, traced as e.store() is and with the
// scenarios' short backoff (the informer paths take no reflector.Options;
// the default backoff only makes the scenarios slower).
func (e *env) informerReflector(path adoptionPath, lo lister.Options, pr *probe, set bool) *Reflector {
	example := &corev1.ConfigMap{}
	var inf cache.SharedIndexInformer
	switch path {
	case pathFactory:
		cs := fake.NewClientset()
		e.srv.Install(&cs.Fake, "configmaps")
		f := NewSharedInformerFactoryWithOptions(cs, 0, lo, informers.WithNamespace("ns")).(*sharedInformerFactory)
		inf = f.newInformerFunc(example)(cs, 0)
	case pathSharedInformer:
		inf = NewSharedIndexInformerWithOptions(e.srv.InNamespace("ns").ListerWatcher(), example, cache.SharedIndexInformerOptions{}, lo)
	case pathMetadata:
		// The scenario's objects are ConfigMaps: served as metadata-only
		// objects, as the metadata client would.
		inf = NewMetadataInformer(metadataOf{e.client}, corev1.SchemeGroupVersion.WithResource("configmaps"), 0, cache.Indexers{}, lo)
	case pathNewInformerFor:
		e.scopeChecked = true
		// An object in another namespace, which neither the hook's
		// ListerWatcher nor the informer lists: NewInformerFor tells the
		// namespace's client from the every-namespace one by it.
		e.srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}})
		e.rv = e.srv.ResourceVersion()
		inf = informerFor(e.srv.InNamespace("ns").ListerWatcher(), example, cache.SharedIndexInformerOptions{}, lo, e.decodingClient)
	}
	a, ok := inf.(*adoptedInformer)
	if !ok || a.reflector == nil {
		e.t.Fatalf("%s built %T, not steadywatch's informer", path, inf)
	}
	r := a.reflector
	ts := traceStore{Store: r.objects, e: e}
	r.store, r.objects = ts, ts
	r.o.Reflector.Backoff = policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}.WithDefaults(policy.DefaultReflectorBackoff())
	r.backoff, r.regressBackoff = r.o.Backoff.New(), r.o.Backoff.New()
	r.backoff.Reset()
	r.regressBackoff.Reset()
	return r
}

// decodingClient is NewInformerFor's client for namespace: the scenario's
// client in "ns", the server's own for every namespace.
func (e *env) decodingClient(namespace string) (clients.Lister, error) {
	switch namespace {
	case "ns":
		return e.client, nil
	case "":
		return &faultClient{Client: e.srv.InNamespace(""), e: e}, nil
	}
	return nil, fmt.Errorf("no client for namespace %q in this test", namespace)
}

// metadataOf serves a client's objects as metadata-only objects.
type metadataOf struct{ Client }

func (m metadataOf) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := m.Client.List(ctx, o)
	if err != nil {
		return obj, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	lm, _ := meta.ListAccessor(obj)
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue(), RemainingItemCount: lm.GetRemainingItemCount()}}
	for _, it := range items {
		out.Items = append(out.Items, *partial(it))
	}
	return out, nil
}

func (m metadataOf) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := m.Client.Watch(ctx, o)
	if err != nil {
		return w, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type != watch.Error {
			ev.Object = partial(ev.Object)
		}
		return ev, true
	}), nil
}

func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	m, err := meta.Accessor(obj)
	if err != nil {
		return &metav1.PartialObjectMetadata{}
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: m.GetNamespace(), Name: m.GetName(), ResourceVersion: m.GetResourceVersion(), Labels: m.GetLabels(), Annotations: m.GetAnnotations()}}
}

func (e *env) store() cache.ReflectorStore {
	return traceStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), e: e}
}

func (e *env) outcome(format string, args ...any) {
	e.mu.Lock()
	e.outcomes = append(e.outcomes, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// list calls lw.List as client-go does and records the outcome.
func (e *env) list(lw cache.ListerWatcherWithContext, o metav1.ListOptions) {
	e.listWithin(lw, o, 10*time.Second)
}

func (e *env) listWithin(lw cache.ListerWatcherWithContext, o metav1.ListOptions, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	obj, err := lw.ListWithContext(ctx, o)
	if err != nil {
		e.outcome("list failed: %s", errClass(err))
		return
	}
	m, _ := meta.ListAccessor(obj)
	e.outcome("list: %d items at %s", meta.LenList(obj), m.GetResourceVersion())
}

// watch opens a watch as client-go does and reads it until it closes,
// until stop says so, or for d; it records what it saw.
func (e *env) watch(lw cache.ListerWatcherWithContext, o metav1.ListOptions, d time.Duration, stop func(watch.Event) bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := lw.WatchWithContext(ctx, o)
	if err != nil {
		e.outcome("watch refused: %s", errClass(err))
		return
	}
	defer w.Stop()
	seen := map[watch.EventType]int{}
	t := time.NewTimer(d)
	defer t.Stop()
	end := "open when the test stopped reading"
read:
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				end = "closed"
				break read
			}
			seen[ev.Type]++
			if ev.Type == watch.Error {
				end = "error " + string(apierrors.ReasonForError(apierrors.FromObject(ev.Object)))
				break read
			}
			if stop != nil && stop(ev) {
				end = "stopped by the test"
				break read
			}
		case <-t.C:
			break read
		}
	}
	e.outcome("watch: %v, %s", seen, end)
}

func errClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context deadline"
	case errors.Is(err, lister.ErrStreamingListUnsupported):
		return "streaming list unsupported"
	}
	return engine.Classify(err).String()
}

// holdGate takes the gate's only slot until the returned function is called.
func (e *env) holdGate() (release func()) {
	release, err := e.gate.Acquire(context.Background(), "holder", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return release
}

// run runs r until cond or for d, then stops it and waits for Run to return.
func (e *env) run(r *Reflector, cond func() bool, d time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	e.waitFor(cond, d)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		e.t.Fatal("Run did not return within 5s of cancel")
	}
}

// within is how long this run waits for the effect its scenario looks for:
// effectBound in the run expected to show it (the one with the field set
// when whenSet, the base runs otherwise), quiet in the other, where only
// the effect's absence can be seen.
func (e *env) within(whenSet bool) time.Duration {
	if e.set == whenSet {
		return effectBound
	}
	return quiet
}

// waitFor polls cond (a deadline-bounded poll) and returns its last value.
func (e *env) waitFor(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// countListSent: the streaming-list count read was sent (a MostRecent
// limit=1 list; the other limit=1 lists, such as lister.WrapDecoding's
// Exact scope check, are not it).
func (e *env) countListSent() bool {
	for _, q := range e.srv.Requests() {
		// (NewInformerFor's every-namespace limit=1 list is its scope check.)
		if isCountList(q) {
			return true
		}
	}
	return false
}

// scopeCheckSent: lister.WrapDecoding's scope check was sent (a limit=1
// list at a resourceVersion, without resourceVersionMatch).
func (e *env) scopeCheckSent() bool {
	for _, q := range e.srv.Requests() {
		if q.Verb == "list" && q.Options.Limit == 1 && q.Options.ResourceVersion != "" && q.Options.ResourceVersionMatch == "" {
			return true
		}
	}
	return false
}

func (e *env) exactListSent() bool {
	for _, q := range e.srv.Requests() {
		if q.Verb == "list" && q.Served == "Exact" {
			return true
		}
	}
	return false
}

// relistSemantics: how the lists after the first sync were served.
func (e *env) relistSemantics() []string {
	e.mu.Lock()
	n := len(e.frozen)
	e.mu.Unlock()
	set := map[string]bool{}
	for _, q := range e.srv.Requests()[n:] {
		if q.Verb == "list" {
			set[q.Served] = true
		}
	}
	return sortedKeys(set)
}

func (e *env) onReplace() {
	if e.replaces.Add(1) == 1 {
		e.mu.Lock()
		e.frozen = e.srv.Requests()
		e.mu.Unlock()
		e.rec.freeze()
	}
}

// withCountList adds to the requests of a first sync made by a streaming
// list the count list (limit=1) sent beside that stream, when it answered
// after the sync: it belongs to the sync, only its timing varies.
func withCountList(frozen, all []steadywatchtest.Request) []steadywatchtest.Request {
	streamed := false
	for _, q := range frozen {
		if isCountList(q) {
			return frozen // already in
		}
		streamed = streamed || (q.Options.SendInitialEvents != nil && *q.Options.SendInitialEvents)
	}
	if !streamed {
		return frozen
	}
	for _, q := range all[len(frozen):] {
		if isCountList(q) {
			return append(slices.Clone(frozen), q)
		}
	}
	return frozen
}

// isCountList: q is the streaming-list count read (a MostRecent limit=1
// list in the informer's namespace), not another limit=1 list such as
// NewInformerFor's or WrapDecoding's scope checks.
func isCountList(q steadywatchtest.Request) bool {
	return q.Verb == "list" && q.Namespace == "ns" && q.Options.Limit == 1 && q.Options.ResourceVersion == "" && q.Options.Continue == ""
}

// trace is what a run observed: the requests and metrics (a reflector's up
// to its first sync, later ones depend on timing), then the outcomes.
func (e *env) trace() string {
	e.mu.Lock()
	reqs := e.frozen
	e.mu.Unlock()
	if e.replaces.Load() == 0 {
		reqs = e.srv.Requests()
	} else {
		reqs = withCountList(reqs, e.srv.Requests())
	}
	var lines []string
	for _, q := range reqs {
		o := q.Options
		sie := o.SendInitialEvents != nil && *o.SendInitialEvents
		lines = append(lines, fmt.Sprintf("%s %s ns=%s rv=%q match=%q limit=%d continue=%v label=%q field=%q sendInitialEvents=%v code=%d",
			q.Verb, q.Served, q.Namespace, o.ResourceVersion, o.ResourceVersionMatch, o.Limit, o.Continue != "", o.LabelSelector, o.FieldSelector, sie, q.Code))
	}
	sort.Strings(lines)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("request " + l + "\n")
	}
	for _, l := range e.rec.lines() {
		b.WriteString("metric " + l + "\n")
	}
	e.mu.Lock()
	for _, l := range e.outcomes {
		b.WriteString("outcome " + l + "\n")
	}
	e.mu.Unlock()
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// traceStore counts Replace and Resync calls.
type traceStore struct {
	cache.Store
	e *env
}

func (s traceStore) Replace(items []any, rv string) error {
	err := s.Store.Replace(items, rv)
	s.e.onReplace()
	return err
}

func (s traceStore) Resync() error { s.e.resyncs.Add(1); return s.Store.Resync() }

// Bookmark ends a list that filled the store object by object (a sync, as
// a Replace is for a queue).
func (s traceStore) Bookmark(rv string) { s.Store.Bookmark(rv); s.e.onReplace() }

// faultClient is the server's client with faults the in-memory server does
// not have: every plain watch failing with watchErr, and MostRecent lists
// served older than the store once it synced (staleAfterSync).
type faultClient struct {
	Client
	e              *env
	watchErr       error
	staleAfterSync bool
}

func (c *faultClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.e.sawBound(ctx)
	obj, err := c.Client.List(ctx, o)
	if err == nil && c.staleAfterSync && c.e.replaces.Load() > 0 && o.ResourceVersion == "" && o.Continue == "" {
		if m, merr := meta.ListAccessor(obj); merr == nil {
			m.SetResourceVersion("1")
		}
	}
	return obj, err
}

func (c *faultClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	c.e.sawBound(ctx)
	if c.watchErr != nil && (o.SendInitialEvents == nil || !*o.SendInitialEvents) {
		return nil, c.watchErr
	}
	return c.Client.Watch(ctx, o)
}

// sawBound records the bound a request is sent with
// (policy.Policy.ResponseTimeout, on its context).
func (e *env) sawBound(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bounds == nil {
		e.bounds = map[string]bool{}
	}
	e.bounds[wirewait.BoundFrom(ctx, 0).String()] = true
}

func (e *env) requestBounds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.bounds)
}

// boundRecorder is a compat.Server that records the bound of the context
// the executor asks it with: the context its requests are sent under.
type boundRecorder struct {
	compat.Server
	e *env
}

func (b boundRecorder) Capabilities(ctx context.Context) capability.Capabilities {
	b.e.sawBound(ctx)
	return b.Server.Capabilities(ctx)
}

var (
	recordBounds = func(e *env, o *lister.Options) {
		o.Server = boundRecorder{Server: capability.Static(capability.Capabilities{}), e: e}
	}
	shortResponseTimeout = func(_ *env, o *lister.Options) { o.ResponseTimeout = 5 * time.Second }
)

// traceRecorder keeps every distinct metric call (with its labels) except
// the timestamps of ResourceVersionAdvanced; after freeze, later calls are
// kept apart.
type traceRecorder struct {
	metricsnop.Nop // the methods not recorded here
	mu             sync.Mutex
	set            map[string]bool
	frozen         bool
	restarts       map[string]bool
}

func (r *traceRecorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		return
	}
	if r.set == nil {
		r.set = map[string]bool{}
	}
	r.set[fmt.Sprintf(format, args...)] = true
}

func (r *traceRecorder) freeze() { r.mu.Lock(); r.frozen = true; r.mu.Unlock() }

func (r *traceRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.set)
}

func (r *traceRecorder) restartReasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.restarts)
}

func (r *traceRecorder) List(name, sem, out string) { r.add("List %s %s %s", name, sem, out) }
func (r *traceRecorder) Fallback(name, reason string) {
	r.add("Fallback %s %s", name, reason)
}
func (r *traceRecorder) Relist(name, cause string) { r.add("Relist %s %s", name, cause) }
func (r *traceRecorder) WatchRestart(name, reason string) {
	r.mu.Lock()
	if r.restarts == nil {
		r.restarts = map[string]bool{}
	}
	r.restarts[reason] = true
	r.mu.Unlock()
	r.add("WatchRestart %s %s", name, reason)
}
func (r *traceRecorder) Bookmark(name string)                      { r.add("Bookmark %s", name) }
func (r *traceRecorder) Items(name string, _ int)                  { r.add("Items %s", name) }
func (r *traceRecorder) ResourceVersionAdvanced(string, time.Time) {}
func (r *traceRecorder) ConsistencyCheck(name, result string) {
	r.add("ConsistencyCheck %s %s", name, result)
}
func (r *traceRecorder) Transition(name, from, to, reason string) {
	r.add("Transition %s %s>%s %s", name, from, to, reason)
}
func (r *traceRecorder) ListGateWait(name string, _ time.Duration) { r.add("ListGateWait %s", name) }
func (r *traceRecorder) ListGateShared(name string)                { r.add("ListGateShared %s", name) }
func (r *traceRecorder) ListGateOverdue(name string)               { r.add("ListGateOverdue %s", name) }

func withRV(o metav1.ListOptions, rv string) metav1.ListOptions { o.ResourceVersion = rv; return o }
