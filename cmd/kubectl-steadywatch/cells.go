package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/internal/vocab"
)

// The probe's cells are data: each one is a request shape and what KEP-2523
// and the Kubernetes API Concepts, "Resource versions"
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions)
// say the server must do with it. The probe sends the request as is (no SDK
// fallback in between) and derives what the server did from the HTTP status and
// the relation of the served resourceVersion to the requested one.

// Semantic names used in the probe's report (schemaVersion 1). Expected and
// observed values are drawn from the same vocabulary.
const (
	// List semantics (API Concepts, "Semantics for get and list").
	SemMostRecent    = "MostRecent"    // served at (or after) the newest RV known before the request
	SemAny           = "Any"           // any RV ("0"); every successful answer is Any
	SemNotOlderThan  = "NotOlderThan"  // served at an RV newer than the requested one
	SemExact         = "Exact"         // served at exactly the requested RV
	SemContinueToken = "ContinueToken" // a continue page served at the token's RV
	SemStale         = "Stale"         // RV unset, served older than an RV seen before the request
	SemOlder         = "Older"         // served older than the requested RV
	SemNewSnapshot   = "NewSnapshot"   // a continue page served at another RV than the token's
	// Errors.
	SemInvalid   = "Invalid"   // 400 or 422
	SemGone      = "Gone"      // 410
	SemTooLarge  = "TooLarge"  // 504 ResourceVersionTooLarge, or 1.18's 500 "future revision"
	SemForbidden = "Forbidden" // 401 or 403
	SemError     = "Error"     // any other failure
	// Watch semantics (API Concepts, "Semantics for watch").
	SemStateMostRecent = "GetStateAndStartAtMostRecent" // synthetic ADDED for every object, then changes
	SemStateAny        = "GetStateAndStartAtAny"        // synthetic ADDED (possibly stale state), then changes
	SemStartExact      = "StartAtExact"                 // no synthetic state: only changes after the RV
	SemNoEvents        = "NoEvents"                     // the stream carried none of the expected events
	// Streaming list (KEP-3157, not in the API Concepts tables).
	SemInitialEventsEnd   = "InitialEventsEnd"   // a BOOKMARK annotated k8s.io/initial-events-end arrived
	SemNoInitialEventsEnd = "NoInitialEventsEnd" // the initial events never ended with that bookmark (ignored)
	// Bookmarks (API Concepts, "Watch bookmarks": a client may not assume any).
	SemMayBookmark = "MayBookmark" // expected: a bookmark is allowed, not required
	SemBookmark    = "Bookmark"
	SemNoBookmark  = "NoBookmark"
	// Far-future watch (API Concepts, "Unavailable resource versions": a watch may wait until it times out).
	SemWaits = "Waits"
)

// Verdicts.
const (
	// VerdictAsSpecified: what the server did satisfies the expected semantic's guarantee.
	VerdictAsSpecified = "as-specified"
	// VerdictMatchIgnored: it does not, but it satisfies the semantic the
	// request has when resourceVersionMatch is ignored (the API Concepts list table's footnote
	// [1]: a server without resourceVersionMatch treats it as unset).
	VerdictMatchIgnored = "match-ignored"
	// VerdictDiffers: neither.
	VerdictDiffers = "differs"
)

// satisfiedBy lists, per expected semantic, the observed semantics that keep
// its guarantee (e.g. Exact(N) is also "not older than N").
var satisfiedBy = map[string][]string{
	SemMostRecent:       {SemMostRecent},
	SemAny:              {SemAny, SemMostRecent, SemStale},
	SemNotOlderThan:     {SemNotOlderThan, SemExact},
	SemExact:            {SemExact},
	SemContinueToken:    {SemContinueToken},
	SemInvalid:          {SemInvalid},
	SemTooLarge:         {SemTooLarge},
	SemStateMostRecent:  {SemStateMostRecent},
	SemStateAny:         {SemStateAny, SemStateMostRecent},
	SemStartExact:       {SemStartExact},
	SemInitialEventsEnd: {SemInitialEventsEnd},
	SemMayBookmark:      {SemBookmark, SemNoBookmark},
	SemWaits:            {SemWaits, SemTooLarge},
	// Proxy-chain cells have a per-cell result (proxyCellResult); this entry
	// is the common case.
	SemEndBookmark: {SemEndBookmark},
	// Applying a shardSelector is optional (KEP-5866, alpha); a server
	// that ignores it must not filter either.
	SemMayApplyShardSelector: {SemShardInfoEchoed, SemShardSelectorIgnored},
}

func satisfies(expected, observed string) bool {
	for _, o := range satisfiedBy[expected] {
		if o == observed {
			return true
		}
	}
	return false
}

// verdict compares observed with the cell's expectations.
func verdict(c cell, observed string) string {
	if satisfies(c.Expected, observed) {
		return VerdictAsSpecified
	}
	if c.Match != "" && c.ExpectedIfMatchIgnored != "" && satisfies(c.ExpectedIfMatchIgnored, observed) {
		return VerdictMatchIgnored
	}
	return VerdictDiffers
}

