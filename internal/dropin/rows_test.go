package dropin

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/watchpipe"

	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/policy"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// TestAttemptOutcomesAreRows checks that the ListerWatcher's no-progress
// delay follows the decision table: each attempt's end is decided by the
// row its situation matches (OpDropInAttempt), and the gate does what the
// row says: a row that waits makes the next watch wait, a row that does
// not clears the wait. Code that moved the gate without asking the table,
// or against its answer, fails here.
func TestAttemptOutcomesAreRows(t *testing.T) {
	lw := &ListerWatcher{gate: newProgressGate()}
	var decided []engine.Decision
	lw.observe = func(sit engine.Situation, d engine.Decision) {
		if want := engine.Decide(sit, policy.Policy{}); want != d || d.Row < 0 {
			t.Errorf("situation %v: decided %+v, the table says %+v", sit, d, want)
		}
		decided = append(decided, d)
	}
	for i, progressed := range []bool{false, false, true, false, true, true} {
		if progressed {
			lw.noteProgress()
		} else {
			lw.noteNoProgress(logr.Discard(), "test")
		}
		if len(decided) != i+1 {
			t.Fatalf("attempt %d (progressed %t): %d decisions recorded, want %d", i, progressed, len(decided), i+1)
		}
		d := decided[i]
		if want := engine.WaitNone; progressed && d.Wait != want || !progressed && d.Wait != engine.WaitNoProgress {
			t.Errorf("attempt %d (progressed %t): row %d waits %s", i, progressed, d.Row, d.Wait)
		}
		if got, want := lw.WatchDelayed(), d.Wait == engine.WaitNoProgress; got != want {
			t.Errorf("attempt %d: row %d (%s, %s), the next watch delayed %t", i, d.Row, d.Reason, d.Wait, got)
		}
		if !progressed && d.Reason != reason.NoProgressBackoff {
			t.Errorf("attempt %d: reason %s", i, d.Reason)
		}
	}
	if lw.gate.failures != 0 {
		t.Errorf("after progress, %d failures counted", lw.gate.failures)
	}
}

// decisions records every decision lw makes for a situation of one of ops,
// and fails t when any decision is not the row the table gives for its
// situation.
func decisions(t *testing.T, lw *ListerWatcher, ops ...engine.Op) *[]engine.Decision {
	t.Helper()
	var out []engine.Decision
	lw.observe = func(sit engine.Situation, d engine.Decision) {
		if want := engine.Decide(sit, policy.Policy{}); want != d || d.Row < 0 {
			t.Errorf("situation %v: decided %+v, the table says %+v", sit, d, want)
		}
		if slices.Contains(ops, sit.Op) {
			out = append(out, d)
		}
	}
	return &out
}

func configMapList(rv string) *corev1.ConfigMapList {
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
}

