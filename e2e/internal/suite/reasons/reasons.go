// Package reasons holds the metrics.Recorder the e2e suites and the soak
// share to count steadywatch's fallbacks (and, where asked, relists and
// watch restarts) by reason.
//
// It is apart from package suite because it needs no Ginkgo: programs such
// as cmd/soak-faults use it too, and importing Ginkgo would register its
// flags on theirs.
package reasons

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
)

// Counter counts what a steadywatch path reports to its metrics.Recorder by
// reason; the other Recorder calls are ignored. It is safe for concurrent
// use.
type Counter struct {
	metricsnop.Nop
	fallbacksOnly bool
	mu            sync.Mutex
	n             map[string]int
}

// New returns a Counter of fallbacks by reason, relists as
// "relist:<cause>" and watch restarts as "watch-restart:<reason>".
func New() *Counter { return &Counter{n: map[string]int{}} }

// NewFallbacks returns a Counter of fallbacks by reason only.
func NewFallbacks() *Counter { return &Counter{fallbacksOnly: true, n: map[string]int{}} }

func (c *Counter) add(k string) { c.mu.Lock(); c.n[k]++; c.mu.Unlock() }

// Fallback implements metrics.Recorder.
func (c *Counter) Fallback(_, reason string) { c.add(reason) }

// Relist implements metrics.Recorder.
func (c *Counter) Relist(_, cause string) {
	if !c.fallbacksOnly {
		c.add("relist:" + cause)
	}
}

// WatchRestart implements metrics.Recorder.
func (c *Counter) WatchRestart(_, reason string) {
	if !c.fallbacksOnly {
		c.add("watch-restart:" + reason)
	}
}

// Get returns the count of key (a fallback reason, "relist:<cause>" or
// "watch-restart:<reason>").
func (c *Counter) Get(key string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.n[key] }

// String returns every count as "key=n", sorted by key, separated by
// spaces ("" for none).
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.n)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.n[k]))
	}
	return strings.Join(parts, " ")
}