// Kinds of cells.
const (
	KindList           = "list"
	KindWatch          = "watch"
	KindStreamingList  = "streaming-list"
	KindBookmark       = "bookmark"
	KindFarFutureList  = "far-future-list"
	KindFarFutureWatch = "far-future-watch"
	// KindProxyChain: see proxycells.go.
)

// Symbolic resourceVersions of a request. The report shows these, so that
// reports of different runs and servers compare.
const (
	RVUnset  = ""       // resourceVersion not sent
	RVZero   = "0"      // resourceVersion=0
	RVOld    = "N"      // the RV at which the first probe ConfigMap was created; newer writes followed
	RVLatest = "latest" // the newest RV the probe has seen
	RVFuture = "future" // latest + 1000000
)

// Paging of a list request.
const (
	PagingNone     = "none"           // no limit
	PagingLimit    = "limit"          // limit=<probeLimit>, no continue
	PagingContinue = "limit+continue" // limit and a continue token from a MostRecent first page
)

// cell is one request shape and its expectations.
type cell struct {
	ID     string
	Kind   string
	Match  metav1.ResourceVersionMatch
	Paging string
	RV     string
	// Watch options.
	SendInitialEvents, AllowWatchBookmarks bool
	// Expected is the semantic the API Concepts prescribe for a server that honours
	// resourceVersionMatch.
	Expected string
	// ExpectedIfMatchIgnored is the semantic of the same request on a server
	// that ignores resourceVersionMatch (the footnote of the API Concepts' list
	// table); empty when the request carries no match.
	ExpectedIfMatchIgnored string
	// Source cites where the expectation comes from (a public document).
	Source string
	// Note explains an expectation that needs it.
	Note string
}

const (
	// Sections of the Kubernetes API Concepts, "Resource versions"
	// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions)
	// and KEP-3157 (kubernetes/enhancements keps/sig-api-machinery/3157-watch-list).
	srcListTable  = "API Concepts, Semantics for get and list (resourceVersionMatch x paging x resourceVersion)"
	srcWatchTable = "API Concepts, Semantics for watch"
	srcBookmarks  = "API Concepts, Watch bookmarks"
	srcTooLarge   = "API Concepts, Unavailable resource versions"
	srcStreaming  = "KEP-3157 streaming list (not in the API Concepts tables)"
)

// listTable is the API Concepts' list table, row by row ("resourceVersionMatch
// and paging parameters for list", the same in KEP-2523): for each
// (match, paging) the semantics for resourceVersion unset, "0" and N.
var listTable = []struct {
	Match  metav1.ResourceVersionMatch
	Paging string
	Sems   [3]string
}{
	{"", PagingNone, [3]string{SemMostRecent, SemAny, SemNotOlderThan}},
	{"", PagingLimit, [3]string{SemMostRecent, SemAny, SemExact}},
	{"", PagingContinue, [3]string{SemContinueToken, SemContinueToken, SemInvalid}},
	{metav1.ResourceVersionMatchExact, PagingNone, [3]string{SemInvalid, SemInvalid, SemExact}},
	{metav1.ResourceVersionMatchExact, PagingLimit, [3]string{SemInvalid, SemInvalid, SemExact}},
	{metav1.ResourceVersionMatchNotOlderThan, PagingNone, [3]string{SemInvalid, SemAny, SemNotOlderThan}},
	{metav1.ResourceVersionMatchNotOlderThan, PagingLimit, [3]string{SemInvalid, SemAny, SemNotOlderThan}},
}

var tableRVs = [3]string{RVUnset, RVZero, RVOld}

func rvLabel(rv string) string {
	if rv == RVUnset {
		return "unset"
	}
	return rv
}

func matchLabel(m metav1.ResourceVersionMatch) string {
	if m == "" {
		return "unset"
	}
	return string(m)
}

