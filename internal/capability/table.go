package capability

import (
	"fmt"
	"math"
)

// Row is one line of the capability table: for servers whose version is in
// [Since, Until) the capability has the given support.
type Row struct {
	Capability Capability
	// Since is the first version the row applies to (inclusive).
	Since Version
	// Until is the first version the row no longer applies to; zero means no upper bound.
	Until   Version
	Support Support
	Basis   Basis
	// Reason is the human explanation copied into Capabilities.Reasons.
	Reason string
	// Source cites where the fact comes from, by public name: KEP-2523, the
	// Kubernetes API Concepts page, a Kubernetes source file, a GitHub issue or
	// PR, or this project's tests against real apiservers.
	Source string
}

func ver(major, minor, patch int) Version { return Version{Major: major, Minor: minor, Patch: patch} }

// Sources cited by the table.
const (
	srcKEP2523 = "KEP-2523, consistent resource version semantics " +
		"(https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/2523-consistent-resource-version-semantics): " +
		"resourceVersionMatch is new in v1.19, older servers ignore it; Kubernetes API Concepts, Resource versions " +
		"(https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions); k8s.io/apimachinery ListOptions.ResourceVersionMatch"
	srcReal118   = "this project's e2e suite against a real v1.18.19 apiserver (e2e/smoke: resourceVersionMatch and sendInitialEvents are silently ignored)"
	srcBookmarks = "kubernetes/enhancements#956 (WatchBookmark alpha 1.15, beta 1.16, GA 1.17 via kubernetes/kubernetes#83195); " +
		"Kubernetes API Concepts, Watch bookmarks (https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks)"
	srcWatchListGate = "k8s.io/apiserver pkg/features WatchList versioned specs (1.27 alpha off, 1.32 beta on, 1.33 beta off, 1.34 beta on); " +
		"Kubernetes API Concepts, Streaming lists (https://kubernetes.io/docs/reference/using-api/api-concepts/#streaming-lists)"
	srcWatchList422 = "k8s.io/apimachinery pkg/apis/meta/internalversion/validation ValidateListOptions (1.19-1.26 answer 422 to resourceVersionMatch on a watch; 1.27+ with WatchList off answer 422); " +
		"this project's compatibility matrix, docs/compatibility.md (v1.33.13 falls back)"
	srcCLFCGate = "k8s.io/apiserver pkg/features ConsistentListFromCache versioned specs (1.28 alpha off, 1.31 beta on, 1.34 GA locked)"
	srcKEP1904  = "KEP-1904, efficient watch resumption " +
		"(https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/1904-efficient-watch-resumption): " +
		"without etcd progress notifications a resource's watch cache stays at its own last write while other resources move the resourceVersion on (kubernetes/kubernetes#91073); " +
		"Kubernetes Feature Gates, EfficientWatchResumption: alpha off 1.20, beta on 1.21-1.23, GA locked on 1.24 " +
		"(https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates-removed/)"
	srcTooLarge = "client-go tools/cache/reflector.go isTooLargeResourceVersionError (message form before 1.17.0 and 1.17.0-1.18.5); kubernetes/kubernetes#92537"
)

