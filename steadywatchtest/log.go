package steadywatchtest

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verb of a request.
const (
	verbList  = "list"
	verbWatch = "watch"
)

// How the server read a request (Request.Served).
const (
	servedMostRecent    = "MostRecent"    // list, resourceVersion unset
	servedAny           = "Any"           // list, resourceVersion "0"
	servedNotOlderThan  = "NotOlderThan"  // list, resourceVersionMatch=NotOlderThan or legacy without limit
	servedExact         = "Exact"         // list, resourceVersionMatch=Exact or legacy with limit
	servedContinue      = "Continue"      // list, a continue token's snapshot
	servedStreamingList = "StreamingList" // watch with sendInitialEvents=true
	servedWatchState    = "WatchState"    // watch from "" or "0": synthetic ADDED events first
	servedWatchFrom     = "WatchFrom"     // watch from an exact resourceVersion
	servedRejected      = "Rejected"      // answered with an error before reading the semantic
)

// Request is one list or watch as the server received and answered it.
type Request struct {
	Verb      string // "list" or "watch"
	Namespace string // "" for all namespaces
	// Options are the ListOptions as received.
	Options metav1.ListOptions
	// Served says how the server read the request: "MostRecent"
	// (resourceVersion unset), "Any" ("0"), "NotOlderThan", "Exact" (with
	// resourceVersionMatch, or the legacy reading: limit set Exact, unset
	// NotOlderThan), "Continue" (a list page from a continue token's
	// snapshot), "StreamingList" (a watch with sendInitialEvents=true),
	// "WatchState" (a watch from "" or "0": synthetic ADDED events first),
	// "WatchFrom" (a watch from an exact resourceVersion) or "Rejected"
	// (answered with an error before reading the semantic).
	Served string
	// Code is the HTTP status: 200, or the error's code (a watch answered
	// with a 410 ERROR event inside its stream is 200 here, as on the wire).
	Code int
	// ResourceVersion is the list's ListMeta.resourceVersion, or the
	// resourceVersion a watch starts at.
	ResourceVersion string
	// Items is the number of items in a list page, or of synthetic ADDED
	// events a watch starts with.
	Items int
	// Continue is the continue token returned with a list page.
	Continue string
	// Err is the error returned, if any.
	Err error
	// Faulted: the server held faults (SetFaults) when the request arrived,
	// so its answer may be one of them.
	Faulted bool
}

func (r *Request) answer(err error) {
	r.Err = err
	r.Code = http.StatusOK
	if err != nil {
		r.Code = http.StatusInternalServerError
		if s, ok := err.(apierrors.APIStatus); ok && s.Status().Code != 0 {
			r.Code = int(s.Status().Code)
		}
	}
}

// Requests returns every request received so far, in order.
func (s *Server[T]) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Count returns how many requests of verb (verbList or verbWatch) were received.
func (s *Server[T]) Count(verb string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.log {
		if r.Verb == verb {
			n++
		}
	}
	return n
}

// ResetRequests forgets the request log.
func (s *Server[T]) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// Watches returns how many watches are open.
func (s *Server[T]) Watches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// QueuedEvents returns how many events the open watches have queued that
// their consumers have not received yet, counting a watch that is ending
// (Close, a fault, a timeout) as one until it is gone. A test that waits for
// it to be 0 knows every client has received everything sent so far.
func (s *Server[T]) QueuedEvents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := range s.watchers {
		n += w.queued()
	}
	return n
}
