package chaos

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/metrics"
)

// Counters is a metrics.Recorder that counts what steadywatch reports, by
// label, for the end-of-run summary (relists by cause, fallbacks by reason,
// watch restarts by reason, lists by semantic/outcome, transitions). Safe
// for concurrent use.
type Counters struct {
	metricsnop.Nop // the methods not recorded here
	mu             sync.Mutex
	m              map[string]map[string]int
}

var _ metrics.Recorder = (*Counters)(nil)

// NewCounters returns empty Counters.
func NewCounters() *Counters { return &Counters{m: map[string]map[string]int{}} }

// Inc adds one to family/label.
func (c *Counters) Inc(family, label string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.m[family]
	if f == nil {
		f = map[string]int{}
		c.m[family] = f
	}
	f[label]++
}

// Family returns a copy of one family's counts.
func (c *Counters) Family(family string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.m[family]))
	for k, v := range c.m[family] {
		out[k] = v
	}
	return out
}

// Total is the sum of one family's counts.
func (c *Counters) Total(family string) int {
	n := 0
	for _, v := range c.Family(family) {
		n += v
	}
	return n
}

// String renders every family, sorted, one per line.
func (c *Counters) String() string {
	c.mu.Lock()
	fams := make([]string, 0, len(c.m))
	for f := range c.m {
		fams = append(fams, f)
	}
	c.mu.Unlock()
	sort.Strings(fams)
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "%s: %s\n", f, FormatCounts(c.Family(f)))
	}
	return b.String()
}

// FormatCounts renders counts as "a=1 b=2", sorted by label.
func FormatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, " ")
}

// Families recorded by Counters.
const (
	FamilyList         = "lists"
	FamilyFallback     = "fallbacks"
	FamilyRelist       = "relists"
	FamilyWatchRestart = "watch-restarts"
	FamilyBookmark     = "bookmarks"
	FamilyTransition   = "transitions"
	FamilyConsistency  = "consistency-checks"
)

func (c *Counters) List(_, semantic, outcome string)          { c.Inc(FamilyList, semantic+"/"+outcome) }
func (c *Counters) Fallback(_, reason string)                 { c.Inc(FamilyFallback, reason) }
func (c *Counters) Relist(_, cause string)                    { c.Inc(FamilyRelist, cause) }
func (c *Counters) WatchRestart(_, reason string)             { c.Inc(FamilyWatchRestart, reason) }
func (c *Counters) Bookmark(string)                           { c.Inc(FamilyBookmark, "all") }
func (c *Counters) Items(string, int)                         {}
func (c *Counters) ResourceVersionAdvanced(string, time.Time) {}
func (c *Counters) ConsistencyCheck(_, result string)         { c.Inc(FamilyConsistency, result) }
func (c *Counters) Transition(_, from, to, _ string)          { c.Inc(FamilyTransition, from+"->"+to) }