// probeCells returns every cell the probe runs, in order.
func probeCells() []cell {
	var cells []cell
	for _, row := range listTable {
		for i, rv := range tableRVs {
			c := cell{
				ID:       fmt.Sprintf("list/match=%s/paging=%s/rv=%s", matchLabel(row.Match), row.Paging, rvLabel(rv)),
				Kind:     KindList,
				Match:    row.Match,
				Paging:   row.Paging,
				RV:       rv,
				Expected: row.Sems[i],
				Source:   srcListTable,
			}
			if row.Match != "" {
				// Footnote [1]: a server that does not support resourceVersionMatch treats it as unset.
				for _, legacy := range listTable {
					if legacy.Match == "" && legacy.Paging == row.Paging {
						c.ExpectedIfMatchIgnored = legacy.Sems[i]
					}
				}
			}
			if row.Paging == PagingContinue && rv == RVZero {
				c.Note = "the table says: Invalid, treated as Continue Token, Exact"
			}
			cells = append(cells, c)
		}
	}
	watchSems := [3]string{SemStateMostRecent, SemStateAny, SemStartExact}
	for i, rv := range tableRVs {
		cells = append(cells, cell{
			ID: "watch/rv=" + rvLabel(rv), Kind: KindWatch, RV: rv,
			Expected: watchSems[i], Source: srcWatchTable,
		})
	}
	cells = append(cells,
		cell{
			ID: "streaming-list", Kind: KindStreamingList, RV: RVUnset,
			Match: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: true, AllowWatchBookmarks: true,
			Expected: SemInitialEventsEnd, Source: srcStreaming,
			Note: "watch with sendInitialEvents=true: the initial events end with a BOOKMARK annotated k8s.io/initial-events-end",
		},
		cell{
			ID: "bookmark", Kind: KindBookmark, RV: RVOld, AllowWatchBookmarks: true,
			Expected: SemMayBookmark, Source: srcBookmarks,
			Note: "watch from N on the object created at N (fieldSelector metadata.name) with allowWatchBookmarks and a short timeoutSeconds: watch caches send a bookmark about 2s before the timeout",
		},
		cell{
			ID: "far-future/list/match=NotOlderThan", Kind: KindFarFutureList, RV: RVFuture,
			Match: metav1.ResourceVersionMatchNotOlderThan, Paging: PagingNone,
			Expected: SemTooLarge, ExpectedIfMatchIgnored: SemTooLarge, Source: srcTooLarge,
		},
		cell{
			ID: "far-future/list/match=unset/paging=limit", Kind: KindFarFutureList, RV: RVFuture, Paging: PagingLimit,
			Expected: SemTooLarge, Source: srcTooLarge,
		},
		cell{
			ID: "far-future/watch", Kind: KindFarFutureWatch, RV: RVFuture,
			Expected: SemWaits, Source: srcTooLarge,
			Note: "a watch at an unrecognized resourceVersion may wait until it times out (or be refused as too large)",
		},
	)
	cells = append(cells, proxyChainCells()...)
	return append(cells, shardSelectorCell())
}

// errorSemantic maps a failed request to the observed semantic.
func errorSemantic(status int, class vocab.Class) string {
	switch {
	case class == vocab.TooLargeRV:
		return SemTooLarge
	case status == 400 || status == 422:
		return SemInvalid
	case status == 410:
		return SemGone
	case status == 401 || status == 403:
		return SemForbidden
	}
	return SemError
}

// listRefs are the resourceVersions a list observation is compared with.
type listRefs struct {
	Old          string // N
	LatestBefore string // the newest RV seen before the request
	Token        string // the RV of the continue token's first page
	Future       string
}

// observeList derives the observed semantic of a 200 list answer served at
// served, and the relation of served to the reference it is compared with.
func observeList(c cell, served string, r listRefs) (observed, relation, relativeTo string) {
	rel := func(a, b string) string {
		switch vocab.CompareRV(a, b) {
		case vocab.Same:
			return "exact"
		case vocab.Newer:
			return "newer"
		case vocab.Older:
			return "older"
		}
		return "incomparable"
	}
	switch {
	case c.Paging == PagingContinue:
		relation, relativeTo = rel(served, r.Token), "continue-token"
		if relation == "exact" {
			return SemContinueToken, relation, relativeTo
		}
		return SemNewSnapshot, relation, relativeTo
	case c.RV == RVOld || c.RV == RVFuture:
		ref := r.Old
		if c.RV == RVFuture {
			ref = r.Future
		}
		relation, relativeTo = rel(served, ref), "requested"
		switch relation {
		case "exact":
			return SemExact, relation, relativeTo
		case "newer":
			return SemNotOlderThan, relation, relativeTo
		case "older":
			return SemOlder, relation, relativeTo
		}
		return SemError, relation, relativeTo
	case c.RV == RVZero:
		return SemAny, rel(served, r.LatestBefore), "latest-before"
	default: // unset
		relation, relativeTo = rel(served, r.LatestBefore), "latest-before"
		if relation == "exact" || relation == "newer" {
			return SemMostRecent, relation, relativeTo
		}
		return SemStale, relation, relativeTo
	}
}

// watchObservation is what a watch cell saw before its bound.
type watchObservation struct {
	// InitialState: an ADDED event for the ConfigMap created at N, i.e. the
	// server synthesised the state (a watch from N must not send it).
	InitialState bool
	// CompleteState: the synthesised state named every probe object listed
	// before the watch.
	CompleteState bool
	// ChangesAfterOld: events for objects created after N arrived.
	ChangesAfterOld bool
}

// observeWatch derives the observed semantic of a watch table cell.
func observeWatch(c cell, w watchObservation) string {
	switch {
	case w.InitialState && c.RV == RVZero:
		return SemStateAny
	case w.InitialState && w.CompleteState:
		return SemStateMostRecent
	case w.InitialState:
		return SemStateAny
	case w.ChangesAfterOld:
		return SemStartExact
	}
	return SemNoEvents
}
