package testfake

import (
	"slices"
	"strconv"
	"sync"
	"time"
)

// The families a Recorder keeps, named after the metrics.Recorder methods.
const (
	List                 = "List"                 // label "<semantic>:<outcome>"
	Fallback             = "Fallback"             // label: the reason
	Relist               = "Relist"               // label: the cause
	WatchRestart         = "WatchRestart"         // label: the reason
	Bookmark             = "Bookmark"             // label ""
	Items                = "Items"                // label: the count
	ConsistencyCheck     = "ConsistencyCheck"     // label: the result
	Transition           = "Transition"           // label "<from>-><to>: <reason>"
	ListGateWait         = "ListGateWait"         // label: the wait
	ListGateShared       = "ListGateShared"       // label ""
	ListGateOverdue      = "ListGateOverdue"      // label ""
	StoreResourceVersion = "StoreResourceVersion" // label: the resourceVersion
	ReadWait             = "ReadWait"             // label: the outcome
	ReadFallback         = "ReadFallback"         // label: the reason
)

// Recorder is a metrics.Recorder that keeps every report in order: its
// family (the method), the name it was reported under, its label and when
// it came. It is safe for concurrent use; the zero value is ready and keeps
// every family (ResourceVersionAdvanced, reported on every event, is never
// kept). e2e's reasons.Counter is a Recorder too.
type Recorder struct {
	// Keep: the families kept (set before the first report); nil keeps all.
	// A long run leaves out the families reported on every event or wait
	// (StoreResourceVersion, ReadWait, ...), which would only grow.
	Keep []string

	mu  sync.Mutex
	got []Report
}

// Report is one call a Recorder received.
type Report struct {
	Family, Name, Label string
	At                  time.Time // when the Recorder received it
}

func (r *Recorder) add(family, name, label string) {
	if r.Keep != nil && !slices.Contains(r.Keep, family) {
		return
	}
	at := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, Report{Family: family, Name: name, Label: label, At: at})
}

// Labels returns the labels of one family's reports, in order (nil for
// none).
func (r *Recorder) Labels(family string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, g := range r.got {
		if g.Family == family {
			out = append(out, g.Label)
		}
	}
	return out
}

// Count returns how many reports of family carried label.
func (r *Recorder) Count(family, label string) int {
	n := 0
	for _, l := range r.Labels(family) {
		if l == label {
			n++
		}
	}
	return n
}

// Reports returns every report so far, in order.
func (r *Recorder) Reports() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *Recorder) List(name, semantic, outcome string) { r.add(List, name, semantic+":"+outcome) }
func (r *Recorder) Fallback(name, reason string)        { r.add(Fallback, name, reason) }
func (r *Recorder) Relist(name, cause string)           { r.add(Relist, name, cause) }
func (r *Recorder) WatchRestart(name, reason string)    { r.add(WatchRestart, name, reason) }
func (r *Recorder) Bookmark(name string)                { r.add(Bookmark, name, "") }
func (r *Recorder) Items(name string, n int)            { r.add(Items, name, strconv.Itoa(n)) }

// ResourceVersionAdvanced is not kept (it is reported on every event).
func (r *Recorder) ResourceVersionAdvanced(string, time.Time) {}

func (r *Recorder) ConsistencyCheck(name, result string) { r.add(ConsistencyCheck, name, result) }
func (r *Recorder) Transition(name, from, to, reason string) {
	r.add(Transition, name, from+"->"+to+": "+reason)
}
func (r *Recorder) ListGateWait(name string, waited time.Duration) {
	r.add(ListGateWait, name, waited.String())
}
func (r *Recorder) ListGateShared(name string)  { r.add(ListGateShared, name, "") }
func (r *Recorder) ListGateOverdue(name string) { r.add(ListGateOverdue, name, "") }
func (r *Recorder) StoreResourceVersion(name, resourceVersion string) {
	r.add(StoreResourceVersion, name, resourceVersion)
}
func (r *Recorder) ReadWait(name string, _ time.Duration, outcome string) {
	r.add(ReadWait, name, outcome)
}
func (r *Recorder) ReadFallback(name, reason string) { r.add(ReadFallback, name, reason) }
