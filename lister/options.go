package lister

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/metrics"
)

// Defaults of Options: the values Resolve gives a zero field.
const (
	DefaultPageSize     int64 = 500
	DefaultMaxPageBytes int64 = 16 << 20
	DefaultStallTimeout       = 3 * time.Minute
	DefaultMaxRequests        = 64
)

// Options configures a Lister, and every adoption path built on one: the
// drop-in ListerWatcher (NewListerWatcher, Wrap), the informer constructors
// of package reflector, and reflector.New (as reflector.Options.Lister, the
// only place the reflector takes these settings from). The zero value is a
// safe default. Each path resolves the derived values (Resource, Name, the
// capability scope) once, with Resolve; a path either honours a field or
// rejects it with an error (reflector.Options.Validate): none is ignored.
type Options struct {
	// Server is what is known about the apiserver (compat.Detector.ForConfig).
	// Nil: learn from behaviour only. The lister starts with
	// Unknown support, sends resourceVersionMatch (the Match wire form) and
	// verifies every answer; what it observes is kept for this Lister.
	// reflector.New streams lists only where Server says the server supports
	// them, so give it a Detector's Server to use streaming lists there.
	Server compat.Server
	// Policy configures the fallbacks; the zero value is fallback's safe
	// default. Its MaxRetryAfter also caps every Retry-After reflector.New
	// honours between its own attempts.
	Policy fallback.Policy
	// PageSize is the limit the executor uses when it must choose one: rule 2
	// (an Exact list retried with a limit) and Exact on a server that ignores
	// resourceVersionMatch. Default DefaultPageSize (500, client-go's pager
	// default). It does not paginate queries on its own: Query.Limit 0 means
	// one unpaginated request; use Query.WithLimit for bounded memory.
	// reflector.New also uses it as the page size of its MostRecent, Any and
	// Exact lists; there a negative PageSize means unpaginated lists (one
	// response holds everything: fewer round trips, unbounded memory on both
	// sides), and the executor's own limit stays 500.
	PageSize int64
	// MaxPageSize, when larger than a paginated query's limit, makes each
	// continuation page ask for twice the previous page's limit, up to
	// MaxPageSize objects: 10,000 objects at limit 500 take 5 requests
	// instead of 20. Fewer requests matter because client-go throttles each
	// REST client on its own side (rest.Config.QPS and Burst: 5 requests a
	// second after a burst of 10 unless set), and a paginated list of a
	// large collection otherwise spends most of its time waiting for that
	// limiter. The trade-off: a page costs the apiserver (and this client)
	// memory in proportion to its size, so MaxPageSize (and MaxPageBytes)
	// bound it. Default 0: every page asks for the query's own limit (a
	// caller's WithLimit(500) means pages of at most 500). reflector.New
	// defaults it to DefaultMaxPageSizeFactor x PageSize; negative: every
	// page asks for the query's own limit there too.
	MaxPageSize int64
	// MaxPageBytes bounds that growth in bytes: a continuation page asks
	// for more objects than the previous one only while the previous page's
	// objects (their encoded size, sampled) say the next page stays within
	// MaxPageBytes. Large objects then keep the query's own limit. The
	// trade-off: the apiserver holds each page in memory while it builds it,
	// so larger pages cost it more heap, most of all without its watch cache
	// (docs/benchmarks.md measures it). Default DefaultMaxPageBytes (16 MiB:
	// 4000 objects of 4 KiB); negative: bounded by MaxPageSize only.
	MaxPageBytes int64
	// Metrics receives one List per call and one Fallback per event (and,
	// on reflector.New, its transitions). Default metrics.Nop.
	Metrics metrics.Recorder
	// Resource is the group/version/resource listed. It scopes what is
	// learned about the server to that API group/version
	// (an aggregated API or a CRD that ignores a
	// parameter says nothing about core resources) and names logs and
	// metrics. Default: derived from the example object where the path has
	// one (ResourceOf: the informer constructors, reflector.New); else
	// unknown (evidence is host-wide). Wrap and NewListerWatcher cannot
	// derive it: set it there.
	Resource schema.GroupVersionResource
	// Name labels logs and metrics. Default: Resource as "v1/configmaps" or
	// "apps/v1/deployments"; else the example object's Go type (e.g.
	// "*v1.Widget") where the path has one; else "lister". Keep it
	// low-cardinality.
	Name string
	// LabelSelector and FieldSelector are sent with every request: each
	// list page, retry and fallback, each watch and streaming list. Where
	// client-go's own ListOptions carry a selector too (a factory's
	// TweakListOptions), both apply (they are joined with ",", which
	// selects objects matching both).
	LabelSelector, FieldSelector string
	// LastObservedRV, if set, returns the newest resourceVersion the caller has
	// observed (e.g. a reflector's last bookmark). Rule 1 and list restarts use
	// it as the newer resourceVersion when it is newer than the requested one
	// and has not been tried yet; otherwise they send a cheap MostRecent list
	// with limit=1 and use its ListMeta.resourceVersion (always available: a
	// quorum read of at most one item). reflector.New owns it (its
	// LastSyncResourceVersion) and rejects one set by the caller.
	LastObservedRV func() string
	// InitialEventsTimeout bounds the quiet time of a streaming list
	// (sendInitialEvents=true) before its k8s.io/initial-events-end bookmark
	// while the number of initial events is unknown; while a known count
	// (ExpectedInitialEvents) is partly delivered, or not started on a
	// stream from MostRecent (where even a server that ignores
	// sendInitialEvents sends ADDED events), the bound is
	// DefaultInitialEventsBeforeCountFactor times it (the server is still
	// sending, or slow to start: not a lost bookmark); once every expected event
	// arrived, the bound is DefaultInitialEventsAfterCount. When it passes, the server is taken not
	// to stream lists (compat is told so) and the streaming list is
	// abandoned: the drop-in ListerWatcher ends the watch with an error and
	// client-go falls back to a list; reflector.New lists. Default
	// DefaultInitialEventsTimeout (10s), the same for every streaming list
	// of the SDK (AwaitInitialEvents). Shorter: faster recovery from a wrong
	// capability; longer: tolerates a server that pauses mid-stream.
	InitialEventsTimeout time.Duration
	// DisableStreamingList turns off streaming lists (sendInitialEvents)
	// wherever the server supports them. On the drop-in ListerWatcher,
	// client-go's informers list instead: the ListerWatcher declares it does
	// not support streaming lists (IsWatchListSemanticsUnSupported, read once
	// when client-go builds its reflector), and refuses a streaming watch
	// sent anyway (ErrStreamingListUnsupported, so client-go lists).
	// reflector.New lists instead. Default false: stream where supported.
	// The trade-off: with the apiserver's watch cache a streaming list costs
	// it about what a list does; without it for the resource
	// (--watch-cache=false, or --watch-cache-sizes=<resource>#0) every
	// streaming list reads the whole collection from etcd into the
	// apiserver's memory at once, where paginated lists read it a page at a
	// time (docs/benchmarks.md measures it). Set it for resources the watch
	// cache does not hold.
	DisableStreamingList bool
	// DisableInitialEventsCount turns off the one limit=1 list the
	// streaming-list guard sends beside each streaming list to learn how
	// many objects to expect (ExpectedInitialEvents). Default false: the
	// count lets a dropped or stripped end bookmark be found
	// DefaultInitialEventsAfterCount (1.5s) after the last object instead
	// of after InitialEventsTimeout, for one cheap request (a consistent read served from the watch cache on 1.31+, a
	// quorum read of at most one object before). Filtered lists (selectors)
	// never send it: the server does not count their remaining items.
	DisableInitialEventsCount bool
	// StallTimeout ends a watch that delivered no event and no bookmark for
	// this long: through the drop-in ListerWatcher, client-go's reflector
	// then watches again from its resourceVersion; reflector.New restarts
	// its watch from the last resourceVersion. Neither relists. It must
	// exceed the server's bookmark interval (about a minute), else quiet
	// watches restart needlessly. The watch ends StallTimeout after the last
	// event, and at most min(StallTimeout/4, 1s) later (it is checked on a
	// tick, not per event). Default DefaultStallTimeout (3m); negative
	// disables it (a half-open connection is then only noticed at the watch
	// timeout).
	StallTimeout time.Duration
	// ListGate, shared among the Listers, ListerWatchers and reflectors of a
	// process that read from one apiserver, bounds how many collection reads
	// (list requests that may return more than one object, and streaming
	// lists up to their initial-events-end bookmark) they have in flight at
	// once; the others wait in arrival order; and it sends identical list
	// requests of the same client once, each reader getting its own copy
	// (see listgate.Gate for when, and for the trade-off: the apiserver's work
	// against the later informers' sync time, and for its hold bound, after
	// which a stuck read stops holding the others back). A
	// reflector.Options.List of the caller's own is not gated; its
	// streaming lists are. Default nil: no bound and nothing shared, as
	// client-go.
	ListGate *listgate.Gate
	// MaxRequests bounds the requests of one list call that deliver no page
	// (retries, fallbacks, restarts), a safety net over the policy's budgets.
	// The pages of a paginated list are not counted: a list of any size
	// completes. Default 64.
	MaxRequests int
	// Transform, if set, is applied to every object before anything keeps
	// it: each list item (every page, retry and relist) and the object of
	// every ADDED, MODIFIED and DELETED watch event, streaming lists
	// included, on every adoption path (reflector.New rejects it together
	// with a List of the caller's own, which it cannot reach). Over the
	// SDK's own adapters (FromClientset, FromRESTClient, FromDynamicConfig,
	// FromMetadataConfig, and so reflector.NewSharedInformerFactory) it runs on each
	// list item as soon as that item is decoded, so what it drops is garbage
	// before the next item is read and never held for the whole list; over a
	// client whose lists are read whole (FromFuncs, FromDynamic,
	// FromMetadata, Wrap) it runs on each item once the list arrived, so the
	// objects kept shrink but that list's own peak does not. Watch events
	// take one more hand-over between goroutines each.
	//
	// It has client-go's type (cache.TransformFunc): StripManagedFields is
	// one, and the same function can be given to an informer's SetTransform.
	// It may change the object it is given and return it, or return another
	// object of the same type; it must keep the object's name, namespace,
	// UID, resourceVersion, apiVersion and kind (the watch pipeline's
	// never-older filter, the store's key and a reflector's kind check need
	// them): cleared ones are restored, changed ones fail.
	// A failure (an error, nil, another type, a changed identity) is a
	// *TransformError, logged and counted (reason "transform-failed"),
	// and nothing untransformed is kept in its place: the list fails, a
	// watch ends with TransformFailedEvent, and the informer lists again
	// after a backoff. On the drop-in paths, client-go's own transform
	// (SharedIndexInformer.SetTransform, an informer factory's
	// WithTransform, controller-runtime's cache.Options.DefaultTransform)
	// stays client-go's and runs after this one, when client-go queues each
	// object: both apply, this one first. steadywatch does not move
	// client-go's transform here because client-go allows one that changes
	// an object's type, which this one refuses; to have it run while
	// decoding, give the same function here instead. The trade-offs: lists of a
	// Lister with a Transform are never shared through a ListGate (another
	// reader's answer would carry its transform, or none), and
	// MaxPageBytes estimates pages from the transformed objects, so pages
	// of objects it shrinks grow larger on the wire. Default nil: objects
	// are kept as the server sent them.
	Transform cache.TransformFunc
}

