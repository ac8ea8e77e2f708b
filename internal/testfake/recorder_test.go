package testfake_test

import (
	"slices"
	"testing"
	"time"

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
	got := r.Reports()
	if len(got) != 5 || got[2].At.IsZero() || got[4].At.Before(got[2].At) {
		t.Fatalf("reports %+v", got)
	}
	got[2].At = time.Time{}
	if got[2] != (testfake.Report{Family: testfake.Fallback, Name: "b", Label: "y"}) || got[4].Label != "Listing->Watching: synced" {
		t.Errorf("reports %+v", got)
	}
}

func TestRecorderKeepsOnlyTheFamiliesAsked(t *testing.T) {
	r := testfake.Recorder{Keep: []string{testfake.Fallback}}
	r.Fallback("a", "x")
	r.StoreResourceVersion("a", "7")
	r.Relist("a", "gone")
	if got := r.Reports(); len(got) != 1 || got[0].Family != testfake.Fallback {
		t.Errorf("reports %+v, want the fallback alone", got)
	}
}
