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

// timeline prints numbered-by-time lines: "[01:12.3] ours   relist ...".
type timeline struct {
	start time.Time
	mu    sync.Mutex
	out   io.Writer
}

func newTimeline(out io.Writer) *timeline { return &timeline{start: time.Now(), out: out} }

func (t *timeline) stamp(at time.Time) string {
	d := at.Sub(t.start)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%02d:%04.1f", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
}

// say prints one line for who ("stock", "ours", "demo", ...).
func (t *timeline) say(who, format string, args ...any) {
	t.sayAt(time.Now(), who, format, args...)
}

// sayAt is say stamped with the time something happened (e.g. when a
// request was sent), which may be a little before the line is printed.
func (t *timeline) sayAt(at time.Time, who, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, "[%s] %-6s %s\n", t.stamp(at), who, fmt.Sprintf(format, args...))
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
}

var _ logr.LogSink = (*logSink)(nil)

func (s *logSink) Init(logr.RuntimeInfo)          {}
func (s *logSink) Enabled(level int) bool         { return level <= 2 }
func (s *logSink) WithValues(...any) logr.LogSink { return s }
func (s *logSink) WithName(string) logr.LogSink   { return s }
func (s *logSink) Error(err error, msg string, kv ...any) {
	s.t.say(s.who, "error: %s: %v %s", msg, err, kvString(kv))
}

func (s *logSink) Info(_ int, msg string, kv ...any) {
	m := kvMap(kv)
	switch msg {
	case "Reflector transition":
		switch m["reason"] {
		case "backoff-done", "start":
			return
		}
		s.t.say(s.who, "%-13s %s", m["to"], m["detail"])
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
