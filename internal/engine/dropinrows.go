package engine

import (
	"github.com/steadywatch/steadywatch/internal/reason"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Accept, Relist, TooLargeRV, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Accept, Relist, TooLargeRV, ...), row by row
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// unservedClasses are the ways a streaming list at a resourceVersion fails
// that say this server cannot serve that resourceVersion now.
var unservedClasses = []Class{TooLargeRV, ServerError, NoAnswer}

var (
	srcUnservedMostRecent = SourceKEP2523 + `; ` + srcTooLarge + `; client-go's REST client already retried the streaming list at this resourceVersion (rest/with_retry.go): ` +
		SourceResourceVersions + `, Most recent: a consistent read is never older than anything served`
	srcListAsAsked   = SourceResourceVersions + ", Semantics for get and list: the list client-go asks for, as asked"
	srcListedNotOld  = SourceResourceVersions + ", Semantics for get and list: a list not older than what was delivered is handed over"
	srcListedExact   = SourceResourceVersions + `, Exact: "Return data at the exact resource version provided": the version the caller named, handed over as asked`
	srcStreamRefused = srcKEP3157 + `; client-go's Reflector (tools/cache/reflector.go) lists when a streaming list fails: a server known to refuse sendInitialEvents (recorded), or streaming lists disabled by the options, is not asked`
	srcStreamAsked   = srcKEP3157 + ": the streaming list client-go asks for is sent, its initial events guarded up to the initial-events-end bookmark"
)

// dropInRows are the drop-in ListerWatcher's choices about what client-go
// asks of it (client-go decides what to request; the drop-in decides how a
// list is sent, whether its answer is handed over, and whether a streaming
// list is sent at all).
var dropInRows = []Row{
	// A list client-go asks for.
	{when{op: OpDropInList, classes: unservedClasses, semantics: onlyNOT}, FallbackMostRecent, reason.UnservedRVMostRecent, srcUnservedMostRecent, WaitNone, ThenListMostRecent},
	{when{op: OpDropInList, classes: unservedClasses, semantics: []Semantic{MostRecent, Any, Exact}}, Accept, reason.OK, srcListAsAsked, WaitNone, ThenListSame},
	{when{op: OpDropInList, classes: except(unservedClasses...)}, Accept, reason.OK, srcListAsAsked, WaitNone, ThenListSame},

	// A list's answer.
	{when{op: OpDropInListed, classes: cls(ServedOlder), semantics: []Semantic{NotOlderThan, MostRecent, Any}}, Relist, reason.StaleListReasked, srcNeverBack + "; ask again NotOlderThan what was delivered", WaitNone, ThenListNotOlder},
	{when{op: OpDropInListed, classes: cls(ServedOlder), semantics: onlyExact}, Accept, reason.OK, srcListedExact, WaitNone, ThenListSame},
	{when{op: OpDropInListed, classes: except(ServedOlder)}, Accept, reason.OK, srcListedNotOld, WaitNone, ThenListSame},

	// A streaming list client-go asks for.
	{when{op: OpDropInStream, classes: allClasses, rejected: yes}, Relist, reason.StreamRejected, srcStreamRefused, WaitNone, ThenListSame},
	{when{op: OpDropInStream, classes: allClasses, rejected: no}, Accept, reason.OK, srcStreamAsked, WaitNone, ThenWatch},
}
