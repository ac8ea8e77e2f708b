package watchpipe

import (
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"k8s.io/apimachinery/pkg/watch"
)

// knownCount is the count of initial events a guard is told: n, already
// known and the channel closed.
func knownCount(n int) <-chan int {
	c := make(chan int, 1)
	c <- n
	close(c)
	return c
}

// A known count not yet reached: a pause longer than Timeout is waited for
// (up to BeforeCount); once the count is reached, AfterCount applies.
func TestGuardWaitsLongerWhileCountedEventsAreMissing(t *testing.T) {
	const timeout = 200 * time.Millisecond
	fw := watch.NewFakeWithChanSize(10, false)
	expected := knownCount(3)
	fw.Add(testfake.ConfigMap("a", "5"))
	stop := make(chan struct{})
	defer close(stop)
	type result struct {
		out  InitialEventsOutcome
		at   time.Time
		seen int
	}
	done := make(chan result, 1)
	go func() {
		seen := 0
		out, _ := AwaitInitialEvents(stop, fw, GuardOptions{Timeout: timeout, AfterCount: 50 * time.Millisecond, Expected: expected}, discard(),
			func(watch.Event) bool { seen++; return true })
		done <- result{out, time.Now(), seen}
	}()
	// A pause of 2x Timeout mid-stream (BeforeCount is 3x): no decision.
	select {
	case r := <-done:
		t.Fatalf("decided %v during a pause shorter than BeforeCount", r.out)
	case <-time.After(2 * timeout):
	}
	fw.Add(testfake.ConfigMap("b", "6"))
	fw.Add(testfake.ConfigMap("c", "7"))
	last := time.Now()
	// The count is reached; the end bookmark never comes.
	select {
	case r := <-done:
		if r.out != InitialEventsNotStreaming || r.seen != 3 {
			t.Fatalf("outcome %v after %d events", r.out, r.seen)
		}
		if d := r.at.Sub(last); d > timeout {
			t.Fatalf("decided %v after the last counted event, want about AfterCount", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no decision")
	}
}

func TestGuardBeforeCountDefaults(t *testing.T) {
	o := GuardOptions{}.withDefaults()
	if o.BeforeCount != 3*DefaultInitialEventsTimeout {
		t.Errorf("default BeforeCount %v", o.BeforeCount)
	}
	if o := (GuardOptions{Timeout: time.Minute, BeforeCount: time.Second}).withDefaults(); o.BeforeCount != time.Minute {
		t.Errorf("BeforeCount below Timeout: %v", o.BeforeCount)
	}
}

// A known count but not one initial event: the server may be ignoring
// sendInitialEvents (it answered a plain watch), so Timeout applies, not
// BeforeCount.
func TestGuardNoInitialEventAtAllUsesTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	fw := watch.NewFakeWithChanSize(10, false)
	expected := knownCount(3)
	stop := make(chan struct{})
	defer close(stop)
	start := time.Now()
	out, _ := AwaitInitialEvents(stop, fw, GuardOptions{Timeout: timeout, Expected: expected}, discard(),
		func(watch.Event) bool { return true })
	if out != InitialEventsNotStreaming {
		t.Fatalf("outcome %v, want not streaming", out)
	}
	if d := time.Since(start); d >= 3*timeout {
		t.Fatalf("decided after %v: BeforeCount (3x Timeout) applied without any initial event", d)
	}
}

// From MostRecent, a known non-zero count but no event yet: a server that
// ignores sendInitialEvents would be sending ADDED events too, so the quiet
// is a slow server (8 informers reading 244 MiB from etcd without the watch
// cache took longer than Timeout, as docs/benchmarks.md measures): BeforeCount
// applies, and the stream is kept when its events come after Timeout.
func TestGuardFromMostRecentWaitsForTheFirstCountedEvent(t *testing.T) {
	const timeout = 200 * time.Millisecond
	fw := watch.NewFakeWithChanSize(10, false)
	expected := knownCount(2)
	stop := make(chan struct{})
	defer close(stop)
	done := make(chan InitialEventsOutcome, 1)
	go func() {
		out, _ := AwaitInitialEvents(stop, fw, GuardOptions{Timeout: timeout, Expected: expected, FromMostRecent: true}, discard(),
			func(watch.Event) bool { return true })
		done <- out
	}()
	select {
	case out := <-done:
		t.Fatalf("decided %v before BeforeCount without a first event", out)
	case <-time.After(2 * timeout):
	}
	fw.Add(testfake.ConfigMap("a", "5"))
	fw.Add(testfake.ConfigMap("b", "6"))
	fw.Action(watch.Bookmark, endBookmark("7"))
	select {
	case out := <-done:
		if out != InitialEventsEnded {
			t.Fatalf("outcome %v, want the stream kept to its end", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no decision")
	}

	// And a stream from MostRecent that never sends anything still ends,
	// at BeforeCount.
	fw2 := watch.NewFakeWithChanSize(10, false)
	expected2 := knownCount(2)
	start := time.Now()
	out, _ := AwaitInitialEvents(stop, fw2, GuardOptions{Timeout: timeout, Expected: expected2, FromMostRecent: true}, discard(),
		func(watch.Event) bool { return true })
	if d := time.Since(start); out != InitialEventsNotStreaming || d < 3*timeout {
		t.Fatalf("outcome %v after %v, want not streaming after BeforeCount (%v)", out, d, 3*timeout)
	}
}
