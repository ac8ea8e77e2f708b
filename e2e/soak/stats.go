package soak

import (
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

// Paths, in the order of the generated table. Stock is the baseline.
const (
	PathStock       = "stock informer"
	PathDropIn      = "drop-in informer"
	PathFactory     = "NewSharedInformerFactory"
	PathInformerFor = "NewInformerFor"
	PathReflector   = "reflector.New"
)

// Paths is every client the soak runs, stock first.
var Paths = []string{PathStock, PathDropIn, PathFactory, PathInformerFor, PathReflector}

// pathIDs name the paths on the command line (soak-faults -paths), in
// Paths' order.
var pathIDs = []struct{ id, path string }{
	{"stock", PathStock}, {"drop-in", PathDropIn}, {"factory", PathFactory}, {"informerfor", PathInformerFor}, {"reflector", PathReflector},
}

// PathIDs returns the short name of every path, in Paths' order.
func PathIDs() []string {
	out := make([]string, 0, len(pathIDs))
	for _, p := range pathIDs {
		out = append(out, p.id)
	}
	return out
}

// PathsByID returns the paths named in ids (short names, see PathIDs), in
// Paths' order; unknown names are returned in unknown.
func PathsByID(ids []string) (out, unknown []string) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for _, p := range pathIDs {
		if want[p.id] {
			out = append(out, p.path)
			delete(want, p.id)
		}
	}
	for _, id := range ids {
		if want[id] {
			unknown = append(unknown, id)
			delete(want, id)
		}
	}
	return out, unknown
}

// Wire is what one path sent in one phase, counted at the proxy.
type Wire struct {
	Requests int `json:"requests"`
	// Lists are plain lists (the streaming-list guard's limit=1 count
	// probes included, counted also in Probes); StreamingLists are watches
	// with sendInitialEvents=true; Watches are plain watches.
	Lists          int `json:"lists"`
	Probes         int `json:"probes"`
	StreamingLists int `json:"streamingLists"`
	Watches        int `json:"watches"`
	// Faulted are the requests the fault answered or changed (the proxy
	// recorded a fault on them): how often the path met it.
	Faulted int `json:"faulted"`
	// PerMinute is Requests over the phase's length.
	PerMinute float64 `json:"perMinute"`
	// Busiest10s is the most requests that arrived within any 10 s.
	Busiest10s int `json:"busiest10s"`
	// Busiest10sAfterFirst is the same, for windows that start 10 s or more
	// into the phase: a loop that does not slow down shows here.
	Busiest10sAfterFirst int `json:"busiest10sAfterFirst"`
	// LongestGap is the longest time between two requests, or between the
	// last request and the end of the phase.
	LongestGap time.Duration `json:"longestGapNs"`
}

// ofPath reports whether r is a ConfigMap request of the path running in
// namespace ns: of that namespace, or for every namespace with the path's
// User-Agent.
func ofPath(r faults.Request, ns string) bool {
	return r.Resource == resource && r.Subresource == "" && (r.Namespace == ns || r.Namespace == "" && r.UserAgent == userAgent(ns))
}

