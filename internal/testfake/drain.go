package testfake

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// Drain reads w until its result channel closes and returns the events;
// it fails the test if the channel is still open after timeout (a watch
// that should have ended, or a test that forgot to stop it).
func Drain(tb testing.TB, w watch.Interface, timeout time.Duration) []watch.Event {
	tb.Helper()
	var out []watch.Event
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-deadline.C:
			tb.Fatalf("the watch did not end within %v: %d events so far", timeout, len(out))
		}
	}
}
