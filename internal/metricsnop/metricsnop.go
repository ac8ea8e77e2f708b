// Package metricsnop holds the Recorder that records nothing, which every
// component uses when its options name no metrics.Recorder (metrics.Nop
// returns it to users). It does not import package metrics, which returns
// it; metrics asserts that Nop implements metrics.Recorder.
package metricsnop

import "time"

// Nop records nothing. Tests embed it to implement only the methods they
// check.
type Nop struct{}

// Or returns r, or Nop{} when r is nil. R is metrics.Recorder.
func Or[R any](r R) R {
	if any(r) == nil {
		return any(Nop{}).(R)
	}
	return r
}

func (Nop) List(string, string, string)               {}
func (Nop) Fallback(string, string)                   {}
func (Nop) Relist(string, string)                     {}
func (Nop) WatchRestart(string, string)               {}
func (Nop) Bookmark(string)                           {}
func (Nop) Items(string, int)                         {}
func (Nop) ResourceVersionAdvanced(string, time.Time) {}
func (Nop) ConsistencyCheck(string, string)           {}
func (Nop) Transition(string, string, string, string) {}
func (Nop) ListGateWait(string, time.Duration)        {}
func (Nop) ListGateShared(string)                     {}
func (Nop) ListGateOverdue(string)                    {}
func (Nop) StoreResourceVersion(string, string)       {}
func (Nop) ReadWait(string, time.Duration, string)    {}
func (Nop) ReadFallback(string, string)               {}
