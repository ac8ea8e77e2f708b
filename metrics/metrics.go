// Package metrics is the small interface through which every steadywatch
// component reports what it did, so users can answer "why did my informer
// relist?" from their own monitoring. A nil Recorder records nothing.
//
// The Prometheus adapter lives in package metrics/prometheus so that the SDK
// itself does not force a metrics library on its users.
package metrics

import (
	"time"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
)

// Recorder receives steadywatch's events. Implementations must be safe for
// concurrent use and cheap: they are called on hot paths. The name argument
// identifies the reflector or lister (e.g. "v1/configmaps").
type Recorder interface {
	// List is called once per list call (all pages), with the requested
	// semantic ("MostRecent", "Any", "NotOlderThan", "Exact") and its outcome
	// ("ok" or an error class).
	List(name, semantic, outcome string)
	// Fallback is called for every fallback taken, with its reason code.
	Fallback(name, reason string)
	// Relist is called when a reflector lists again, with the cause.
	Relist(name, cause string)
	// WatchRestart is called when a watch is started again, with the reason.
	WatchRestart(name, reason string)
	// Bookmark is called for every bookmark received.
	Bookmark(name string)
	// Items reports the number of items in a reflector's store.
	Items(name string, n int)
	// ResourceVersionAdvanced reports the time the resourceVersion last
	// advanced. A watch reports its first event at once and later ones at
	// most once a second (on the tick that also checks for stalls), with
	// that tick's time, not once per event; a (re)list of reflector.New
	// reports it when its store is replaced.
	ResourceVersionAdvanced(name string, at time.Time)
	// ConsistencyCheck reports the result of one consistency check ("ok", "mismatch", "error").
	ConsistencyCheck(name, result string)
	// Transition reports a state machine transition of a reflector.
	Transition(name, from, to, reason string)

	// What a listgate.Gate did.

	// ListGateWait is called once per collection read that waited for a
	// slot, with how long.
	ListGateWait(name string, waited time.Duration)
	// ListGateShared is called once per list answered by another reader's
	// identical request (a copy of its answer, no request of its own).
	ListGateShared(name string)
	// ListGateOverdue is called once per collection read that held a slot
	// longer than the gate's hold bound (listgate.WithMaxHold) and so stopped
	// counting against the slots: a list or stream that is stuck or slow.
	ListGateOverdue(name string)

	// How fresh a store is and what reads that wait for their own writes
	// cost (the staleness metrics KEP-5647 adds to kube-controller-manager,
	// for any controller).

	// StoreResourceVersion reports the resourceVersion a store now
	// reflects, at every advance.
	StoreResourceVersion(name, resourceVersion string)
	// ReadWait is called once per read that had to wait for the cache to
	// reflect the reader's own write, with how long and how it ended
	// ("cache": the cache caught up; "server": it read from the server).
	ReadWait(name string, waited time.Duration, outcome string)
	// ReadFallback is called once per read answered by the server instead
	// of the cache, with the reason ("bound", "incomparable", ...).
	ReadFallback(name, reason string)
}

// Nop returns a Recorder that records nothing. Embed it to implement only
// the methods you need:
//
//	type fallbacks struct{ metrics.Recorder }
//
//	func (fallbacks) Fallback(name, reason string) { ... }
//
//	rec := fallbacks{metrics.Nop()}
func Nop() Recorder { return metricsnop.Nop{} }
