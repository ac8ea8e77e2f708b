package lister

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/metrics"
)

// DefaultStallTimeout is Options.StallTimeout's default.
const DefaultStallTimeout = 3 * time.Minute

// DefaultMaxPageBytes is Options.MaxPageBytes's default.
const DefaultMaxPageBytes = 16 << 20

// Options configures a Lister. The zero value is a safe default.
type Options struct {
	// Server is what is known about the apiserver (compat.Detector.ForConfig,
	// compat.Static). Nil: learn from behaviour only. The lister starts with
	// Unknown support, sends resourceVersionMatch (the Match wire form) and
	// verifies every answer; what it observes is kept for this Lister.
	Server compat.Server
	// Policy configures the fallbacks; the zero value is fallback's safe default.
	Policy fallback.Policy
	// PageSize is the limit the executor uses when it must choose one: rule 2
	// (an Exact list retried with a limit) and Exact on a server that ignores
	// resourceVersionMatch. Default 500. It does not paginate queries on its
	// own: Query.Limit 0 means one unpaginated request; use Query.WithLimit for
	// bounded memory.
	PageSize int64
	// MaxPageSize, when larger than a paginated query's limit, makes each
	// continuation page ask for twice the previous page's limit, up to
	// MaxPageSize objects: 10,000 objects at limit 500 take 5 requests
	// instead of 20. Fewer requests matter because client-go throttles each
	// REST client on its own side (rest.Config.QPS and Burst: 5 requests a
	// second after a burst of 10 unless set), and a paginated list of a
	// large collection otherwise spends most of its time waiting for that
	// limiter. The trade-off: a page costs the apiserver (and this client)
	// memory in proportion to its size, so MaxPageSize bounds it. Default 0:
	// every page asks for the query's own limit (a caller's WithLimit(500)
	// means pages of at most 500). reflector.New sets it (see
	// reflector.Options.MaxPageSize).
	MaxPageSize int64
	// MaxPageBytes bounds that growth in bytes: a continuation page asks
	// for more objects than the previous one only while the previous page's
	// objects (their encoded size, sampled) say the next page stays within
	// MaxPageBytes. Large objects then keep the query's own limit: 4000
	// ConfigMaps of 50 KiB are a 195 MiB page, which the apiserver holds in
	// memory while it builds it (without its watch cache, 8 reflector.New
	// paginating such a collection cost it +3.1-3.5 GiB heap with growing
	// pages against +1.1-1.3 GiB with pages of 500; docs/benchmarks.md).
	// Default DefaultMaxPageBytes (16 MiB: 4000 objects of 4 KiB);
	// negative: bounded by MaxPageSize only.
	MaxPageBytes int64
	// Metrics receives one List per call and one Fallback per event. Default metrics.Nop.
	Metrics metrics.Recorder
	// Resource is the group/version/resource listed (ResourceOf derives it
	// from an example object). It scopes what the lister learns about the
	// server to that API group/version (compat.ForGroupVersion: an aggregated
	// API or a CRD that ignores a parameter says nothing about core
	// resources) and names logs and metrics. Default: unknown (evidence is
	// host-wide, Name "lister").
	Resource schema.GroupVersionResource
	// Name labels logs and metrics. Default: Resource as "v1/configmaps" or
	// "apps/v1/deployments", else "lister". Keep it low-cardinality.
	Name string
	// LabelSelector and FieldSelector are sent with every request.
	LabelSelector, FieldSelector string
	// LastObservedRV, if set, returns the newest resourceVersion the caller has
	// observed (e.g. a reflector's last bookmark). Rule 1 and list restarts use
	// it as the newer resourceVersion when it is newer than the requested one
	// and has not been tried yet; otherwise they send a cheap MostRecent list
	// with limit=1 and use its ListMeta.resourceVersion (always available: a
	// quorum read of at most one item).
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
	// to stream lists, the watch ends with an error and client-go falls back
	// to a list. Default DefaultInitialEventsTimeout (10s), the same for every
	// streaming list of the SDK (GuardInitialEvents).
	InitialEventsTimeout time.Duration
	// DisableStreamingList makes client-go's informers over this
	// ListerWatcher list instead of streaming their initial list
	// (sendInitialEvents), wherever the server supports it: the
	// ListerWatcher declares it does not support streaming lists
	// (IsWatchListSemanticsUnSupported, read once when client-go builds its
	// reflector), and refuses a streaming watch sent anyway
	// (ErrStreamingListUnsupported, so client-go lists). Default false:
	// stream where supported. With the apiserver's watch cache a streaming
	// list costs it about what a list does; without it for the resource
	// (--watch-cache=false, or --watch-cache-sizes=<resource>#0) every
	// streaming list reads the whole collection from etcd into the
	// apiserver's memory at once: 8 informers starting on 244 MiB cost a
	// v1.37.2 apiserver about 9 GiB more heap than paginated lists did
	// (docs/benchmarks.md, P5). Set it for resources the watch cache does
	// not hold. reflector.Options.DisableStreamingList is the same for
	// reflector.New.
	DisableStreamingList bool
	// DisableInitialEventsCount turns off the one limit=1 list the
	// streaming-list guard sends beside each streaming list to learn how
	// many objects to expect (ExpectedInitialEvents). Default false: the
	// count lets a dropped or stripped end bookmark be found 2s after the
	// last object instead of after InitialEventsTimeout, for one cheap
	// request (a consistent read served from the watch cache on 1.31+, a
	// quorum read of at most one object before). Filtered lists (selectors)
	// never send it: the server does not count their remaining items.
	DisableInitialEventsCount bool
	// StallTimeout ends a watch served through ListerWatcher that delivered
	// no event and no bookmark for this long; client-go's reflector then
	// watches again from its resourceVersion (no relist). It must exceed the
	// server's bookmark interval (about a minute). The watch ends
	// StallTimeout after the last event, and at most min(StallTimeout/4, 1s)
	// later (it is checked on a tick, not per event). Default 3m (as
	// reflector.Options.StallTimeout); negative disables it.
	StallTimeout time.Duration
	// ListGate, shared among the Listers, ListerWatchers and reflectors of a
	// process that read from one apiserver, bounds how many collection reads
	// (list requests that may return more than one object, and streaming
	// lists up to their initial-events-end bookmark) they have in flight at
	// once; the others wait in arrival order; and it sends identical list
	// requests of the same client once, each reader getting its own copy
	// (see listgate.Gate for when, and for the trade-off: the apiserver's work
	// against the later informers' sync time, and for its hold bound, after
	// which a stuck read stops holding the others back). Default nil: no
	// bound and nothing shared, as client-go.
	ListGate *listgate.Gate
	// MaxRequests bounds the requests of one list call that deliver no page
	// (retries, fallbacks, restarts), a safety net over the policy's budgets.
	// The pages of a paginated list are not counted: a list of any size
	// completes. Default 64.
	MaxRequests int
}

func (o Options) withDefaults() Options {
	if o.Server == nil {
		o.Server = compat.Static(compat.Capabilities{})
	}
	if !o.Resource.Empty() {
		if _, scoped := o.Server.(compat.ScopedServer); scoped {
			// Detector and Static servers keep evidence per group/version; a
			// Server of the caller's own is used as given.
			o.Server = compat.ForGroupVersion(o.Server, o.Resource.GroupVersion())
		}
		if o.Name == "" {
			o.Name = ResourceName(o.Resource)
		}
	}
	o.Policy = o.Policy.WithDefaults()
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.MaxPageBytes == 0 {
		o.MaxPageBytes = DefaultMaxPageBytes
	}
	o.Metrics = metrics.OrNop(o.Metrics)
	if o.Name == "" {
		o.Name = "lister"
	}
	if o.InitialEventsTimeout <= 0 {
		o.InitialEventsTimeout = DefaultInitialEventsTimeout
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 64
	}
	return o
}
