package prometheus

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRecorderExportsEveryMethod(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(reg, "")
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	r.List("v1/configmaps", "NotOlderThan", "ok")
	r.List("v1/configmaps", "NotOlderThan", "ok")
	r.List("v1/configmaps", "MostRecent", "Gone")
	r.Fallback("v1/configmaps", "ExactIgnored")
	r.Relist("v1/configmaps", "watch-gone")
	r.WatchRestart("v1/configmaps", "stalled")
	r.Bookmark("v1/configmaps")
	r.Bookmark("v1/configmaps")
	r.Bookmark("v1/configmaps")
	r.Items("v1/configmaps", 7)
	r.ResourceVersionAdvanced("v1/configmaps", t0)
	r.ConsistencyCheck("v1/configmaps", "mismatch")
	r.Transition("v1/configmaps", "Listing", "Watching", "listed")
	r.ListGateWait("v1/configmaps", 1500*time.Millisecond)
	r.ListGateWait("v1/configmaps", 500*time.Millisecond)
	r.ListGateShared("v1/configmaps")
	r.ListGateOverdue("v1/configmaps")

	expected := `
# HELP steadywatch_lists_total List calls (all pages of one list), by requested resourceVersion semantic and outcome.
# TYPE steadywatch_lists_total counter
steadywatch_lists_total{name="v1/configmaps",outcome="Gone",semantic="MostRecent"} 1
steadywatch_lists_total{name="v1/configmaps",outcome="ok",semantic="NotOlderThan"} 2
# HELP steadywatch_fallbacks_total KEP-2523 fallbacks taken, by reason code.
# TYPE steadywatch_fallbacks_total counter
steadywatch_fallbacks_total{name="v1/configmaps",reason="ExactIgnored"} 1
# HELP steadywatch_relists_total Reflector relists, by cause.
# TYPE steadywatch_relists_total counter
steadywatch_relists_total{cause="watch-gone",name="v1/configmaps"} 1
# HELP steadywatch_watch_restarts_total Watch restarts, by reason.
# TYPE steadywatch_watch_restarts_total counter
steadywatch_watch_restarts_total{name="v1/configmaps",reason="stalled"} 1
# HELP steadywatch_bookmarks_total BOOKMARK watch events received.
# TYPE steadywatch_bookmarks_total counter
steadywatch_bookmarks_total{name="v1/configmaps"} 3
# HELP steadywatch_items Objects the reflector's store reflects.
# TYPE steadywatch_items gauge
steadywatch_items{name="v1/configmaps"} 7
# HELP steadywatch_resource_version_last_advance_timestamp_seconds Unix time at which the reflector's resourceVersion last advanced.
# TYPE steadywatch_resource_version_last_advance_timestamp_seconds gauge
steadywatch_resource_version_last_advance_timestamp_seconds{name="v1/configmaps"} 1.735787045e+09
# HELP steadywatch_consistency_checks_total Consistency checks of a reflector's store against an Exact list, by result (ok, mismatch, error).
# TYPE steadywatch_consistency_checks_total counter
steadywatch_consistency_checks_total{name="v1/configmaps",result="mismatch"} 1
# HELP steadywatch_transitions_total Reflector state machine transitions.
# TYPE steadywatch_transitions_total counter
steadywatch_transitions_total{from="Listing",name="v1/configmaps",reason="listed",to="Watching"} 1
# HELP steadywatch_list_gate_waits_total Collection reads that waited for a listgate.Gate slot.
# TYPE steadywatch_list_gate_waits_total counter
steadywatch_list_gate_waits_total{name="v1/configmaps"} 2
# HELP steadywatch_list_gate_wait_seconds_total Seconds collection reads waited for a listgate.Gate slot.
# TYPE steadywatch_list_gate_wait_seconds_total counter
steadywatch_list_gate_wait_seconds_total{name="v1/configmaps"} 2
# HELP steadywatch_list_gate_shared_total Lists answered by another reader's identical request through a listgate.Gate.
# TYPE steadywatch_list_gate_shared_total counter
steadywatch_list_gate_shared_total{name="v1/configmaps"} 1
# HELP steadywatch_list_gate_overdue_total Collection reads that held a listgate.Gate slot longer than its hold bound (stuck or slow) and stopped counting against its slots.
# TYPE steadywatch_list_gate_overdue_total counter
steadywatch_list_gate_overdue_total{name="v1/configmaps"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected)); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 14 {
		t.Fatalf("GatherAndCount = %d, %v; want 14 series", n, err)
	}
}

func TestLastAdvanceTimestampNeverGoesBackwards(t *testing.T) {
	r, _ := newRecorder(nil, "x")
	t0 := time.Unix(1000, 500_000_000)
	r.ResourceVersionAdvanced("a", t0)
	r.ResourceVersionAdvanced("a", t0.Add(-time.Hour)) // a stale report must not make it look older
	if got := testutil.ToFloat64(r.lastAdvance); got != 1000.5 {
		t.Fatalf("last advance timestamp = %v, want 1000.5", got)
	}
	r.ResourceVersionAdvanced("a", t0.Add(2*time.Second))
	if got := testutil.ToFloat64(r.lastAdvance); got != 1002.5 {
		t.Fatalf("last advance timestamp = %v, want 1002.5", got)
	}
}

// TestNoSecondsSinceGauge checks that no metric counts seconds since an
// event (Prometheus' naming conventions: export the event's timestamp and
// let the query subtract it from time()).
func TestNoSecondsSinceGauge(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := New(reg, "")
	r.ResourceVersionAdvanced("a", time.Unix(1000, 0))
	r.Items("a", 1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.Contains(mf.GetName(), "seconds_since") || strings.Contains(mf.GetName(), "_age") {
			t.Errorf("metric %s measures time since an event; export its timestamp instead", mf.GetName())
		}
	}
}

func TestSecondRecorderOnSameRegistrySharesTheTimestamp(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a := New(reg, "")
	b, _ := newRecorder(reg, "")
	a.ResourceVersionAdvanced("n", time.Unix(2000, 0))
	b.ResourceVersionAdvanced("n", time.Unix(1000, 0))
	if got := testutil.ToFloat64(b.lastAdvance); got != 2000 {
		t.Fatalf("shared timestamp = %v, want 2000 (the newest of both recorders)", got)
	}
}

func TestSecondRecorderOnSameRegistryShares(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, _ := newRecorder(reg, "")
	b, err := newRecorder(reg, "")
	if err != nil {
		t.Fatalf("second recorder on the same registry: %v", err)
	}
	a.Relist("n", "gone")
	b.Relist("n", "gone")
	if got := testutil.ToFloat64(a.relists.WithLabelValues("n", "gone")); got != 2 {
		t.Fatalf("shared relist counter = %v, want 2", got)
	}
}

func TestConflictingRegistrationIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Same fully-qualified name, different labels: a genuine conflict.
	reg.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "steadywatch_relists_total", Help: "other"}, []string{"x"}))
	if _, err := newRecorder(reg, ""); err == nil {
		t.Fatal("newRecorder succeeded despite a conflicting metric; want an error")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New did not panic on a conflicting metric")
		}
	}()
	New(reg, "")
}

func TestRecorderExportsReadMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r, _ := newRecorder(reg, "")
	r.StoreResourceVersion("v1/configmaps", "1234")
	r.StoreResourceVersion("v1/configmaps", "opaque") // not a number: not recorded
	r.ReadWait("v1/configmaps", 3*time.Millisecond, "cache")
	r.ReadFallback("v1/configmaps", "bound")
	expected := `
# HELP steadywatch_store_resource_version The resourceVersion a store reflects (as a number; versions longer than 15 digits keep their last 15, as client-go's store_resource_version).
# TYPE steadywatch_store_resource_version gauge
steadywatch_store_resource_version{name="v1/configmaps"} 1234
# HELP steadywatch_read_fallbacks_total Reads answered by the server instead of the cache, by reason (bound, incomparable).
# TYPE steadywatch_read_fallbacks_total counter
steadywatch_read_fallbacks_total{name="v1/configmaps",reason="bound"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "steadywatch_store_resource_version", "steadywatch_read_fallbacks_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(r.readWait, "steadywatch_read_wait_seconds"); n != 1 {
		t.Fatalf("read_wait_seconds has %d series, want 1", n)
	}
}
