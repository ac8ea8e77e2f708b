package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

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
}

func newTimeline(out io.Writer) *timeline {
	return &timeline{start: time.Now(), now: time.Now, out: out}
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

// isSync reports whether r (re)fills a store: a list or a streaming list.
func isSync(r faults.Request) bool {
	q, _ := url.ParseQuery(r.RawQuery)
	if r.Verb == "list" {
		// The streaming-list guard's limit=1 count of the objects to expect
		// (lister.ExpectedInitialEvents) does not fill a store.
		return !(q.Get("limit") == "1" && q.Get("resourceVersion") == "" && q.Get("continue") == "")
	}
	return r.Verb == "watch" && q.Get("sendInitialEvents") == "true"
}

// logSink turns the steadywatch reflector's and lister's structured logs
// (klog.FromContext, V(2)) into timeline lines.
type logSink struct {
	t   *timeline
	who string
	exp *expected
	// flush writes the side's requests answered so far, so that a line
	// about what the reflector did with an answer follows the request.
	flush func()
}

var _ logr.LogSink = (*logSink)(nil)

func (s *logSink) Init(logr.RuntimeInfo)          {}
func (s *logSink) Enabled(level int) bool         { return level <= 2 }
func (s *logSink) WithValues(...any) logr.LogSink { return s }
func (s *logSink) WithName(string) logr.LogSink   { return s }
func (s *logSink) Error(err error, msg string, kv ...any) {
	s.flush()
	text, _ := s.exp.label(fmt.Sprintf("%s: %v %s", msg, err, kvString(kv)))
	s.t.say(s.who, "error: %s", text)
}

func (s *logSink) Info(_ int, msg string, kv ...any) {
	s.flush()
	m := kvMap(kv)
	switch msg {
	case "Reflector transition":
		switch m["reason"] {
		case "backoff-done", "start":
			return
		}
		detail := m["detail"]
		if errorReasons[m["reason"]] {
			detail, _ = s.exp.label(detail)
		}
		s.t.say(s.who, "%-13s %s", m["to"], detail)
	case "Watch failed":
		// The transition that follows says the same with its consequence;
		// this line is kept only for a failure that is not expected.
		if _, ok := s.exp.label(m["err"]); !ok {
			s.t.say(s.who, "%s %s", msg, kvString(kv))
		}
	case "list fallback":
		s.t.say(s.who, "fallback %s %s", m["reason"], kvString(kv))
	case "server behaviour observed":
		s.t.say(s.who, "learned %s=%s: %s", m["capability"], m["support"], m["detail"])
	default:
		s.t.say(s.who, "%s %s", msg, kvString(kv))
	}
}

func kvMap(kv []any) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
	}
	return m
}

func kvString(kv []any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if k := fmt.Sprint(kv[i]); k != "reason" {
			fmt.Fprintf(&b, "%s=%v ", k, kv[i+1])
		}
	}
	return strings.TrimSpace(b.String())
}
