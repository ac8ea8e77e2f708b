package soak

import (
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

// Fault is one persistent fault: what the proxy does to every ConfigMap
// list and watch while it holds.
type Fault struct {
	// ID names the fault on the command line (-faults) and in the results.
	ID string `json:"id"`
	// What is the fault in a few words, for the generated table.
	What string `json:"what"`
	// Source is the public report or document the fault reproduces.
	Source string `json:"source"`
	// Arm makes the fault on p. It is lifted by Lift.
	Arm func(p *faults.Proxy) `json:"-"`
	// Tick, if set, runs every Every while the fault holds (e.g. ending
	// every watch, so that clients must resume).
	Tick  func(p *faults.Proxy) `json:"-"`
	Every time.Duration         `json:"-"`
}

// Lift ends every fault Arm can make: rules, stream and list faults, and
// the resource versions expired by stream faults. Requests the proxy holds
// without an answer (Rule.Stall) get their connection reset, as from a stuck
// proxy restarted to recover (Proxy.ResetStalled).
func Lift(p *faults.Proxy) {
	p.ClearRules()
	p.ResetStalled()
	p.SetStreamFaults(faults.StreamFaults{})
	p.SetListFaults(faults.ListFaults{})
	p.ClearExpired()
}

const resource = "configmaps"

// namesRV is true for a request that names a resourceVersion other than ""
// and "0".
func namesRV(q url.Values) bool {
	rv := q.Get("resourceVersion")
	return rv != "" && rv != "0"
}

// inject arms a fault of one proxy rule.
func inject(r faults.Rule) func(*faults.Proxy) { return func(p *faults.Proxy) { p.Inject(r) } }

// streamFaults arms a fault of stream faults only.
func streamFaults(f faults.StreamFaults) func(*faults.Proxy) {
	return func(p *faults.Proxy) { p.SetStreamFaults(f) }
}

// Catalogue is every persistent fault, in the order of the generated table.
var Catalogue = []Fault{
	{
		ID:     "empty-watch",
		What:   "every watch answered 200 and closed at once, without an event",
		Source: "kubernetes/kubernetes#104171, kubernetes/kubernetes#137089, fabric8io/kubernetes-client#7896",
		Arm:    inject(faults.Rule{Verb: "watch", Resource: resource, EmptyWatch: true}),
	},
	{
		ID: "bookmark-rv-abc",
		What: "every plain bookmark's resourceVersion rewritten to \"abc\" and the watch ended cleanly right after it, " +
			"watches from \"abc\" refused 400 (the real server refuses lists from it), and every watch ended cleanly every 10 s (so each path resumes)",
		Source: "none public (a robustness case: a watch that ends after a bad bookmark, without progress)",
		Arm: func(p *faults.Proxy) {
			p.SetStreamFaults(faults.StreamFaults{BookmarkRV: "abc", EndAfterBookmarkRV: true})
			p.Inject(faults.Rule{Verb: "watch", Resource: resource, Query: map[string]string{"resourceVersion": "abc"},
				Status: http.StatusBadRequest, Message: "invalid resource version: abc"})
		},
		Tick:  func(p *faults.Proxy) { p.EndWatches() },
		Every: 10 * time.Second,
	},
	{
		ID:     "429-retry-after-3600",
		What:   "every list and watch answered 429 with `Retry-After: 3600`",
		Source: "API Priority and Fairness answers 429 with Retry-After (Kubernetes docs, \"API Priority and Fairness\")",
		Arm:    inject(faults.Rule{Resource: resource, Status: http.StatusTooManyRequests, RetryAfterSeconds: 3600}),
	},
	{
		ID:     "429-retry-after-minus-1",
		What:   "every list and watch answered 429 with `Retry-After: -1`",
		Source: "client-go `rest/request.go` `checkWait` parses any integer (a robustness case)",
		Arm:    inject(faults.Rule{Resource: resource, Status: http.StatusTooManyRequests, RetryAfter: "-1"}),
	},
	{
		ID:     "connection-reset",
		What:   "every list and watch answered with a TCP reset of the client's connection (no status)",
		Source: "client-go `rest/request.go` retries a GET on connection reset and EOF (`IsProbableEOF`, `IsConnectionReset`)",
		Arm:    inject(faults.Rule{Resource: resource, Reset: true}),
	},
	{
		ID:     "too-large-rv",
		What:   "every list and watch that names a resourceVersion (not \"\" or \"0\") answered 504 `ResourceVersionTooLarge` (watches as an ERROR event): a member whose watch cache never catches up; every watch ended cleanly every 10 s (so each path resumes from a resourceVersion)",
		Source: "kubernetes/kubernetes#97294, kubernetes/kubernetes#94316",
		Arm: inject(faults.Rule{Resource: resource, Match: namesRV, Status: http.StatusGatewayTimeout, AsWatchEvent: true,
			RetryAfterSeconds: 1, Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}),
		Tick:  func(p *faults.Proxy) { p.EndWatches() },
		Every: 10 * time.Second,
	},
	{
		ID:     "never-answers",
		What:   "every list and watch held without an answer (no status, no byte) until the client gives up; at the lift, the connections of requests still held are reset (a stuck proxy restarted)",
		Source: "a stuck proxy or an apiserver that accepted a request and never served it",
		Arm:    inject(faults.Rule{Resource: resource, Stall: true}),
	},
	{
		ID:     "older-event-redelivered",
		What:   "after every MODIFIED, the object's previous MODIFIED on the same stream sent again (an older resourceVersion after a newer one)",
		Source: "kubernetes/kubernetes#73845, linkerd/linkerd#1680",
		Arm:    streamFaults(faults.StreamFaults{RedeliverOlder: true}),
	},
	{
		ID:     "410-every-watch",
		What:   "every plain watch answered 410 (an ERROR event, as from the watch cache) and every streaming list refused 422",
		Source: "Kubernetes API Concepts, \"410 Gone responses\"; kubernetes/kubernetes#135583",
		Arm: func(p *faults.Proxy) {
			p.Inject(faults.Rule{Verb: "watch", Resource: resource, Query: map[string]string{"sendInitialEvents": "true"},
				Status: http.StatusUnprocessableEntity, Message: faults.SendInitialEventsForbiddenMessage})
			p.Inject(faults.Rule{Verb: "watch", Resource: resource, Status: http.StatusGone, AsWatchEvent: true,
				Message: "too old resource version"})
		},
	},
	{
		ID:     "bookmarks-dropped",
		What:   "every BOOKMARK removed from watch streams, the initial-events-end one included (a streaming list never ends)",
		Source: "gravitational/teleport#64188",
		Arm:    streamFaults(faults.StreamFaults{DropBookmarks: true}),
	},
	{
		ID:     "cut-before-end-bookmark",
		What:   "every streaming list ended cleanly right before its initial-events-end bookmark",
		Source: "kubernetes/kubernetes#140890",
		Arm:    streamFaults(faults.StreamFaults{CutBeforeInitialEventsEnd: true}),
	},
}

// ByID returns the faults named in ids, in catalogue order; unknown names
// are returned in unknown.
func ByID(ids []string) (out []Fault, unknown []string) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for _, f := range Catalogue {
		if want[f.ID] {
			out = append(out, f)
			delete(want, f.ID)
		}
	}
	for _, id := range ids {
		if want[id] {
			unknown = append(unknown, id)
		}
	}
	return out, unknown
}
