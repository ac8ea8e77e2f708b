package lister

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/metrics"
)

// Defaults of the fields of Options (the field docs state them).
const (
	defaultPageSize     int64 = 500
	defaultMaxPageBytes int64 = 16 << 20
	defaultStallTimeout       = 3 * time.Minute
	defaultMaxRequests        = 64
)

// Options configures a Lister, and every adoption path built on one: the
// drop-in ListerWatcher (NewListerWatcher, Wrap), the informer constructors
// of package reflector, and reflector.New (as reflector.Options.Lister).
// The zero value is the safe default, and every field has the same default
// on every path. docs/configuration.md gives the trade-offs.
type Options struct {
	// Server is what is known about the apiserver (compat.Detector.ForConfig,
	// capability.Static). Default nil: learn from behaviour only; reflector.New
	// then does not stream lists until the server is known to support them.
	Server compat.Server
	// Metrics receives the lists, fallbacks and (reflector.New) transitions.
	// Default metrics.Nop.
	Metrics metrics.Recorder
	// Name labels logs and metrics; keep it low-cardinality. Default:
	// Resource as "v1/configmaps"; else the example object's Go type; else
	// "lister".
	Name string
	// Resource is the group/version/resource listed: it scopes what is
	// learned about the server (capability.ForGroupVersion) and names metrics.
	// Default: derived from the example object where the path has one
	// (ResourceOf); Wrap and NewListerWatcher cannot derive it: set it there.
	Resource schema.GroupVersionResource
	// LabelSelector and FieldSelector are sent with every list page, retry,
	// fallback, watch and streaming list, joined with "," to selectors the
	// caller's own ListOptions carry. Default "": everything.
	LabelSelector, FieldSelector string
	// PageSize is the limit of the lists the SDK paginates itself: rule 2,
	// Exact on a server that ignores resourceVersionMatch, and reflector.New's
	// lists (whose pages grow from it). A Query's own limit is the caller's
	// (Query.WithLimit). Default 500 (client-go's pager default).
	PageSize int64
	// MaxRetryAfter caps how long one Retry-After is honoured, here and
	// between a reflector's attempts: "Retry-After: 3600" waits this long,
	// not an hour. Default 10s. A client built without
	// fallback.NoHiddenRetries sleeps it inside client-go, uncapped.
	MaxRetryAfter time.Duration
	// ResponseTimeout bounds how long one request of the SDK's own clients
	// hears nothing: the wait for headers, then for each next bytes of a
	// list body (not the whole request). Default 70s (an apiserver answers
	// within its 60s --request-timeout); negative: no bound.
	ResponseTimeout time.Duration
	// InitialEventsTimeout is the quiet time a streaming list may have before
	// its initial-events-end bookmark while the object count is unknown (3x
	// that while a known count is not reached); past it the server is taken
	// not to stream lists and a list is sent instead. Default 10s.
	InitialEventsTimeout time.Duration
	// DisableStreamingList sends lists instead of streaming lists
	// (sendInitialEvents) even where the server supports them: set it for
	// resources the apiserver's watch cache does not hold. Default false.
	DisableStreamingList bool
	// StallTimeout ends a watch that delivered no event and no bookmark for
	// this long; the watch restarts from its resourceVersion (no relist). It
	// must exceed the server's bookmark interval (about a minute). Default
	// 3m; negative: never.
	StallTimeout time.Duration
	// ListGate, shared by the readers of one apiserver in a process, bounds
	// the collection reads in flight at once and sends identical lists once
	// (listgate.Gate). Default nil: no bound, nothing shared (client-go's
	// behaviour).
	ListGate *listgate.Gate
	// Transform, if set, is applied to every list item and watch object
	// before anything keeps it (while decoding, over the SDK's own clients),
	// on every path; it must keep the object's type and identity
	// (StripManagedFields is one). A failure is a *TransformError. Default
	// nil: objects are kept as the server sent them.
	Transform cache.TransformFunc

	// knobs are the settings no user sets (internal/knobs).
	knobs knobs.Lister
}

func init() {
	knobs.ListerOf = func(opts any) *knobs.Lister { return &opts.(*Options).knobs }
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
			o.Name = resourceName(o.Resource)
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
	k := &o.knobs
	if o.MaxRetryAfter != 0 {
		k.Policy.MaxRetryAfter = o.MaxRetryAfter
	}
	if o.ResponseTimeout != 0 {
		k.Policy.ResponseTimeout = o.ResponseTimeout
	}
	k.Policy = k.Policy.WithDefaults()
	o.MaxRetryAfter, o.ResponseTimeout = k.Policy.MaxRetryAfter, k.Policy.ResponseTimeout
	if o.PageSize <= 0 {
		o.PageSize = defaultPageSize
	}
	if k.MaxPageBytes == 0 {
		k.MaxPageBytes = defaultMaxPageBytes
	}
	o.Metrics = metricsnop.Or(o.Metrics)
	if o.InitialEventsTimeout <= 0 {
		o.InitialEventsTimeout = watchpipe.DefaultInitialEventsTimeout
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = defaultStallTimeout
	}
	if k.MaxRequests <= 0 {
		k.MaxRequests = defaultMaxRequests
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
