package reflector

import (
	"strconv"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"k8s.io/apimachinery/pkg/watch"
)

// Events keep arriving for 3x StallTimeout: no restart. Then silence: the
// restart comes no earlier than StallTimeout after the last event.
func TestStallTimerRearmsLazily(t *testing.T) {
	fc, rec, r, w := stallWatch(t, 300*time.Millisecond)
	begin := time.Now()
	rv := 11
	var last time.Time
	for time.Since(begin) < 900*time.Millisecond {
		w.Action(watch.Modified, testfake.ConfigMap("a", itoa(rv)))
		last = time.Now()
		rv++
		time.Sleep(30 * time.Millisecond) // event pacing (the thing under test), not synchronisation
	}
	if len(fc.Watches()) != 1 {
		t.Fatalf("watch restarted while events flowed: %v", rec.Labels(testfake.WatchRestart))
	}
	watcherOf(t, fc, 1)
	if d := time.Since(last); d < 290*time.Millisecond {
		t.Fatalf("stall restart %v after the last event; want >= StallTimeout", d)
	}
	if got := rec.Labels(testfake.WatchRestart); len(got) != 1 || got[0] != "stalled" {
		t.Fatalf("restarts %v", got)
	}
	if r.State().Items != 1 || r.LastSyncResourceVersion() != itoa(rv-1) {
		t.Fatalf("state %+v", r.State())
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
