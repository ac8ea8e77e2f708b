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
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
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
// by family and label, and keeps every report in order (Events). It is the
// SDK tests' testfake.Recorder, keeping the families above (the other
// Recorder calls are dropped), seen through e2e's families, labels and
// keys. It is safe for concurrent use.
type Counter struct {
	testfake.Recorder
	fallbacksOnly bool
}

// counted are the testfake.Recorder families a Counter keeps.
var counted = []string{testfake.List, testfake.Fallback, testfake.Relist, testfake.WatchRestart,
	testfake.Bookmark, testfake.Transition, testfake.ConsistencyCheck, testfake.ReadFallback}

// New returns a Counter whose Get and String cover fallbacks by reason,
// relists as "relist:<cause>" and watch restarts as
// "watch-restart:<reason>".
func New() *Counter { return &Counter{Recorder: testfake.Recorder{Keep: counted}} }

// NewFallbacks returns a Counter whose Get and String cover fallbacks by
// reason only.
func NewFallbacks() *Counter { c := New(); c.fallbacksOnly = true; return c }

// event returns a report as its Event and its Get key ("" for none).
func (c *Counter) event(r testfake.Report) (e Event, key string) {
	e = Event{At: r.At, Label: r.Label, Reason: r.Label}
	switch r.Family {
	case testfake.List: // "<semantic>:<outcome>"
		e.Family, e.Label = FamilyList, strings.Replace(r.Label, ":", "/", 1)
		e.Reason = e.Label
	case testfake.Fallback:
		e.Family, key = FamilyFallback, r.Label
	case testfake.Relist:
		e.Family, key = FamilyRelist, "relist:"+r.Label
	case testfake.WatchRestart:
		e.Family, key = FamilyWatchRestart, "watch-restart:"+r.Label
	case testfake.Bookmark:
		e.Family, e.Label, e.Reason = FamilyBookmark, "all", "all"
	case testfake.Transition: // "<from>-><to>: <reason>"
		e.Family = FamilyTransition
		e.Label, e.Reason, _ = strings.Cut(r.Label, ": ")
	case testfake.ConsistencyCheck:
		e.Family = FamilyConsistency
	case testfake.ReadFallback:
		e.Family = FamilyReadFallback
	}
	if c.fallbacksOnly && e.Family != FamilyFallback {
		key = ""
	}
	return e, key
}

// counts returns the counts Get covers, by key.
func (c *Counter) counts() map[string]int {
	n := map[string]int{}
	for _, r := range c.Reports() {
		if _, key := c.event(r); key != "" {
			n[key]++
		}
	}
	return n
}

// Get returns the count of key (a fallback reason, "relist:<cause>" or
// "watch-restart:<reason>").
func (c *Counter) Get(key string) int { return c.counts()[key] }

// String returns every count Get covers as "key=n", sorted by key,
// separated by spaces ("" for none).
func (c *Counter) String() string {
	n := c.counts()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, n[k]))
	}
	return strings.Join(parts, " ")
}

// Family returns one family's counts by label.
func (c *Counter) Family(family string) map[string]int {
	out := map[string]int{}
	for _, e := range c.Events() {
		if e.Family == family {
			out[e.Label]++
		}
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
	var out []string
	for _, e := range c.Events() {
		if e.Family == family {
			out = append(out, e.Label)
		}
	}
	return out
}

// Events returns every report so far, in order.
func (c *Counter) Events() []Event {
	reports := c.Reports()
	out := make([]Event, 0, len(reports))
	for _, r := range reports {
		e, _ := c.event(r)
		out = append(out, e)
	}
	return out
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
