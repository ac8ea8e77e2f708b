package fallback

import "fmt"

// Semantic is one of the four list semantics of the API Concepts resource version table
// (API Concepts, "Semantics for get and list").
type Semantic int

const (
	// MostRecent: resourceVersion unset. Served at the most recent resource
	// version; consistent (a quorum read, or a consistent read from the watch
	// cache on servers that support it).
	MostRecent Semantic = iota
	// Any: resourceVersion "0". Any resource version may be served, possibly
	// much older than one the client has already seen. Cheapest.
	Any
	// NotOlderThan: resourceVersion N, served at N or newer.
	NotOlderThan
	// Exact: resourceVersion N, served at exactly N, or 410 Gone if N is no longer available.
	Exact
)

func (s Semantic) String() string {
	switch s {
	case MostRecent:
		return "MostRecent"
	case Any:
		return "Any"
	case NotOlderThan:
		return "NotOlderThan"
	case Exact:
		return "Exact"
	default:
		return fmt.Sprintf("Semantic(%d)", int(s))
	}
}

// Query is one list request with an explicit semantic. The zero value is a
// MostRecent, unpaginated list. lister.MostRecent, lister.Any,
// lister.NotOlderThan and lister.Exact build one.
type Query struct {
	// Semantic is the resource version semantic requested.
	Semantic Semantic
	// ResourceVersion is the N of NotOlderThan(N) and Exact(N); empty otherwise.
	ResourceVersion string
	// Limit is the page size; 0 means unpaginated.
	Limit int64
	// Continue is a continue token from a previous page. A query with a continue
	// token carries neither a resourceVersion nor a match (the token encodes them).
	Continue string
}

// WithLimit returns a copy of q with the page size set.
func (q Query) WithLimit(n int64) Query { q.Limit = n; return q }

// WithContinue returns a copy of q with a continue token set.
func (q Query) WithContinue(token string) Query { q.Continue = token; return q }

func (q Query) String() string {
	s := q.Semantic.String()
	if q.Semantic == NotOlderThan || q.Semantic == Exact {
		s += "(" + q.ResourceVersion + ")"
	}
	if q.Limit > 0 {
		s += fmt.Sprintf(" limit=%d", q.Limit)
	}
	if q.Continue != "" {
		s += " continue=<token>"
	}
	return s
}
