package engine

import (
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/fallback"
)

// client-go's REST client retries a 504 with Retry-After 1s up to 10 times
// inside one request: an answer that took 40s (10 x (3s cache wait + 1s)) stands for those attempts and
// spends the too-large budget (3), so the list falls back at once instead of
// multiplying 10 hidden retries by 3 of its own (issue: retries inside retries).
func TestHiddenRetriesAreCharged(t *testing.T) {
	first := fallback.NotOlderThanQuery("10")
	in := Input{First: first, Sent: first, Class: fallback.TooLargeRV, RetryAfter: time.Second}
	if st := NewPlanner(fallback.Policy{}, 0).Plan(in); st.Action != fallback.WaitRetryAfter {
		t.Fatalf("a quick answer: %v, want WaitRetryAfter", st.Action)
	}
	in.Elapsed = 3500 * time.Millisecond // one attempt the watch cache held for 3s: nothing hidden
	if st := NewPlanner(fallback.Policy{}, 0).Plan(in); st.Action != fallback.WaitRetryAfter {
		t.Fatalf("one slow answer: %v, want WaitRetryAfter", st.Action)
	}
	in.Elapsed = 40 * time.Second // 10 hidden attempts of 3s + 1s
	if st := NewPlanner(fallback.Policy{}, 0).Plan(in); st.Action != fallback.FallbackMostRecent {
		t.Fatalf("an answer after 10 hidden retries: %v (%s), want FallbackMostRecent", st.Action, st.Reason)
	}
}

// Counted requests on the wire replace the estimate: a slow answer that
// took one request charges nothing, one that took 11 charges 10.
func TestCountedHiddenRetriesAreCharged(t *testing.T) {
	first := fallback.NotOlderThanQuery("10")
	in := Input{First: first, Sent: first, Class: fallback.TooLargeRV, RetryAfter: time.Second, Elapsed: 40 * time.Second, WireRequests: 1}
	if st := NewPlanner(fallback.Policy{}, 0).Plan(in); st.Action != fallback.WaitRetryAfter {
		t.Fatalf("one request, however slow: %v, want WaitRetryAfter", st.Action)
	}
	in.Elapsed, in.WireRequests = time.Second, 11
	if st := NewPlanner(fallback.Policy{}, 0).Plan(in); st.Action != fallback.FallbackMostRecent {
		t.Fatalf("11 requests on the wire: %v (%s), want FallbackMostRecent", st.Action, st.Reason)
	}
}

// After a continue-token expiry with pages handed over, the restart's floor
// is the handed snapshot, and an Any list restarts as NotOlderThan it.
func TestRestartFloorIsTheHandedSnapshot(t *testing.T) {
	for _, first := range []fallback.Query{fallback.NotOlderThanQuery("10").WithLimit(2), fallback.AnyQuery().WithLimit(2)} {
		in := Input{First: first, Sent: fallback.Query{Semantic: fallback.MostRecent, Limit: 2, Continue: "c"}, WireLimit: 2,
			Class: fallback.Gone, Handed: 1, SnapshotRV: "50", CanVoidPages: true}
		st := NewPlanner(fallback.Policy{}, 0).Plan(in)
		if st.Action != fallback.RestartListNewerRV || !st.VoidPages || !st.ProbeNewerRV || st.Floor != "50" || st.Next.Semantic != fallback.NotOlderThan {
			t.Fatalf("%v: %+v", first, st)
		}
	}
}

// A restart that would void pages the caller cannot discard is refused.
func TestRestartRefusedWithoutOnRestart(t *testing.T) {
	first := fallback.MostRecentQuery().WithLimit(2)
	in := Input{First: first, Sent: fallback.Query{Semantic: fallback.MostRecent, Limit: 2, Continue: "c"}, WireLimit: 2,
		Class: fallback.Gone, Handed: 1, SnapshotRV: "50"}
	if st := NewPlanner(fallback.Policy{}, 0).Plan(in); st.Action != fallback.Fail || st.Reason != fallback.ReasonRestartNotAllowed {
		t.Fatalf("%+v", st)
	}
}
