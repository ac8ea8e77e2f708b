package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

func start(t *testing.T, q fallback.Query, cfg Config) *Call {
	t.Helper()
	cfg.Policy = cfg.Policy.WithDefaults()
	c, _, err := Start(q, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// client-go's REST client retries a 504 with Retry-After 1s up to 10 times
// inside one request: an answer that took 40s (10 x (3s cache wait + 1s)) stands for those attempts and
// spends the too-large budget (2), so the list falls back at once instead of
// multiplying 10 hidden retries by its own.
func TestHiddenRetriesAreCharged(t *testing.T) {
	q := fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "10"}
	if st := start(t, q, Config{}).Next(Answer{Err: testfake.TooLarge(1)}); st.Action != vocab.CheckRVExists || st.Next.Purpose != PurposeCurrentRV || st.Next.Wait != 0 {
		t.Fatalf("a quick answer: %v %+v, want CheckRVExists at once", st.Action, st.Next)
	}
	if st := start(t, q, Config{}).Next(Answer{Err: testfake.TooLarge(1), Elapsed: 3500 * time.Millisecond}); st.Action != vocab.CheckRVExists {
		t.Fatalf("one slow answer: %v, want CheckRVExists", st.Action)
	}
	if st := start(t, q, Config{}).Next(Answer{Err: testfake.TooLarge(1), Elapsed: 40 * time.Second}); st.Action != vocab.FallbackMostRecent {
		t.Fatalf("an answer after 10 hidden retries: %v (%s), want FallbackMostRecent", st.Action, st.Reason)
	}
}

// A 410 on NotOlderThan+limit (rule 1) is answered by a probe, a request of
// its own; its answer gives the next page its resourceVersion, in the wire
// form the 410 proved (legacy: the server ignored the match).
func TestRule1ProbeIsARequest(t *testing.T) {
	c, first, err := Start(fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "10"}.WithLimit(500), Config{Policy: policy.Policy{}.WithDefaults()})
	if err != nil || first.Options.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || first.Options.Limit != 500 {
		t.Fatalf("%v %+v", err, first.Options)
	}
	st := c.Next(Answer{Err: testfake.Gone()})
	if st.Action != vocab.RetryNewerRV || st.Evidence != EvidenceIgnored || st.Next.Purpose != PurposeNewerRV || st.Next.Options.Limit != 1 || st.Event != nil {
		t.Fatalf("%+v", st)
	}
	st = c.Next(Answer{ServedRV: "70", Items: 1})
	o := st.Next.Options
	if st.Action != vocab.RetryNewerRV || st.Event == nil || st.Next.Purpose != PurposePage || o.ResourceVersion != "70" || o.ResourceVersionMatch != "" || o.Limit != 500 {
		t.Fatalf("%v %+v", st.Action, o)
	}
	if st = c.Next(Answer{ServedRV: "70", Items: 3}); !st.Accept || !st.Done || st.SnapshotRV != "70" {
		t.Fatalf("%+v", st)
	}
}

// After a continue-token expiry with pages handed over, the restart's floor
// is the handed snapshot, and an Any list restarts as NotOlderThan it.
func TestCallFollowUpsKeepTheFloor(t *testing.T) {
	for _, q := range []fallback.Query{fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "10"}.WithLimit(2), fallback.Query{Semantic: fallback.Any}.WithLimit(2)} {
		c := start(t, q, Config{CanVoidPages: true})
		if st := c.Next(Answer{ServedRV: "50", Continue: "c", Items: 2}); !st.Accept || st.Next.Query.Continue != "c" {
			t.Fatalf("%v: %+v", q, st)
		}
		st := c.Next(Answer{Err: testfake.Gone()})
		if st.Action != vocab.RestartListNewerRV || !st.VoidPages || st.Next.Purpose != PurposeNewerRV {
			t.Fatalf("%v: %+v", q, st)
		}
		st = c.Next(Answer{ServedRV: "40"}) // a probe older than the handed snapshot
		if st.Next.Query.Semantic != fallback.NotOlderThan || st.Next.Query.ResourceVersion != "50" || st.Next.Query.Continue != "" {
			t.Fatalf("%v: restart sent %v, want NotOlderThan(50)", q, st.Next.Query)
		}
	}
}

