package main

import (
	"regexp"
	"sync"
)

// expected tells a side's timeline lines about faults the scene causes on
// purpose from lines about anything else, so a reader does not take a
// deliberate connection drop for a failure:
//
//   - a dropped watch: the proxy resets the HTTP/2 stream, and client-go
//     reports "an error on the server ("unable to decode an event from the
//     watch stream: stream error: stream ID 7; INTERNAL_ERROR; received from
//     peer") has prevented the request from succeeding". Each drop the scene
//     announces (drops) lets one such stream's error be shown as
//     "connection dropped by the demo (expected fault)";
//   - a window (etcd compacted, a member restarting) during which the
//     side's errors are the scene's doing: they are prefixed
//     "expected fault (why): ".
//
// An INTERNAL_ERROR with no drop announced, or an error outside a window, is
// shown as it is.
type expected struct {
	mu      sync.Mutex
	drops   int             // announced drops not yet seen
	streams map[string]bool // stream errors already attributed to a drop
	window  string          // why errors are expected now; "" = they are not
}

// streamReset matches client-go's report of a reset watch stream, with or
// without its StatusError wrapping; group 1 is the stream ID.
var streamReset = regexp.MustCompile(`(?:an error on the server \(")?(?:unable to decode an event from the watch stream: )?stream error: stream ID (\d+); INTERNAL_ERROR(?:; received from peer)?(?:"\) has prevented the request from succeeding)?`)

// dropped announces n deliberately dropped watch streams.
func (e *expected) dropped(n int) {
	e.mu.Lock()
	e.drops += n
	e.mu.Unlock()
}

// during marks errors as expected for why ("" ends the window).
func (e *expected) during(why string) {
	e.mu.Lock()
	e.window = why
	e.mu.Unlock()
}

// label rewrites text about an error: a stream reset the scene caused
// becomes "connection dropped by the demo (expected fault; ...)". It reports
// whether text is about an expected fault.
func (e *expected) label(text string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	isExpected := false
	text = streamReset.ReplaceAllStringFunc(text, func(m string) string {
		id := streamReset.FindStringSubmatch(m)[1]
		if !e.streams[id] {
			if e.drops == 0 {
				return m
			}
			e.drops--
			if e.streams == nil {
				e.streams = map[string]bool{}
			}
			e.streams[id] = true
		}
		isExpected = true
		return "connection dropped by the demo (expected fault; client-go reports the reset stream " + id + " as INTERNAL_ERROR)"
	})
	if !isExpected && e.window != "" {
		return "expected fault (" + e.window + "): " + text, true
	}
	return text, isExpected
}
