package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// randomAnswer is one answer a server might give to a request asking for
// resourceVersion sentRV: pages at older, equal and newer versions (with
// and without a continue token), 410, "too large" with and without
// Retry-After, 429, 5xx, transport errors, 403, and a 200 that is not a list.
func randomAnswer(r *rand.Rand, sentRV string) Answer {
	rvs := []string{"", "5", "10", "20", "30", "900000000", sentRV}
	conts := []string{"", "", "a", "b", "c"}
	a := Answer{Elapsed: time.Duration(r.Intn(3)) * 20 * time.Second, WireRequests: r.Intn(3)}
	switch r.Intn(12) {
	case 0, 1, 2, 3:
		a.ServedRV, a.Continue, a.Items = rvs[r.Intn(len(rvs))], conts[r.Intn(len(conts))], r.Intn(3)
		a.PageBytes = int64(r.Intn(3) * 1000)
	case 4:
		a.Err = testfake.Gone()
	case 5:
		err := apierrors.NewTimeoutError("Too large resource version: 30, current: "+[]string{"10", "20"}[r.Intn(2)], r.Intn(3))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		a.Err = err
	case 6:
		a.Err = apierrors.NewTooManyRequests("slow down", r.Intn(3))
	case 7:
		a.Err = apierrors.NewInternalError(fmt.Errorf("boom"))
	case 8:
		a.Err = fmt.Errorf("connection reset by peer")
	case 9:
		a.Err = apierrors.NewForbidden(metav1.SchemeGroupVersion.WithResource("x").GroupResource(), "n", fmt.Errorf("no"))
	case 10:
		a.NotAList, a.Err = true, fmt.Errorf("not a list")
	case 11:
		a.Err = apierrors.NewServiceUnavailable("later")
	}
	return a
}

// randomCall starts a call with a random query, policy and configuration.
func randomCall(r *rand.Rand) (*Call, Request, error) {
	qs := []fallback.Query{(fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "20"}), (fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "20"}).WithLimit(2), (fallback.Query{Semantic: fallback.Exact, ResourceVersion: "20"}),
		(fallback.Query{Semantic: fallback.Exact, ResourceVersion: "20"}).WithLimit(2), (fallback.Query{Semantic: fallback.MostRecent}), (fallback.Query{Semantic: fallback.MostRecent}).WithLimit(2), (fallback.Query{Semantic: fallback.Any}),
		(fallback.Query{Semantic: fallback.Any}).WithLimit(2), {Semantic: fallback.MostRecent, Limit: 2, Continue: "tok"}}
	p := policy.Policy{MaxNewerRVRetries: r.Intn(3), MaxListRestarts: r.Intn(3), MaxTooLargeRetries: r.Intn(3), DisableMostRecentFallback: r.Intn(2) == 0,
		ContinueExpired: policy.ContinueExpiredPolicy(r.Intn(3)), TooLargeAfterBudget: policy.TooLargePolicy(r.Intn(2)),
		MaxRetryAfter: time.Duration(r.Intn(3)) * time.Second}
	p.Backoff.MaxRetries, p.Backoff.Jitter = r.Intn(4), -1
	cfg := Config{Policy: p.WithDefaults(), PageSize: 3, MaxPageSize: 10, MaxPageBytes: 4000, MaxRequests: r.Intn(4), CanVoidPages: r.Intn(2) == 0,
		Beliefs: StaticBeliefs{MatchSupport: MatchSupport(r.Intn(3)), Stuck: r.Intn(2) == 0}}
	if lo := []string{"", "25", "15"}[r.Intn(3)]; lo != "" {
		cfg.LastObserved = func() string { return lo }
	}
	c, req, err := Start(qs[r.Intn(len(qs))], cfg)
	return &c, req, err
}

// TestEveryStepNamesItsRow drives many calls with random answers and checks
// that every step the engine takes is one row of the table, carried out as
// the table says: the step names a row (Step.Row), that row is the one its
// situation matches, and the step's action and reason, and its event's, are
// that row's. Code that changed a row's answer after the lookup, or decided
// without one, fails here.
func TestEveryStepNamesItsRow(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	reached := map[reason.Code]int{}
	steps := 0
	for range 20000 {
		c, req, err := randomCall(r)
		if err != nil {
			continue
		}
		for range 25 {
			st := c.Next(randomAnswer(r, req.Options.ResourceVersion))
			steps++
			if st.Row < 0 || st.Row >= len(table) {
				t.Fatalf("step %v (%s) names no row", st.Action, st.Reason)
			}
			row := table[st.Row]
			if d := decide(st.Situation, c.p); d.index != st.Row {
				t.Fatalf("step names row %d, its situation %v matches row %d", st.Row, st.Situation, d.index)
			}
			if st.Action != row.Action || st.Reason != row.Reason {
				t.Fatalf("step %v (%s) carries out row %d: %v (%s)", st.Action, st.Reason, st.Row, row.Action, row.Reason)
			}
			if ev := st.Event; ev != nil && (ev.Action != row.Action || reason.Code(ev.Reason) != row.Reason) {
				t.Fatalf("event %v (%s) of row %d: %v (%s)", ev.Action, ev.Reason, st.Row, row.Action, row.Reason)
			}
			reached[st.Reason]++
			if st.Done {
				break
			}
			req = st.Next
		}
	}
	for _, must := range []reason.Code{reason.NotAList, reason.MaxRequests, reason.RestartNotAllowed,
		reason.NewerRVProbeFailed, reason.NewerRVProbeRetry, reason.TooLargeCacheStuck, reason.Rule1RetryNewerRV,
		reason.TooLargeWait, reason.RVNewerThanServer} {
		if reached[must] == 0 {
			t.Errorf("no step reached a row with reason %s", must)
		}
	}
	t.Logf("%d steps, %d reasons reached", steps, len(reached))
}
