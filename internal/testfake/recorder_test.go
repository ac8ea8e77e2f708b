package testfake_test

import (
	"slices"
	"testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/metrics"
)

var _ metrics.Recorder = (*testfake.Recorder)(nil)

func TestRecorderKeepsReportsInOrder(t *testing.T) {
	var r testfake.Recorder
	r.Fallback("a", "x")
	r.Relist("a", "gone")
	r.Fallback("b", "y")
	r.Fallback("a", "x")
	r.Transition("a", "Listing", "Watching", "synced")
	if got := r.Labels(testfake.Fallback); !slices.Equal(got, []string{"x", "y", "x"}) {
		t.Errorf("fallbacks %v", got)
	}
	if r.Count(testfake.Fallback, "x") != 2 || r.Count(testfake.Relist, "gone") != 1 || r.Labels(testfake.Bookmark) != nil {
		t.Errorf("counts wrong: %+v", r.Reports())
	}
	if got := r.Reports(); len(got) != 5 || got[2] != (testfake.Report{Family: testfake.Fallback, Name: "b", Label: "y"}) || got[4].Label != "Listing->Watching: synced" {
		t.Errorf("reports %+v", got)
	}
}
