package compat

import "context"

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
)

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
}

// Get returns the support for c (Unknown when not set).
func (c Capabilities) Get(k Capability) Support { return c.Support[k] }

// Observation is something a client saw a server do, which outranks what its version says.
type Observation struct {
	Capability Capability
	Support    Support
	// Detail is a short human-readable explanation, kept as the capability's reason.
	Detail string
}

// Server is one apiserver as the lister and reflector see it.
type Server interface {
	// Capabilities returns the current beliefs about the server. It may contact
	// the server (e.g. GET /version) the first time or after expiry; it never fails:
	// on error it returns conservative (Unknown) capabilities.
	Capabilities(ctx context.Context) Capabilities
	// Observe records observed behaviour; it outranks the version until it expires.
	Observe(o Observation)
}