// Table is the capability table: version ranges to support, one capability per
// row, each row citing its source. For each capability the rows are ordered,
// do not overlap and cover every 1.x version. FromVersion reads it; nothing else
// decides capabilities from versions.
var Table = []Row{
	{ResourceVersionMatch, ver(1, 0, 0), ver(1, 19, 0), No, BasisVersion,
		"resourceVersionMatch is ignored before v1.19 (list served at the newest RV)", srcKEP2523 + "; " + srcReal118},
	{ResourceVersionMatch, ver(1, 19, 0), Version{}, Yes, BasisVersion,
		"resourceVersionMatch is honoured since v1.19", srcKEP2523},

	{WatchBookmarks, ver(1, 0, 0), ver(1, 15, 0), No, BasisVersion,
		"no watch bookmarks before v1.15 (allowWatchBookmarks ignored)", srcBookmarks},
	{WatchBookmarks, ver(1, 15, 0), ver(1, 16, 0), No, BasisGateDefault,
		"WatchBookmark is alpha in v1.15, off by default", srcBookmarks},
	{WatchBookmarks, ver(1, 16, 0), ver(1, 17, 0), Yes, BasisGateDefault,
		"WatchBookmark is beta in v1.16, on by default", srcBookmarks},
	{WatchBookmarks, ver(1, 17, 0), Version{}, Yes, BasisVersion,
		"watch bookmarks are GA since v1.17", srcBookmarks},

	{StreamingList, ver(1, 0, 0), ver(1, 19, 0), No, BasisVersion,
		"sendInitialEvents is silently ignored before v1.19: the initial-events-end bookmark never comes", srcReal118},
	{StreamingList, ver(1, 19, 0), ver(1, 27, 0), No, BasisVersion,
		"no WatchList before v1.27: a watch with resourceVersionMatch is answered 422", srcWatchList422},
	{StreamingList, ver(1, 27, 0), ver(1, 32, 0), No, BasisGateDefault,
		"WatchList is alpha, off by default (422 unless enabled)", srcWatchListGate + "; " + srcWatchList422},
	{StreamingList, ver(1, 32, 0), ver(1, 33, 0), Yes, BasisGateDefault,
		"WatchList is beta, on by default in v1.32 (a cluster may disable it: verify)", srcWatchListGate},
	{StreamingList, ver(1, 33, 0), ver(1, 34, 0), No, BasisGateDefault,
		"WatchList is beta but off by default in v1.33 (422 unless enabled)", srcWatchListGate + "; " + srcWatchList422},
	{StreamingList, ver(1, 34, 0), Version{}, Yes, BasisGateDefault,
		"WatchList is on by default since v1.34 (a cluster may disable it: verify)", srcWatchListGate},

	{ConsistentListFromCache, ver(1, 0, 0), ver(1, 28, 0), No, BasisVersion,
		"consistent lists are read from etcd before v1.28", srcCLFCGate},
	{ConsistentListFromCache, ver(1, 28, 0), ver(1, 31, 0), No, BasisGateDefault,
		"ConsistentListFromCache is alpha, off by default", srcCLFCGate},
	{ConsistentListFromCache, ver(1, 31, 0), ver(1, 34, 0), Yes, BasisGateDefault,
		"ConsistentListFromCache is beta, on by default", srcCLFCGate},
	{ConsistentListFromCache, ver(1, 34, 0), Version{}, Yes, BasisVersion,
		"ConsistentListFromCache is GA and locked on since v1.34", srcCLFCGate},

	{TooLargeRVMessage, ver(1, 0, 0), ver(1, 17, 0), Yes, BasisVersion,
		"before v1.17 a too-large resourceVersion is reported only in the status message", srcTooLarge},
	{TooLargeRVMessage, ver(1, 17, 0), ver(1, 18, 6), Yes, BasisVersion,
		"v1.17.0-v1.18.5 report a too-large resourceVersion only in the cause message, without the ResourceVersionTooLarge cause", srcTooLarge},
	{TooLargeRVMessage, ver(1, 18, 6), Version{}, No, BasisVersion,
		"the ResourceVersionTooLarge cause is set since v1.18.6", srcTooLarge},

	{WatchCacheProgress, ver(1, 0, 0), ver(1, 20, 0), No, BasisVersion,
		"no watch progress notifications before v1.20: a resource's watch cache moves only when that resource is written", srcKEP1904},
	{WatchCacheProgress, ver(1, 20, 0), ver(1, 21, 0), No, BasisGateDefault,
		"EfficientWatchResumption is alpha, off by default in v1.20", srcKEP1904},
	{WatchCacheProgress, ver(1, 21, 0), ver(1, 24, 0), Yes, BasisGateDefault,
		"EfficientWatchResumption is beta, on by default: the watch cache advances on etcd progress notifications", srcKEP1904},
	{WatchCacheProgress, ver(1, 24, 0), Version{}, Yes, BasisVersion,
		"EfficientWatchResumption is GA and locked on since v1.24", srcKEP1904},
}

// matches reports whether v (with its patch taken literally) is in the row's range.
func (r Row) matches(v Version) bool {
	if v.Compare(r.Since) < 0 {
		return false
	}
	return r.Until.IsZero() || v.Compare(r.Until) < 0
}

// lookup returns the row for k and v; ok is false when no row applies or, for
// a version without a patch number, when the answer changes within the minor.
func lookup(k Capability, v Version) (row Row, ambiguous, ok bool) {
	find := func(v Version) (int, bool) {
		for i, r := range Table {
			if r.Capability == k && r.matches(v) {
				return i, true
			}
		}
		return -1, false
	}
	lo, okLo := find(v)
	if !v.PatchMissing {
		if !okLo {
			return Row{}, false, false
		}
		return Table[lo], false, true
	}
	hi := v
	hi.Patch = math.MaxInt
	hiIdx, okHi := find(hi)
	if !okLo || !okHi {
		return Row{}, false, false
	}
	if lo != hiIdx && Table[lo].Support != Table[hiIdx].Support {
		return Row{}, true, false
	}
	return Table[lo], false, true
}

// FromVersion applies the Table to a server version. Every capability in
// AllCapabilities gets a support, a basis and a reason. An unknown (zero) version,
// a major version other than 1, or a version without a patch where the answer
// depends on the patch gives Unknown for the capabilities concerned; for
// TooLargeRVByMessage, Unknown means true (also match the message form, which is
// harmless on newer servers).
func FromVersion(v Version) Capabilities {
	c := Capabilities{
		Version: v,
		Support: make(map[Capability]Support, len(AllCapabilities)),
		Reasons: make(map[Capability]string, len(AllCapabilities)),
		Basis:   make(map[Capability]Basis, len(AllCapabilities)),
	}
	for _, k := range AllCapabilities {
		switch {
		case v.IsZero():
			c.Support[k] = Unknown
			c.Reasons[k] = "server version unknown"
		case v.Major != 1:
			c.Support[k] = Unknown
			c.Reasons[k] = fmt.Sprintf("version %s: not a Kubernetes 1.x version", v)
		default:
			row, ambiguous, ok := lookup(k, v)
			switch {
			case ok:
				c.Support[k] = row.Support
				c.Basis[k] = row.Basis
				c.Reasons[k] = fmt.Sprintf("version %s: %s", v, row.Reason)
			case ambiguous:
				c.Support[k] = Unknown
				c.Reasons[k] = fmt.Sprintf("version %s: no patch number and the answer changes within v%d.%d", v, v.Major, v.Minor)
			default:
				c.Support[k] = Unknown
				c.Reasons[k] = fmt.Sprintf("version %s: not in the capability table", v)
			}
		}
	}
	c.TooLargeRVByMessage = c.Support[TooLargeRVMessage] != No
	return c
}
