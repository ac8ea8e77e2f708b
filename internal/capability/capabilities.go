package capability

import (
	"context"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Support says whether a server supports a behaviour, as far as steadywatch knows.
type Support int

const (
	// Unknown means neither the version nor observed behaviour has told us yet.
	// Callers treat Unknown conservatively (as "may ignore it").
	Unknown Support = iota
	// Yes means the server honours the behaviour.
	Yes
	// No means the server ignores or rejects the behaviour.
	No
)

func (s Support) String() string {
	switch s {
	case Yes:
		return "yes"
	case No:
		return "no"
	default:
		return "unknown"
	}
}

// Capability names one behaviour steadywatch decides on.
type Capability string

const (
	// ResourceVersionMatch: the server honours the resourceVersionMatch list parameter (>= 1.19).
	ResourceVersionMatch Capability = "resourceVersionMatch"
	// WatchBookmarks: the server sends BOOKMARK events when asked (allowWatchBookmarks, GA in 1.17).
	WatchBookmarks Capability = "watchBookmarks"
	// StreamingList: the server honours sendInitialEvents and ends the initial events with a
	// bookmark annotated k8s.io/initial-events-end (WatchList; gate on by default in 1.32 and 1.34+).
	StreamingList Capability = "streamingList"
	// ConsistentListFromCache: a MostRecent list is served from the watch cache (>= 1.31).
	ConsistentListFromCache Capability = "consistentListFromCache"
	// TooLargeRVMessage: the server reports "too large resource version" only in the
	// error message, without the ResourceVersionTooLarge cause (before v1.18.6).
	// Its support is mirrored in Capabilities.TooLargeRVByMessage.
	TooLargeRVMessage Capability = "tooLargeRVByMessage"
	// WatchCacheProgress: the server's watch cache advances on etcd progress
	// notifications, so a resourceVersion reached by writes of other
	// resources is reached by a quiet resource's watch cache too (KEP-1904,
	// EfficientWatchResumption: beta and on by default in v1.21, GA in
	// v1.24). Without them (No) a NotOlderThan list at such a version is
	// answered "too large" until the resource itself is written: waiting
	// for the cache is futile.
	WatchCacheProgress Capability = "watchCacheProgress"
)

// AllCapabilities lists the capabilities FromVersion decides, in the order
// Capabilities.String prints them.
var AllCapabilities = []Capability{ResourceVersionMatch, WatchBookmarks, StreamingList, ConsistentListFromCache, TooLargeRVMessage, WatchCacheProgress}

// Basis says what a belief rests on.
type Basis int

const (
	// BasisNone: nothing is known (the support is Unknown).
	BasisNone Basis = iota
	// BasisVersion: the server's version settles it; the behaviour is fixed in that release.
	BasisVersion
	// BasisGateDefault: the version's feature-gate default. A cluster may run with the gate
	// flipped, so the belief is likely but must be verified: callers should be ready for the
	// opposite answer and Observe it.
	BasisGateDefault
	// BasisObserved: the server was seen doing it (outranks the version until it expires).
	BasisObserved
	// BasisStatic: declared by the user through Static.
	BasisStatic
)

func (b Basis) String() string {
	switch b {
	case BasisVersion:
		return "version"
	case BasisGateDefault:
		return "gate-default"
	case BasisObserved:
		return "observed"
	case BasisStatic:
		return "static"
	default:
		return "none"
	}
}

// Capabilities is what steadywatch believes about one apiserver.
type Capabilities struct {
	// Version is the parsed /version of the server; zero when unknown.
	Version Version
	// Support per capability; a missing key means Unknown.
	Support map[Capability]Support
	// TooLargeRVByMessage is true for servers (1.17.0-1.18.5) that report a
	// "too large resource version" only in the error message, without the
	// ResourceVersionTooLarge cause.
	TooLargeRVByMessage bool
	// Reasons says, per capability, why we believe what we believe, e.g.
	// "version v1.18.19" or "observed: Exact list at 10 served at 12".
	Reasons map[Capability]string
	// Basis says, per capability, what the belief rests on; a missing key means BasisNone.
	// BasisGateDefault marks "likely, but verify" beliefs such as StreamingList on v1.34.
	Basis map[Capability]Basis
	// GroupVersion is the scope that answered: the group/version of a view from
	// ForGroupVersion, zero for the host-wide scope (the unscoped Server).
	GroupVersion schema.GroupVersion
}

// Get returns the support for c (Unknown when not set).
func (c Capabilities) Get(k Capability) Support { return c.Support[k] }

// Tentative reports whether the belief about k rests only on a feature-gate
// default, so the server may behave otherwise: use it, but verify and Observe.
func (c Capabilities) Tentative(k Capability) bool { return c.Basis[k] == BasisGateDefault }

// Clone returns a deep copy (the maps are not shared).
func (c Capabilities) Clone() Capabilities {
	c.Support = maps.Clone(c.Support)
	c.Reasons = maps.Clone(c.Reasons)
	c.Basis = maps.Clone(c.Basis)
	return c
}

// String is a one-line summary for logs, e.g.
// "v1.34.1 resourceVersionMatch=yes watchBookmarks=yes streamingList=yes(verify) ...".
// Capabilities outside AllCapabilities are appended in name order.
func (c Capabilities) String() string {
	var b strings.Builder
	if c.Version.IsZero() {
		b.WriteString("version=unknown")
	} else {
		b.WriteString(c.Version.String())
	}
	write := func(k Capability) {
		b.WriteString(" ")
		b.WriteString(string(k))
		b.WriteString("=")
		b.WriteString(c.Get(k).String())
		switch c.Basis[k] {
		case BasisGateDefault:
			b.WriteString("(verify)")
		case BasisObserved:
			b.WriteString("(observed)")
		}
	}
	known := make(map[Capability]bool, len(AllCapabilities))
	for _, k := range AllCapabilities {
		known[k] = true
		write(k)
	}
	var extra []string
	for k := range c.Support {
		if !known[k] {
			extra = append(extra, string(k))
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		write(Capability(k))
	}
	return b.String()
}

// Observation is something a client saw a server do, which outranks what its version says.
// A later observation of the same capability replaces an earlier one at once, even when
// it contradicts it (an HA pair mid-upgrade answers differently from request to request).
// An observation with Support Unknown forgets what was observed for that capability.
type Observation struct {
	Capability Capability
	Support    Support
	// Detail is a short human-readable explanation, kept as the capability's reason.
	Detail string
}

// Server is one apiserver as the lister and reflector see it: either the
// host-wide scope (what Detector.For, Detector.ForConfig and Static return) or
// the view of one API group/version (what ForGroupVersion returns).
//
// Behaviour is recorded where it was seen: a caller that lists or watches one
// resource should Observe through ForGroupVersion(server, its group/version),
// so that what one group's server does (an aggregated apiserver, a CRD) does
// not decide for the others. Observe on the host-wide scope is evidence about
// the whole host: it applies to every view of the host that has no live
// observation of its own for that capability (see ForGroupVersion for the
// precedence).
type Server interface {
	// Capabilities returns the current beliefs about the server in this scope.
	// It may contact the server (e.g. GET /version) the first time or after
	// expiry; it never fails: on error it returns conservative (Unknown)
	// capabilities.
	Capabilities(ctx context.Context) Capabilities
	// Observe records observed behaviour in this scope; it outranks the version
	// until it expires (DetectorOptions.ObservationTTL).
	Observe(o Observation)
}
