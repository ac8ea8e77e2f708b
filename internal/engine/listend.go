package engine

import (
	"github.com/steadywatch/steadywatch/internal/reason"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Accept, Backoff, ...), row by row
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

const (
	// OpListEnd: a reflector's list call succeeded and its objects went to
	// the store (Ending: EndedOK, the store took the list whole, or
	// EndedStoreFailed, the store refused an object or the list's end, or
	// the answer is not a list). A list older than the store is OpRelist's
	// (class ServedOlder).
	OpListEnd Op = iota + 64
	// OpStop: a reflector's context ended.
	OpStop
)

// ThenStop: the reflector stops (it sends no request after its context's
// end).
const ThenStop Then = 64

// listEndEndings are OpListEnd's endings.
var listEndEndings = []Ending{EndedOK, EndedStoreFailed}

const (
	srcListed           = SourceResourceVersions + `, "Efficient detection of changes": "The client can use that resourceVersion to initiate a watch against the API server"; client-go's Reflector.ListAndWatch watches from the list's resourceVersion after syncing it`
	srcStoreRefused     = `client-go's Reflector (tools/cache/reflector.go, list): a store that refuses the list ("unable to sync list result") fails the list; Run lists again after its backoff`
	srcStop             = `client-go's Reflector: "Run will exit when the context is canceled" (RunWithContext); the context's end is the caller's: no request follows it`
	srcCallRetriesSpent = "the list call's own retries (5, within 30s) already waited up to the backoff's Max between failed requests: the next call does not start sooner, or a persistent fault would see the call's burst repeat after a short delay"
)

// listEndRows are the ends of a reflector's list call and of the reflector
// itself.
var listEndRows = []Row{
	{when{op: OpListEnd, classes: allClasses, endings: ends(EndedOK)}, Accept, reason.Listed, srcListed, WaitNone, ThenWatchAgain},
	{when{op: OpListEnd, classes: allClasses, endings: ends(EndedStoreFailed)}, Backoff, reason.ListError, srcStoreRefused, WaitBackoffOnly, ThenListSame},
	{when{op: OpStop, classes: allClasses}, Accept, reason.ContextDone, srcStop, WaitNone, ThenStop},
}