// TestListChoicesAreRows checks that what the ListerWatcher lists for
// client-go is what the rows say: the query sent after a streaming list at
// the same resourceVersion failed (op=dropin-list), and whether a list
// served older than what was delivered is asked again (op=dropin-listed).
// Each case sends the query the row's Then names, and nothing decided in
// code after the lookup changes it.
func TestListChoicesAreRows(t *testing.T) {
	for _, tc := range []struct {
		name      string
		asked     fallback.Query
		unservedC vocab.Class // the streaming list at asked's resourceVersion just failed so (OK: none)
		served    []string    // the resourceVersions the lists are served at, in turn
		delivered string      // what a first list delivered ("": no first list)
		want      []fallback.Query
	}{
		{name: "NotOlderThan after a too-large streaming list at it", asked: fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "100"},
			unservedC: vocab.TooLargeRV, served: []string{"120"}, want: []fallback.Query{{Semantic: fallback.MostRecent}}},
		{name: "NotOlderThan after a streaming list at it got no response", asked: fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "100"},
			unservedC: vocab.NoAnswer, served: []string{"120"}, want: []fallback.Query{{Semantic: fallback.MostRecent}}},
		{name: "NotOlderThan after a streaming list at it was invalid", asked: fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "100"},
			unservedC: vocab.Invalid, served: []string{"120"}, want: []fallback.Query{{Semantic: fallback.NotOlderThan, ResourceVersion: "100"}}},
		{name: "NotOlderThan with nothing unserved", asked: fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "100"},
			served: []string{"120"}, want: []fallback.Query{{Semantic: fallback.NotOlderThan, ResourceVersion: "100"}}},
		{name: "stale MostRecent list asked again", asked: fallback.Query{Semantic: fallback.MostRecent}, delivered: "200",
			served: []string{"150", "210"}, want: []fallback.Query{{Semantic: fallback.MostRecent}, {Semantic: fallback.NotOlderThan, ResourceVersion: "200"}}},
		{name: "stale Any list asked again", asked: fallback.Query{Semantic: fallback.Any}, delivered: "200",
			served: []string{"150", "210"}, want: []fallback.Query{{Semantic: fallback.Any}, {Semantic: fallback.NotOlderThan, ResourceVersion: "200"}}},
		{name: "an Exact list is handed over as asked", asked: fallback.Query{Semantic: fallback.Exact, ResourceVersion: "150"}, delivered: "200",
			served: []string{"150"}, want: []fallback.Query{{Semantic: fallback.Exact, ResourceVersion: "150"}}},
		{name: "a list not older is handed over", asked: fallback.Query{Semantic: fallback.MostRecent}, delivered: "200",
			served: []string{"250"}, want: []fallback.Query{{Semantic: fallback.MostRecent}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent []fallback.Query
			served := tc.served
			if tc.delivered != "" {
				served = append([]string{tc.delivered}, served...)
			}
			lw := New(Config{
				Name: "test", Metrics: &testfake.Recorder{},
				Selectors: func(o metav1.ListOptions) metav1.ListOptions { return o },
				List: func(_ context.Context, q fallback.Query, _ metav1.ListOptions) (runtime.Object, Listed, error) {
					sent = append(sent, q)
					if len(served) == 0 {
						return nil, Listed{}, errors.New("a list more than the rows name")
					}
					rv := served[0]
					served = served[1:]
					return configMapList(rv), Listed{ResourceVersion: rv, Pages: 1}, nil
				},
			})
			ctx := context.Background()
			if tc.delivered != "" {
				if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
				sent = nil
			}
			decided := decisions(t, lw, engine.OpDropInList, engine.OpDropInListed)
			if tc.unservedC != vocab.OK {
				lw.unserved, lw.unservedC = tc.asked.ResourceVersion, tc.unservedC
			}
			opts := metav1.ListOptions{ResourceVersion: tc.asked.ResourceVersion}
			switch tc.asked.Semantic {
			case fallback.NotOlderThan:
				opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
			case fallback.Exact:
				opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
			case fallback.Any:
				opts.ResourceVersion = "0"
			}
			if _, err := lw.ListWithContext(ctx, opts); err != nil {
				t.Error(err)
			}
			if !slices.Equal(sent, tc.want) {
				t.Errorf("sent %v, want %v", sent, tc.want)
			}
			if len(*decided) != 2 || (*decided)[0].Row < 0 || (*decided)[1].Row < 0 {
				t.Fatalf("decisions %+v: want a list row and a listed row", *decided)
			}
			// The queries sent are the ones the rows name.
			if got := (*decided)[0].Then == engine.ThenListMostRecent; got != (sent[0].Semantic == fallback.MostRecent && tc.asked.Semantic != fallback.MostRecent) {
				t.Errorf("list row %d (%s) but sent %v for %v", (*decided)[0].Row, (*decided)[0].Then, sent[0], tc.asked)
			}
			if got := (*decided)[1].Then == engine.ThenListNotOlder; got != (len(sent) == 2) {
				t.Errorf("listed row %d (%s) but %d lists sent", (*decided)[1].Row, (*decided)[1].Then, len(sent))
			}
		})
	}
}

// TestStreamingRefusalIsARow checks that a streaming list is refused without
// a request only by the row for it (op=dropin-stream): with streaming lists
// disabled, or a server known not to stream, the refusal is decided by the
// table and counted with the row's reason; no refusal without a decision.
func TestStreamingRefusalIsARow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		disabled  bool
		streaming capability.Support
	}{
		{name: "disabled by the options", disabled: true, streaming: capability.Yes},
		{name: "a server known not to stream", streaming: capability.No},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &testfake.Recorder{}
			lw := New(Config{
				Name: "test", Metrics: rec, DisableStreamingList: tc.disabled,
				Server: capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{
					capability.StreamingList: tc.streaming}}),
				Selectors: func(o metav1.ListOptions) metav1.ListOptions { return o },
			})
			decided := decisions(t, lw, engine.OpDropInStream)
			send := true
			_, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: &send, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if !errors.Is(err, watchpipe.ErrStreamingListUnsupported) {
				t.Fatalf("err %v: want the streaming list refused", err)
			}
			if len(*decided) != 1 || (*decided)[0].Then != engine.ThenListSame || (*decided)[0].Reason != reason.StreamRejected {
				t.Fatalf("refused after decisions %+v: want the one row that lists instead", *decided)
			}
			if got := rec.Count(testfake.Fallback, string(reason.StreamRejected)); got != 1 {
				t.Errorf("%d fallbacks counted with %s", got, reason.StreamRejected)
			}
		})
	}
}

// TestStallIsARow checks that a watch that delivers nothing for
// StallTimeout is ended by the row for it (op=dropin-stall): the decision
// is the table's, the restart is counted with the row's reason, and the
// watch client-go holds ends, so it watches again.
func TestStallIsARow(t *testing.T) {
	rec := &testfake.Recorder{}
	lw := New(Config{Name: "test", Metrics: rec, StallTimeout: 20 * time.Millisecond,
		Selectors: func(o metav1.ListOptions) metav1.ListOptions { return o }})
	decided := decisions(t, lw, engine.OpDropInStall)
	inner := watch.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := lw.follow(ctx, inner, logr.Discard(), "5", lw.pipe.Watch("5", false), nil, nil)
	for range w.ResultChan() {
		t.Fatal("an event from a watch that sent none")
	}
	if stalls := *decided; len(stalls) != 1 || stalls[0].Reason != reason.WatchStalled || stalls[0].Then != engine.ThenWatchAgain {
		t.Fatalf("decisions %+v: want one stall row", *decided)
	}
	if got := rec.Count(testfake.WatchRestart, string(reason.WatchStalled)); got != 1 {
		t.Errorf("%d watch restarts counted with %s", got, reason.WatchStalled)
	}
}