// Resolve returns o with every default applied and the derived values
// resolved, as every adoption path does before it sends anything (New,
// NewListerWatcher and Wrap with no example; the informer constructors and
// reflector.New with theirs):
//
//   - Resource: when empty, ResourceOf(exampleObject) (nil: none).
//   - Name: when empty, Resource as "v1/configmaps"; else the example's Go
//     type ("*v1.Widget"); else "lister".
//   - Server: nil is a server with every capability unknown; a Detector's
//     Server is scoped to Resource's group/version.
//   - every other zero field: its documented default.
//
// Resolving resolved options again gives options that behave the same (a
// scoped Server is scoped again to the same group/version).
func (o Options) Resolve(exampleObject runtime.Object) Options {
	if o.Resource.Empty() && exampleObject != nil {
		o.Resource, _ = ResourceOf(exampleObject)
	}
	if o.Name == "" {
		switch {
		case !o.Resource.Empty():
			o.Name = ResourceName(o.Resource)
		case exampleObject != nil:
			o.Name = fmt.Sprintf("%T", exampleObject)
		default:
			o.Name = "lister"
		}
	}
	if o.Server == nil {
		o.Server = capability.Static(capability.Capabilities{})
	}
	if _, scoped := o.Server.(capability.ScopedServer); scoped && !o.Resource.Empty() {
		// Detector and Static servers keep evidence per group/version (a
		// view scoped again to the same group/version is the same scope).
		o.Server = capability.ForGroupVersion(o.Server, o.Resource.GroupVersion())
	}
	o.Policy = o.Policy.WithDefaults()
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.MaxPageBytes == 0 {
		o.MaxPageBytes = DefaultMaxPageBytes
	}
	o.Metrics = metricsnop.Or(o.Metrics)
	if o.InitialEventsTimeout <= 0 {
		o.InitialEventsTimeout = DefaultInitialEventsTimeout
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	return o
}

// withSelectors returns base with o's selectors joined to its own (both
// apply: "," selects objects matching both).
func (o Options) withSelectors(base metav1.ListOptions) metav1.ListOptions {
	base.LabelSelector = joinSelectors(base.LabelSelector, o.LabelSelector)
	base.FieldSelector = joinSelectors(base.FieldSelector, o.FieldSelector)
	return base
}

func joinSelectors(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	}
	return a + "," + b
}