// A restart that would void pages the caller cannot discard is refused.
func TestRestartRefusedWithoutOnRestart(t *testing.T) {
	c := start(t, fallback.Query{Semantic: fallback.MostRecent}.WithLimit(2), Config{})
	c.Next(Answer{ServedRV: "50", Continue: "c", Items: 2})
	if st := c.Next(Answer{Err: testfake.Gone()}); st.Action != vocab.Fail || st.Reason != reason.RestartNotAllowed || !st.Done {
		t.Fatalf("%+v", st)
	}
}

// Counted requests on the wire replace the estimate: a slow answer that
// took one request charges nothing, one that took 11 charges 10 (more than
// the backoff budget holds).
func TestCountedHiddenRetriesAreCharged(t *testing.T) {
	throttled := apierrors.NewTooManyRequests("slow down", 1)
	c, _, err := Start(fallback.Query{Semantic: fallback.MostRecent}, Config{Policy: policy.Policy{}.WithDefaults()})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Next(Answer{Err: throttled, Elapsed: 40 * time.Second, WireRequests: 1}); st.Failed() {
		t.Fatalf("one request, however slow: %v (%s), want a retry", st.Action, st.Reason)
	}
	c, _, _ = Start(fallback.Query{Semantic: fallback.MostRecent}, Config{Policy: policy.Policy{}.WithDefaults()})
	if st := c.Next(Answer{Err: throttled, Elapsed: time.Second, WireRequests: 11}); !st.Failed() {
		t.Fatalf("11 requests on the wire: %v (%s), want the budget spent", st.Action, st.Reason)
	}
}

// A server whose watch cache advances only on writes of the listed resource
// (no watch progress notifications, KEP-1904) answers a NotOlderThan list
// at a resourceVersion moved on by other resources "too large" until that
// resource is written. Once a consistent read shows the version exists, the
// list reads the newest state at once: no Retry-After wait. Exact keeps
// waiting (it cannot leave its snapshot), and so does every server whose
// cache catches up.
func TestTooLargeOnStuckWatchCacheFallsBackAtOnce(t *testing.T) {
	stuck := StaticBeliefs{Stuck: true}
	c := start(t, fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}, Config{Beliefs: stuck})
	st := c.Next(Answer{Err: testfake.TooLarge(1), Elapsed: 3 * time.Second})
	if st.Action != vocab.CheckRVExists || !st.Situation.WatchCacheStuck || st.Next.Purpose != PurposeCurrentRV {
		t.Fatalf("first too-large: %v %v %+v, want CheckRVExists", st.Action, st.Situation, st.Next)
	}
	st = c.Next(Answer{ServedRV: "201", Items: 1})
	if st.Action != vocab.FallbackMostRecent || st.Reason != reason.TooLargeCacheStuck || st.Row < 0 || st.Done {
		t.Fatalf("after the read: %v %s row %d, want FallbackMostRecent %s", st.Action, st.Reason, st.Row, reason.TooLargeCacheStuck)
	}
	if n := st.Next; n.Purpose != PurposePage || n.Wait != 0 || n.Query.Semantic != fallback.MostRecent || n.Options.ResourceVersion != "" {
		t.Fatalf("next request %+v, want MostRecent at once", n)
	}
	if ev := st.Event; ev == nil || reason.Code(ev.Reason) != reason.TooLargeCacheStuck || ev.After.Semantic != fallback.MostRecent ||
		!strings.Contains(ev.Detail, "199 exists") || !strings.Contains(ev.Detail, "KEP-1904") {
		t.Fatalf("event %+v", st.Event)
	}
	// The MostRecent answer is verified against the caller's floor.
	if st = c.Next(Answer{ServedRV: "198", Items: 1}); st.Accept || st.Class != vocab.ServedOlder {
		t.Fatalf("MostRecent served older than 199: %v %v", st.Action, st.Class)
	}

	// A version the caller has seen exists: no read, the first too-large falls back.
	c = start(t, (fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}), Config{Beliefs: stuck, LastObserved: func() string { return "199" }})
	if st = c.Next(Answer{Err: testfake.TooLarge(1)}); st.Action != vocab.FallbackMostRecent || st.Reason != reason.TooLargeCacheStuck || st.Next.Wait != 0 ||
		st.Event == nil || !strings.Contains(st.Event.Detail, "KEP-1904") {
		t.Fatalf("seen version: %v %s %+v", st.Action, st.Reason, st.Next)
	}

	// Otherwise the rules stay: wait Retry-After.
	for _, tc := range []struct {
		name string
		q    fallback.Query
		cfg  Config
	}{
		{"a cache that catches up", (fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}), Config{Beliefs: StaticBeliefs{}}},
		{"unknown", (fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}), Config{}},
		{"Exact", (fallback.Query{Semantic: fallback.Exact, ResourceVersion: "199"}), Config{Beliefs: stuck}},
		{"MostRecent fallback disabled", (fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}), Config{Beliefs: stuck, Policy: policy.Policy{DisableMostRecentFallback: true}}},
		{"TooLargeFail", (fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}), Config{Beliefs: stuck, Policy: policy.Policy{TooLargeAfterBudget: policy.TooLargeFail}}},
	} {
		c := start(t, tc.q, tc.cfg)
		if st := c.Next(Answer{Err: testfake.TooLarge(1)}); st.Action != vocab.CheckRVExists {
			t.Fatalf("%s: %v", tc.name, st.Action)
		}
		if st := c.Next(Answer{ServedRV: "201", Items: 1}); st.Action != vocab.WaitRetryAfter || st.Next.Wait < time.Second || st.Next.Query.ResourceVersion != "199" {
			t.Errorf("%s: %v %+v, want WaitRetryAfter then 199 again", tc.name, st.Action, st.Next)
		}
	}
}

