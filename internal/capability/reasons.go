package capability

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/steadywatch/steadywatch/internal/reason"
)

// reasonCodes is indexed by capability, then by Support (Unknown, Yes, No).
var reasonCodes = map[Capability][3]reason.Code{
	ResourceVersionMatch:    {reason.ResourceVersionMatchUnknown, reason.ResourceVersionMatchYes, reason.ResourceVersionMatchNo},
	WatchBookmarks:          {reason.WatchBookmarksUnknown, reason.WatchBookmarksYes, reason.WatchBookmarksNo},
	StreamingList:           {reason.StreamingListUnknown, reason.StreamingListYes, reason.StreamingListNo},
	ConsistentListFromCache: {reason.ConsistentListFromCacheUnknown, reason.ConsistentListFromCacheYes, reason.ConsistentListFromCacheNo},
	TooLargeRVMessage:       {reason.TooLargeRVMessageUnknown, reason.TooLargeRVMessageYes, reason.TooLargeRVMessageNo},
	WatchCacheProgress:      {reason.WatchCacheProgressUnknown, reason.WatchCacheProgressYes, reason.WatchCacheProgressNo},
}

// reasonFor returns the reason code for "the belief about k is now s"
// (metrics.Recorder.Fallback's reason, docs/reasons.md). A Capability that
// is not a declared constant gives "compat:unlisted-capability" (a caller may
// Observe any Capability string; it never reaches a label); a Support other
// than Yes or No counts as Unknown (as Support.String does).
func reasonFor(k Capability, s Support) reason.Code {
	codes, ok := reasonCodes[k]
	if !ok {
		return reason.UnlistedCapability
	}
	switch s {
	case Yes:
		return codes[1]
	case No:
		return codes[2]
	default:
		return codes[0]
	}
}

// MetricsName is the name the Detector gives metrics.Recorder.Fallback for a belief
// change in the host-wide scope. A group/version view reports under
// MetricsName + "/" + its group/version ("compat/v1", "compat/apps/v1"); see
// MetricsNameFor. The apiserver's host is never part of a label (it is logged,
// without user information): a label must not carry credentials, and one
// label value per host would grow with every cluster (and every test server)
// a process talks to.
const MetricsName = "compat"

// MetricsNameFor returns the metrics name for the scope gv: MetricsName for the
// zero GroupVersion (the host-wide scope), else "compat/<group>/<version>"
// ("compat/v1" for the core group). The number of values is bounded by the
// group/versions a process lists, like the lister's and reflector's names.
func MetricsNameFor(gv schema.GroupVersion) string {
	if gv.Empty() {
		return MetricsName
	}
	return MetricsName + "/" + gv.String()
}
