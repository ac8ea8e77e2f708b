package chaos

import (
	"reflect"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"k8s.io/client-go/tools/cache"
)

func TestScheduleIsDeterministicAndBounded(t *testing.T) {
	o := ScheduleOptions{Duration: 90 * time.Second, Servers: 2}
	a, b := Schedule(42, o), Schedule(42, o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same replay number gave different schedules")
	}
	if reflect.DeepEqual(a, Schedule(43, o)) {
		t.Fatal("different replay numbers gave the same schedule")
	}
	if len(a) < 15 {
		t.Fatalf("only %d faults in 90s", len(a))
	}
	pinned := false
	kinds := map[Kind]bool{}
	for i, f := range a {
		kinds[f.Kind] = true
		if f.At <= 0 || f.At > o.Duration {
			t.Fatalf("fault %d at %s outside (0, %s]", i, f.At, o.Duration)
		}
		if i > 0 && f.At < a[i-1].At {
			t.Fatalf("not sorted at %d", i)
		}
		switch f.Kind {
		case FailoverLagging:
			if pinned {
				t.Fatalf("pinned twice without going back: %s", f)
			}
			pinned = true
		case FailoverBack:
			pinned = false
		case StallWatches:
			if f.Duration < time.Second || f.Duration > 12*time.Second {
				t.Fatalf("stall %s out of range", f.Duration)
			}
		}
	}
	if pinned {
		t.Fatal("schedule ends pinned to the lagging server")
	}
	if len(kinds) < 8 {
		t.Fatalf("only %d kinds drawn: %v", len(kinds), kinds)
	}
}

func TestScheduleSingleServerHasNoFailover(t *testing.T) {
	for _, f := range Schedule(7, ScheduleOptions{Duration: 5 * time.Minute, Servers: 1}) {
		if f.Kind == FailoverLagging || f.Kind == FailoverBack || (f.Kind == RestartAPIServer && f.Server != 0) {
			t.Fatalf("single server schedule has %s", f)
		}
	}
}

func TestTrackerFlagsRegressionsAndDeletes(t *testing.T) {
	tr := NewTracker()
	s := NewTrackingStore(tr)
	_ = s.Replace([]any{testfake.ConfigMap("a", "10"), testfake.ConfigMap("b", "11"), testfake.ConfigMap("c", "12")}, "12")
	_ = s.Update(testfake.ConfigMap("a", "13"))
	_ = s.Replace([]any{testfake.ConfigMap("a", "13"), testfake.ConfigMap("b", "11")}, "14") // c dropped by a relist
	_ = s.Delete(testfake.ConfigMap("b", "15"))
	if r := tr.Regressions(); len(r) != 0 {
		t.Fatalf("unexpected regressions %v", r)
	}
	_ = s.Update(testfake.ConfigMap("a", "12")) // older than 13
	if r := tr.Regressions(); len(r) != 1 {
		t.Fatalf("regression not flagged: %v", r)
	}
	rep := tr.CheckDeletes([]string{"ns/b", "ns/c", "ns/never", "ns/a"})
	if rep.Observed != 2 || rep.NeverSeen != 1 || !reflect.DeepEqual(rep.Missed, []string{"ns/a"}) {
		t.Fatalf("delete report %+v", rep)
	}
	h := Handler(tr)
	h.OnAdd(testfake.ConfigMap("d", "20"), false)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/d", Obj: testfake.ConfigMap("d", "20")})
	if !tr.DeleteSeen("ns/d") || tr.Events()["tombstone"] != 1 {
		t.Fatalf("tombstone not recorded: %v", tr.Events())
	}
	h.OnAdd(testfake.ConfigMap("d", "21"), false)
	if r := tr.Regressions(); len(r) != 2 {
		t.Fatalf("an add after an observed delete of a never-reused name must be flagged: %v", r)
	}
}
