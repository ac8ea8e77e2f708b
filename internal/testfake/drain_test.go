package testfake

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

func TestDrainReturnsEveryEventInOrder(t *testing.T) {
	evs := []watch.Event{{Type: watch.Added}, {Type: watch.Modified}, {Type: watch.Deleted}}
	got := Drain(t, NewWatch(evs, true), 5*time.Second)
	if len(got) != len(evs) {
		t.Fatalf("got %d events, want %d", len(got), len(evs))
	}
	for i := range evs {
		if got[i].Type != evs[i].Type {
			t.Errorf("event %d: %s, want %s", i, got[i].Type, evs[i].Type)
		}
	}
}