// Count counts the ConfigMap list and watch requests of the path running in
// namespace ns (ofPath) in reqs that arrived in [from, to).
func Count(reqs []faults.Request, ns string, from, to time.Time) Wire {
	var w Wire
	var at []time.Time
	for _, r := range reqs {
		if !ofPath(r, ns) || r.Time.Before(from) || !r.Time.Before(to) {
			continue
		}
		q, _ := url.ParseQuery(r.RawQuery)
		switch r.Verb {
		case "list":
			w.Lists++
			if q.Get("limit") == "1" && q.Get("continue") == "" && !namesRV(q) {
				w.Probes++
			}
		case "watch":
			if q.Get("sendInitialEvents") == "true" {
				w.StreamingLists++
			} else {
				w.Watches++
			}
		default:
			continue
		}
		if r.Fault != "" {
			w.Faulted++
		}
		at = append(at, r.Time)
	}
	w.Requests = len(at)
	if d := to.Sub(from); d > 0 {
		w.PerMinute = float64(w.Requests) / d.Minutes()
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	w.Busiest10s = busiest(at, from, 10*time.Second)
	w.Busiest10sAfterFirst = busiest(at, from.Add(10*time.Second), 10*time.Second)
	prev := time.Time{}
	for _, t := range at {
		if !prev.IsZero() {
			w.LongestGap = max(w.LongestGap, t.Sub(prev))
		}
		prev = t
	}
	if !prev.IsZero() {
		w.LongestGap = max(w.LongestGap, to.Sub(prev))
	} else {
		w.LongestGap = to.Sub(from)
	}
	return w
}

// busiest returns the most times of at (sorted) within any window of
// length d that starts at or after from.
func busiest(at []time.Time, from time.Time, d time.Duration) int {
	best, j := 0, 0
	for i := range at {
		if at[i].Before(from) {
			continue
		}
		if j < i {
			j = i
		}
		for j < len(at) && at[j].Sub(at[i]) < d {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// Result is one path's measurement under one fault.
type Result struct {
	Fault string `json:"fault"`
	Path  string `json:"path"`
	// During is what the path sent while the fault held, After what it
	// sent from the lift until it converged (or the recovery bound).
	During Wire `json:"during"`
	After  Wire `json:"after"`
	// HeldAtLift is how many of the path's requests the proxy held without
	// an answer (Rule.Stall) when the fault was lifted: requests the path
	// had not given up on.
	HeldAtLift int `json:"heldAtLift"`
	// Synced is whether the path's informer or reflector had synced when
	// the fault was lifted.
	Synced bool `json:"synced"`
	// Recovered is whether its store equalled the server's (every
	// object at its resourceVersion) within the recovery bound after the
	// lift, and RecoveredAfter how long after the lift it first did.
	Recovered      bool          `json:"recovered"`
	RecoveredAfter time.Duration `json:"recoveredAfterNs"`
	// Backward lists every object the path applied at an older
	// resourceVersion than one it had applied before ("cm-1: 812 -> 790").
	Backward []string `json:"backward,omitempty"`
	// Counters are steadywatch's fallback and relist counts.
	Counters string `json:"counters,omitempty"`
	// Stopped is false when the path did not stop within 10 s of being
	// told to (a request it cannot abandon).
	Stopped bool `json:"stopped"`
}

// Slack is the constant the request bound allows beyond stock's.
const Slack = 6

// LoopBound is the most requests a path may send within 10 s, after the
// first 10 s of a fault: a client that retries with a growing delay sends a
// few; one that retries at a fixed 1 s (client-go's own retries of a GET
// after a connection reset, rest.Request's 1 s default) sends 10 or more.
const LoopBound = 9

// Bound is the most requests a steadywatch path may send while a fault
// holds for d: stock's count, or one every 5 s when that is more (stock
// can be stuck inside one request, e.g. sleeping a server's Retry-After;
// capped waits retry), plus Slack.
func Bound(stock Wire, d time.Duration) int {
	return max(stock.Requests, int(d/(5*time.Second))) + Slack
}

// Check returns the violations of the guarantees by the steadywatch paths
// among results of one fault (stock's are measured, not judged): back in
// time, not recovered, more requests than Bound, a loop (LoopBound).
func Check(results []Result, d time.Duration) []string {
	var stock *Result
	for i := range results {
		if results[i].Path == PathStock {
			stock = &results[i]
		}
	}
	var v []string
	for _, r := range results {
		if r.Path == PathStock {
			continue
		}
		if len(r.Backward) > 0 {
			v = append(v, fmt.Sprintf("%s, %s: went back in time: %v", r.Fault, r.Path, r.Backward))
		}
		if !r.Recovered {
			v = append(v, fmt.Sprintf("%s, %s: did not converge to the server's objects after the fault was lifted", r.Fault, r.Path))
		}
		if stock != nil {
			if b := Bound(stock.During, d); r.During.Requests > b {
				v = append(v, fmt.Sprintf("%s, %s: %d requests during the fault, more than the bound %d (stock %d)", r.Fault, r.Path, r.During.Requests, b, stock.During.Requests))
			}
		}
		if r.During.Busiest10sAfterFirst > LoopBound {
			v = append(v, fmt.Sprintf("%s, %s: %d requests within 10 s after the first 10 s of the fault (a loop; at most %d)", r.Fault, r.Path, r.During.Busiest10sAfterFirst, LoopBound))
		}
	}
	return v
}

// Held counts the ConfigMap requests of namespace ns in reqs that a fault
// rule holds: not done, not forwarded, no status.
func Held(reqs []faults.Request, ns string) int {
	n := 0
	for _, r := range reqs {
		if ofPath(r, ns) && !r.Done && len(r.Tried) == 0 && r.Status == 0 && r.Fault == "" {
			n++
		}
	}
	return n
}
