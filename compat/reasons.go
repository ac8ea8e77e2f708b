package compat

import "github.com/steadywatch/steadywatch/internal/capability"

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
var reasonCodes = map[capability.Capability][3]ReasonCode{
	capability.ResourceVersionMatch:    {ReasonResourceVersionMatchUnknown, ReasonResourceVersionMatchYes, ReasonResourceVersionMatchNo},
	capability.WatchBookmarks:          {ReasonWatchBookmarksUnknown, ReasonWatchBookmarksYes, ReasonWatchBookmarksNo},
	capability.StreamingList:           {ReasonStreamingListUnknown, ReasonStreamingListYes, ReasonStreamingListNo},
	capability.ConsistentListFromCache: {ReasonConsistentListFromCacheUnknown, ReasonConsistentListFromCacheYes, ReasonConsistentListFromCacheNo},
	capability.TooLargeRVMessage:       {ReasonTooLargeRVMessageUnknown, ReasonTooLargeRVMessageYes, ReasonTooLargeRVMessageNo},
	capability.WatchCacheProgress:      {ReasonWatchCacheProgressUnknown, ReasonWatchCacheProgressYes, ReasonWatchCacheProgressNo},
}

// ReasonFor returns the reason code for "the belief about k is now s". A
// Capability that is not a declared constant gives ReasonUnlistedCapability; a
// Support other than Yes or No counts as Unknown (as Support.String does).
func ReasonFor(k capability.Capability, s capability.Support) ReasonCode {
	codes, ok := reasonCodes[k]
	if !ok {
		return ReasonUnlistedCapability
	}
	switch s {
	case capability.Yes:
		return codes[1]
	case capability.No:
		return codes[2]
	default:
		return codes[0]
	}
}

// ReasonCodes returns every reason code compat reports (a new slice each call),
// in AllCapabilities order, then ReasonUnlistedCapability.
func ReasonCodes() []ReasonCode {
	out := make([]ReasonCode, 0, 3*len(reasonCodes)+1)
	for _, k := range []capability.Capability{capability.ResourceVersionMatch, capability.WatchBookmarks, capability.StreamingList, capability.ConsistentListFromCache, capability.TooLargeRVMessage, capability.WatchCacheProgress} {
		c := reasonCodes[k]
		out = append(out, c[:]...)
	}
	return append(out, ReasonUnlistedCapability)
}
