package vocab

import "strconv"

// WireForm says how a Query is spelled on the wire.
type WireForm int

const (
	// Match sends resourceVersionMatch (servers >= 1.19 honour it). The
	// default: when support is unknown steadywatch sends it and verifies
	// the answer (KEP-2523 "Backward Compatibility").
	Match WireForm = iota
	// Legacy spells the semantic without resourceVersionMatch, for servers
	// known to ignore it (KEP-2523 "the legacy behavior applies").
	Legacy
)

func (f WireForm) String() string {
	if f == Legacy {
		return "Legacy"
	}
	return "Match"
}

// DefaultLegacyExactLimit is the limit ListOptions(Legacy) puts on an Exact
// query that has none: legacy servers serve resourceVersion=N at exactly N
// only when a limit is set (KEP-2523: "if non-zero and Limit is set, the
// ResourceVersionMatchExact rule applies implicitly"); without one they
// would apply NotOlderThan.
const DefaultLegacyExactLimit int64 = 500

// Comparison is the result of comparing two resource versions.
type Comparison int

const (
	// Incomparable: at least one is not a decimal uint64 (resource versions
	// are opaque to clients; etcd-backed servers use decimal revisions).
	Incomparable Comparison = iota
	// Older: a < b.
	Older
	// Same: a == b (as strings).
	Same
	// Newer: a > b.
	Newer
)

func (c Comparison) String() string {
	switch c {
	case Older:
		return "older"
	case Same:
		return "same"
	case Newer:
		return "newer"
	default:
		return "incomparable"
	}
}

// CompareRV compares resource versions a and b as uint64 when both parse;
// equal strings are Same even when they do not parse.
func CompareRV(a, b string) Comparison {
	if a == b && a != "" {
		return Same
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return Incomparable
	}
	switch {
	case x < y:
		return Older
	case x > y:
		return Newer
	default:
		return Same
	}
}
