package compat

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/steadywatch/steadywatch/internal/reason"
)

// ReasonCode is the reason label compat gives metrics.Recorder.Fallback when a
// belief changes. The set is closed: one constant per capability in
// AllCapabilities and Support value, plus ReasonUnlistedCapability for a
// Capability that is not one of the declared constants (a caller may Observe
// any Capability string; it never reaches a label). ReasonCodes lists them all.
type ReasonCode string

// The complete set of reason codes compat reports, "compat:<capability>=<support>".
const (
	ReasonResourceVersionMatchUnknown    ReasonCode = "compat:resourceVersionMatch=unknown"
	ReasonResourceVersionMatchYes        ReasonCode = "compat:resourceVersionMatch=yes"
	ReasonResourceVersionMatchNo         ReasonCode = "compat:resourceVersionMatch=no"
	ReasonWatchBookmarksUnknown          ReasonCode = "compat:watchBookmarks=unknown"
	ReasonWatchBookmarksYes              ReasonCode = "compat:watchBookmarks=yes"
	ReasonWatchBookmarksNo               ReasonCode = "compat:watchBookmarks=no"
	ReasonStreamingListUnknown           ReasonCode = "compat:streamingList=unknown"
	ReasonStreamingListYes               ReasonCode = "compat:streamingList=yes"
	ReasonStreamingListNo                ReasonCode = "compat:streamingList=no"
	ReasonConsistentListFromCacheUnknown ReasonCode = "compat:consistentListFromCache=unknown"
	ReasonConsistentListFromCacheYes     ReasonCode = "compat:consistentListFromCache=yes"
	ReasonConsistentListFromCacheNo      ReasonCode = "compat:consistentListFromCache=no"
	ReasonTooLargeRVMessageUnknown       ReasonCode = "compat:tooLargeRVByMessage=unknown"
	ReasonTooLargeRVMessageYes           ReasonCode = "compat:tooLargeRVByMessage=yes"
	ReasonTooLargeRVMessageNo            ReasonCode = "compat:tooLargeRVByMessage=no"
	ReasonWatchCacheProgressUnknown      ReasonCode = "compat:watchCacheProgress=unknown"
	ReasonWatchCacheProgressYes          ReasonCode = "compat:watchCacheProgress=yes"
	ReasonWatchCacheProgressNo           ReasonCode = "compat:watchCacheProgress=no"
	// ReasonUnlistedCapability stands for every change of a Capability that is
	// not one of the declared constants, whatever its support.
	ReasonUnlistedCapability ReasonCode = "compat:unlisted-capability"
)

// reasonCodes is indexed by capability, then by Support (Unknown, Yes, No).
var reasonCodes = map[Capability][3]ReasonCode{
	ResourceVersionMatch:    {reason.ResourceVersionMatchUnknown, reason.ResourceVersionMatchYes, reason.ResourceVersionMatchNo},
	WatchBookmarks:          {reason.WatchBookmarksUnknown, reason.WatchBookmarksYes, reason.WatchBookmarksNo},
	StreamingList:           {reason.StreamingListUnknown, reason.StreamingListYes, reason.StreamingListNo},
	ConsistentListFromCache: {reason.ConsistentListFromCacheUnknown, reason.ConsistentListFromCacheYes, reason.ConsistentListFromCacheNo},
	TooLargeRVMessage:       {reason.TooLargeRVMessageUnknown, reason.TooLargeRVMessageYes, reason.TooLargeRVMessageNo},
	WatchCacheProgress:      {reason.WatchCacheProgressUnknown, reason.WatchCacheProgressYes, reason.WatchCacheProgressNo},
}

// ReasonFor returns the reason code for "the belief about k is now s". A
// Capability that is not a declared constant gives ReasonUnlistedCapability; a
// Support other than Yes or No counts as Unknown (as Support.String does).
func ReasonFor(k Capability, s Support) ReasonCode {
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

// ReasonCodes returns every reason code compat reports (a new slice each call),
// in AllCapabilities order, then ReasonUnlistedCapability.
func ReasonCodes() []ReasonCode {
	out := make([]ReasonCode, 0, 3*len(reasonCodes)+1)
	for _, k := range []Capability{ResourceVersionMatch, WatchBookmarks, StreamingList, ConsistentListFromCache, TooLargeRVMessage, WatchCacheProgress} {
		c := reasonCodes[k]
		out = append(out, c[:]...)
	}
	return append(out, reason.UnlistedCapability)
}

// MetricsName is the name compat gives metrics.Recorder.Fallback for a belief
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