func tooLargeAt(want, current string) error {
	err := apierrors.NewTimeoutError("Too large resource version: "+want+", current: "+current, 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// Without a belief about the server, the answers show it: two "too large"
// answers to one request whose reported current resourceVersion did not
// move mean the watch cache is not catching up, and the list reads the
// newest state instead of waiting again. A cache that moves is waited for.
func TestTooLargeStalledCacheIsSeenInTheAnswers(t *testing.T) {
	c := start(t, fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}, Config{})
	if st := c.Next(Answer{Err: tooLargeAt("199", "197")}); st.Action != vocab.CheckRVExists || st.Situation.WatchCacheStuck {
		t.Fatalf("first: %v %v", st.Action, st.Situation)
	}
	if st := c.Next(Answer{ServedRV: "201", Items: 1}); st.Action != vocab.WaitRetryAfter {
		t.Fatalf("after the read: %v, want WaitRetryAfter (one answer proves nothing)", st.Action)
	}
	st := c.Next(Answer{Err: tooLargeAt("199", "197")})
	if st.Action != vocab.FallbackMostRecent || st.Reason != reason.TooLargeCacheStuck || !st.Situation.WatchCacheStuck ||
		st.Next.Wait != 0 || st.Next.Query.Semantic != fallback.MostRecent {
		t.Fatalf("same current twice: %v %s %+v", st.Action, st.Reason, st.Next)
	}
	if st.Event == nil || !strings.Contains(st.Event.Detail, "197 in two answers") {
		t.Fatalf("event %+v", st.Event)
	}

	c = start(t, fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}, Config{})
	c.Next(Answer{Err: tooLargeAt("199", "197")})
	c.Next(Answer{ServedRV: "201", Items: 1})
	if st := c.Next(Answer{Err: tooLargeAt("199", "198")}); st.Action != vocab.WaitRetryAfter || st.Situation.WatchCacheStuck {
		t.Fatalf("a moving cache: %v %v, want WaitRetryAfter", st.Action, st.Situation)
	}
	// No current in the message (a proxy's 504): no evidence either way.
	c2 := start(t, fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "199"}, Config{})
	c2.Next(Answer{Err: tooLargeAt("199", "")})
	c2.Next(Answer{ServedRV: "201", Items: 1})
	if st := c2.Next(Answer{Err: tooLargeAt("199", "")}); st.Action != vocab.WaitRetryAfter {
		t.Fatalf("no current: %v, want WaitRetryAfter", st.Action)
	}
}
