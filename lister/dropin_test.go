package lister

import (
	"testing"

	"github.com/steadywatch/steadywatch/internal/dropin"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// The drop-in's implementation reports the reason codes this package
// documents, with the same values.
func TestDropinReportsTheDocumentedReasons(t *testing.T) {
	for _, c := range []struct{ ours, impl string }{
		{reason.ClientGoRelist, reason.ClientGoRelist},
		{reason.ClientGoRewatch, reason.ClientGoRewatch},
		{reason.WatchStalled, reason.WatchStalled},
		{string(reason.StreamingListAbandoned), string(reason.StreamingListAbandoned)},
		{string(reason.UnservedRVMostRecent), string(reason.UnservedRVMostRecent)},
		{string(reason.StaleListReasked), string(reason.StaleListReasked)},
		{string(reason.StaleEvent), string(reason.StaleEvent)},
		{string(reason.BadResourceVersion), string(reason.BadResourceVersion)},
		{string(reason.NoProgressBackoff), string(reason.NoProgressBackoff)},
	} {
		if c.ours != c.impl {
			t.Errorf("lister reports %q, internal/dropin %q", c.ours, c.impl)
		}
	}
}
