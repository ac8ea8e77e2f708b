// Package reasons holds the metrics.Recorder the e2e suites, the soak, the
// chaos run and the demo share to count what steadywatch reports by reason:
// fallbacks, relists, watch restarts, transitions, bookmarks, lists,
// consistency checks and read fallbacks.
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
	"time"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
)

// The families a Counter counts, each by label.
const (
	FamilyList         = "lists"              // label "<semantic>/<outcome>"
	FamilyFallback     = "fallbacks"          // label: the reason
	FamilyRelist       = "relists"            // label: the cause
	FamilyWatchRestart = "watch-restarts"     // label: the reason
	FamilyBookmark     = "bookmarks"          // label "all"
	FamilyTransition   = "transitions"        // label "<from>-><to>"
	FamilyConsistency  = "consistency-checks" // label: the result
	FamilyReadFallback = "read-fallbacks"     // label: the reason
)

// Event is one report, in the order a Counter received it.
type Event struct {
	At     time.Time
	Family string // one of the Family constants
	Label  string // its label in the family
	Reason string // a transition's reason; the label otherwise
}

// Counter counts what a steadywatch path reports to its metrics.Recorder,
// by family and label, and keeps every report in order (Events). The other
// Recorder calls are ignored. It is safe for concurrent use.
type Counter struct {
	metricsnop.Nop
	fallbacksOnly bool
	mu            sync.Mutex
	n             map[string]int
	fam           map[string]map[string]int
	events        []Event
}

// New returns a Counter whose Get and String cover fallbacks by reason,
// relists as "relist:<cause>" and watch restarts as
// "watch-restart:<reason>".
func New() *Counter { return &Counter{n: map[string]int{}, fam: map[string]map[string]int{}} }

// NewFallbacks returns a Counter whose Get and String cover fallbacks by
// reason only.
func NewFallbacks() *Counter { c := New(); c.fallbacksOnly = true; return c }

func (c *Counter) add(family, label, reason, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.fam[family]
	if f == nil {
		f = map[string]int{}
		c.fam[family] = f
	}
	f[label]++
	c.events = append(c.events, Event{At: time.Now(), Family: family, Label: label, Reason: reason})
	if key != "" && (!c.fallbacksOnly || family == FamilyFallback) {
		c.n[key]++
	}
}

// List implements metrics.Recorder.
func (c *Counter) List(_, semantic, outcome string) {
	l := semantic + "/" + outcome
	c.add(FamilyList, l, l, "")
}

// Fallback implements metrics.Recorder.
func (c *Counter) Fallback(_, reason string) { c.add(FamilyFallback, reason, reason, reason) }

// Relist implements metrics.Recorder.
func (c *Counter) Relist(_, cause string) { c.add(FamilyRelist, cause, cause, "relist:"+cause) }

// WatchRestart implements metrics.Recorder.
func (c *Counter) WatchRestart(_, reason string) {
	c.add(FamilyWatchRestart, reason, reason, "watch-restart:"+reason)
}

// Bookmark implements metrics.Recorder.
func (c *Counter) Bookmark(string) { c.add(FamilyBookmark, "all", "all", "") }

// ConsistencyCheck implements metrics.Recorder.
func (c *Counter) ConsistencyCheck(_, result string) { c.add(FamilyConsistency, result, result, "") }

// Transition implements metrics.Recorder.
func (c *Counter) Transition(_, from, to, reason string) {
	c.add(FamilyTransition, from+"->"+to, reason, "")
}

// ReadFallback implements metrics.Recorder.
func (c *Counter) ReadFallback(_, reason string) { c.add(FamilyReadFallback, reason, reason, "") }

// Get returns the count of key (a fallback reason, "relist:<cause>" or
// "watch-restart:<reason>").
func (c *Counter) Get(key string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.n[key] }

// String returns every count Get covers as "key=n", sorted by key,
// separated by spaces ("" for none).
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.n)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.n[k]))
	}
	return strings.Join(parts, " ")
}

// Family returns a copy of one family's counts by label.
func (c *Counter) Family(family string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.fam[family])
	if out == nil {
		out = map[string]int{}
	}
	return out
}

// Total is the sum of one family's counts.
func (c *Counter) Total(family string) int {
	n := 0
	for _, v := range c.Family(family) {
		n += v
	}
	return n
}

// Labels returns one family's labels in the order they were reported, one
// per report (nil for none).
func (c *Counter) Labels(family string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.events {
		if e.Family == family {
			out = append(out, e.Label)
		}
	}
	return out
}

// Events returns every report so far, in order.
func (c *Counter) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// FormatCounts renders counts as "a=1 b=2", sorted by label ("(none)" for
// none).
func FormatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
