package dropin

import (
	"testing"

	"github.com/go-logr/logr"

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
