package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

// timeline prints lines stamped with the time since the demo started:
// "[01:12.3] ours   relist ...". Lines come from both sides, the scene and
// the sides' request followers concurrently; each is stamped when it is
// written, under the lock, so the stamps never go backwards. (A line about a
// request is written once its answer is known; when that is well after the
// request was sent, the line says when it was sent.)
type timeline struct {
	start time.Time
	now   func() time.Time
	mu    sync.Mutex
	out   io.Writer
	// detail: lines written with verbose are printed (-v).
	detail bool
}

func newTimeline(out io.Writer, detail bool) *timeline {
	return &timeline{start: time.Now(), now: time.Now, out: out, detail: detail}
}

func (t *timeline) stamp(at time.Time) string {
	d := at.Sub(t.start)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%02d:%04.1f", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
}

// say prints one line for who ("stock", "ours", "demo", ...), stamped now.
func (t *timeline) say(who, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, "[%s] %-6s %s\n", t.stamp(t.now()), who, fmt.Sprintf(format, args...))
}

// verbose is say for a line printed with -v only.
func (t *timeline) verbose(who, format string, args ...any) {
	if t.detail {
		t.say(who, format, args...)
	}
}

// sentLag is how long after its arrival at the proxy a request's line may be
// written before the line also says when it was sent.
const sentLag = 250 * time.Millisecond

// sayRequest prints a request once its answer is known: stamped now, with
// the time it was sent when that is more than sentLag ago.
func (t *timeline) sayRequest(who string, r faults.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	line := describeRequest(r)
	if now.Sub(r.Time) > sentLag {
		line += fmt.Sprintf(" (sent at %s)", t.stamp(r.Time))
	}
	fmt.Fprintf(t.out, "[%s] %-6s sent          %s\n", t.stamp(now), who, line)
}

// raw prints a line without a timestamp (headers, tables).
func (t *timeline) raw(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, format+"\n", args...)
}

// describeRequest renders a logged proxy request the way a reader thinks of
// it: "LIST rv=4711 match=NotOlderThan -> 200".
func describeRequest(r faults.Request) string {
	q, _ := url.ParseQuery(r.RawQuery)
	verb := strings.ToUpper(r.Verb)
	var parts []string
	streaming := q.Get("sendInitialEvents") == "true"
	if streaming {
		verb = "WATCH(streaming list)"
		parts = append(parts, "sendInitialEvents=true")
	}
	rv, hasRV := q["resourceVersion"]
	switch {
	case !hasRV || rv[0] == "":
		parts = append(parts, `rv=""`)
	default:
		parts = append(parts, "rv="+rv[0])
	}
	if m := q.Get("resourceVersionMatch"); m != "" {
		parts = append(parts, "match="+m)
	}
	if l := q.Get("limit"); l != "" {
		parts = append(parts, "limit="+l)
	}
	if q.Get("continue") != "" {
		parts = append(parts, "continue=<token>")
	}
	s := fmt.Sprintf("%s %s", verb, strings.Join(parts, " "))
	if r.Status != 0 {
		s += fmt.Sprintf(" -> %d", r.Status)
	}
	if r.Fault != "" {
		s += " [" + r.Fault + "]"
	}
	return s
}
