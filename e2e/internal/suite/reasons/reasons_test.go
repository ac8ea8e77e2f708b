package reasons

import (
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/metrics"
)

var _ metrics.Recorder = (*Counter)(nil)

func TestCounter(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Counter
		want string
	}{
		{"New", New(), "b=1 c=2 relist:r=1 watch-restart:w=1"},
		{"NewFallbacks", NewFallbacks(), "b=1 c=2"},
	} {
		c := tc.c
		if got := c.String(); got != "" {
			t.Errorf("%s: empty counter %q", tc.name, got)
		}
		c.Fallback("v1/configmaps", "c")
		c.Relist("v1/configmaps", "r")
		c.Fallback("v1/configmaps", "b")
		c.WatchRestart("v1/configmaps", "w")
		c.Fallback("v1/configmaps", "c")
		c.Bookmark("v1/configmaps") // not counted
		if got := c.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if got := c.Get("c"); got != 2 {
			t.Errorf("%s: Get(c) = %d, want 2", tc.name, got)
		}
	}
}

func TestCounterFamiliesAndEvents(t *testing.T) {
	c := New()
	c.Relist("x", "gone")
	c.Relist("x", "gone")
	c.Fallback("x", "rule1")
	c.Transition("x", "Listing", "Watching", "synced")
	c.Bookmark("x")
	if got := FormatCounts(c.Family(FamilyRelist)); got != "gone=2" {
		t.Errorf("relists %q", got)
	}
	if got := FormatCounts(c.Family(FamilyTransition)); got != "Listing->Watching=1" {
		t.Errorf("transitions %q", got)
	}
	if c.Total(FamilyFallback) != 1 || c.Total(FamilyBookmark) != 1 || FormatCounts(nil) != "(none)" {
		t.Error("totals/empty format wrong")
	}
	if got := c.Labels(FamilyRelist); len(got) != 2 || got[0] != "gone" {
		t.Errorf("relist labels %v", got)
	}
	ev := c.Events()
	if len(ev) != 5 || ev[3].Label != "Listing->Watching" || ev[3].Reason != "synced" || ev[3].At.IsZero() {
		t.Errorf("events %+v", ev)
	}
}

func TestCounterKeepsOnlyItsFamilies(t *testing.T) {
	c := New()
	c.List("x", "NotOlderThan", "ok")
	c.StoreResourceVersion("x", "7") // reported on every event: dropped
	c.Items("x", 3)
	c.ConsistencyCheck("x", "match")
	c.ReadFallback("x", "timeout")
	c.ResourceVersionAdvanced("x", time.Now())
	ev := c.Events()
	if len(ev) != 3 || len(c.Reports()) != 3 {
		t.Fatalf("events %+v, want the list, the check and the read fallback", ev)
	}
	for i, want := range []Event{{Family: FamilyList, Label: "NotOlderThan/ok"}, {Family: FamilyConsistency, Label: "match"}, {Family: FamilyReadFallback, Label: "timeout"}} {
		if ev[i].Family != want.Family || ev[i].Label != want.Label || ev[i].Reason != want.Label {
			t.Errorf("event %d: %+v, want %s %s", i, ev[i], want.Family, want.Label)
		}
	}
	if c.String() != "" {
		t.Errorf("Get covers only fallbacks, relists and watch restarts: %q", c.String())
	}
}
