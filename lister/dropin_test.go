package lister

import (
	"testing"

	"github.com/steadywatch/steadywatch/internal/dropin"
)

// The drop-in's implementation reports the reason codes this package
// documents, with the same values.
func TestDropinReportsTheDocumentedReasons(t *testing.T) {
	for _, c := range []struct{ ours, impl string }{
		{ReasonClientGoRelist, dropin.ReasonClientGoRelist},
		{ReasonClientGoRewatch, dropin.ReasonClientGoRewatch},
		{ReasonWatchStalled, dropin.ReasonWatchStalled},
		{string(ReasonStreamingListAbandoned), string(dropin.ReasonStreamingListAbandoned)},
		{string(ReasonUnservedRVMostRecent), string(dropin.ReasonUnservedRVMostRecent)},
		{string(ReasonStaleListReasked), string(dropin.ReasonStaleListReasked)},
		{string(ReasonStaleEvent), string(dropin.ReasonStaleEvent)},
		{string(ReasonBadResourceVersion), string(dropin.ReasonBadResourceVersion)},
		{string(ReasonNoProgressBackoff), string(dropin.ReasonNoProgressBackoff)},
	} {
		if c.ours != c.impl {
			t.Errorf("lister reports %q, internal/dropin %q", c.ours, c.impl)
		}
	}
}
