package engine

import (
	"github.com/steadywatch/steadywatch/internal/reason"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Accept, MostRecent, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/fallback"
	//lint:ignore ST1001 the rows read in the KEP's vocabulary (Accept, MostRecent, NotOlderThan, ...), row by row
	. "github.com/steadywatch/steadywatch/internal/vocab"
)

// OpListPlan: a reflector chooses the list that (re)fills its store, before
// it sends it. Semantic, HasContinue and Retrying describe the (re)fill's
// query and attempt; Initial, Paginate, PageSize, ObjectStore, CacheReads
// and RetriesInside the reflector and the server; Probe the limit=1 read's
// outcome, once sent.
const OpListPlan Op = 80

// CacheReads is the belief about where the server reads a consistent
// (MostRecent) list from (capability.ConsistentListFromCache).
type CacheReads int

const (
	// CacheReadsNotAsked: the server's capabilities were not read yet
	// (they are read only for a plan whose rows need them).
	CacheReadsNotAsked CacheReads = iota
	// CacheReadsUnknown: not known (or no Options.Lister.Server).
	CacheReadsUnknown
	// CacheReadsYes: from its watch cache (v1.31+, KEP-2340).
	CacheReadsYes
	// CacheReadsNo: from etcd (before v1.31).
	CacheReadsNo
)

func (c CacheReads) String() string {
	switch c {
	case CacheReadsYes:
		return "yes"
	case CacheReadsNo:
		return "no"
	case CacheReadsNotAsked:
		return "not-asked"
	}
	return "unknown"
}

// PlanProbe is the outcome of a list plan's limit=1 MostRecent read
// (Lister.CurrentResourceVersion).
type PlanProbe int

const (
	// ProbeNotSent: no limit=1 read yet.
	ProbeNotSent PlanProbe = iota
	// ProbeRV: it named a resourceVersion (neither "" nor "0").
	ProbeRV
	// ProbeNoRV: it named none ("" or "0").
	ProbeNoRV
)

func (p PlanProbe) String() string {
	switch p {
	case ProbeRV:
		return "rv"
	case ProbeNoRV:
		return "no-rv"
	}
	return "not-sent"
}

const (
	// ThenPlanPages: send the (re)fill's query in pages of the reflector's
	// page size (one response when it has none).
	ThenPlanPages Then = 80 + iota
	// ThenPlanWhole: send the (re)fill's query as it is, in one response.
	ThenPlanWhole
	// ThenPlanAskServer: read the server's capabilities
	// (ConsistentListFromCache), then ask again with them.
	ThenPlanAskServer
	// ThenPlanProbe: send a limit=1 MostRecent read for the current
	// resourceVersion, then ask again with its outcome.
	ThenPlanProbe
	// ThenPlanNotOlderProbed: list NotOlderThan the resourceVersion the
	// limit=1 read named, in one response.
	ThenPlanNotOlderProbed
)

var planThenNames = map[Then]string{
	ThenPlanPages: "list in pages", ThenPlanWhole: "list in one response",
	ThenPlanAskServer: "read the server's capabilities", ThenPlanProbe: "read the current resourceVersion (limit=1)", ThenPlanNotOlderProbed: "list NotOlderThan the read resourceVersion",
}

var (
	srcPlanObjects  = `the store is filled object by object: a relist in pages never holds the store's old contents and the whole new list at once; ` + SourceChunks
	srcPlanAsAsked  = SourceResourceVersions + `, Not older than: served from the watch cache in one response, as asked`
	srcPlanPaged    = SourceChunks + `; client-go's Reflector (tools/cache/reflector.go, list) lists in pages unless it can be served from the watch cache`
	srcPlanRetry    = srcPlanPaged + `: a retry after a failure is a true MostRecent list, which a watch cache that is behind cannot serve`
	srcPlanFromSize = srcPlanPaged + `; no page size: one response`
	srcPlanCache    = `Kubernetes API Concepts, "Consistent reads from cache" (KEP-2340, https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/2340-Consistent-reads-from-cache): from v1.31 a consistent list is served from the watch cache, in one response`
	srcPlanAsk      = srcPlanCache + `; before v1.31 they are read from etcd (kubernetes/kubernetes#97294): where the server reads them decides the list`
	srcPlanEtcd     = `a server that reads consistent lists from etcd (before v1.31) has a watch cache that reaches a resourceVersion written by other kinds only on etcd's progress notifications: a list not older than the current resourceVersion is answered 504 after 3s (kubernetes/kubernetes#97294); the newest list, in pages, from etcd`
	srcPlanInside   = srcPlanEtcd + `; a client the SDK did not build retries such a 504 on its own (client-go's rest/with_retry.go) before the lister sees it`
	srcPlanProbe    = SourceKEP2523 + `; ` + SourceResourceVersions + `: a limit=1 MostRecent read (a quorum read of one object) names the current resourceVersion; a list not older than it is served from the watch cache, consistent as of the read`
	srcPlanProbed   = srcPlanProbe + `; "Not older than"`
	srcPlanProbeNil = srcPlanProbe + `; the read named none: the newest list, in pages`
	srcPlanInsideRV = srcPlanInside + `; the limit=1 read ran the client's scope check, which could not tell which client lists what the caller's ListerWatcher lists (reflector.NewInformerFor): the list goes through the caller's, the newest list, in pages`
)

// listPlanRows are a reflector's choices of the list that (re)fills its
// store (client-go's Reflector.list chooses between a paginated list and
// one served from the watch cache).
var listPlanRows = func() []Row {
	plan := func(w when) when { w.op, w.classes = OpListPlan, allClasses; return w }
	first := func(w when) when {
		w.semantics, w.cont, w.retrying, w.paginate, w.pageSize, w.probe = []Semantic{MostRecent}, no, no, no, yes, probes(ProbeNotSent)
		return plan(w)
	}
	notOlder, notSent := onlyNOT, probes(ProbeNotSent)
	return []Row{
		// A NotOlderThan (re)fill.
		{plan(when{semantics: notOlder, probe: notSent, paginate: yes, initial: no, objectStore: yes, pageSize: yes}), Accept, reason.OK, srcPlanObjects, WaitNone, ThenPlanPages},
		{plan(when{semantics: notOlder, probe: notSent, paginate: no}), Accept, reason.OK, srcPlanAsAsked, WaitNone, ThenPlanWhole},
		{plan(when{semantics: notOlder, probe: notSent, paginate: yes, initial: yes}), Accept, reason.OK, srcPlanAsAsked, WaitNone, ThenPlanWhole},
		{plan(when{semantics: notOlder, probe: notSent, paginate: yes, initial: no, objectStore: no}), Accept, reason.OK, srcPlanAsAsked, WaitNone, ThenPlanWhole},
		{plan(when{semantics: notOlder, probe: notSent, paginate: yes, initial: no, objectStore: yes, pageSize: no}), Accept, reason.OK, srcPlanAsAsked, WaitNone, ThenPlanWhole},

		// Any, Exact, and a MostRecent list that is continued, retried,
		// paginated by the options or has no page size.
		{plan(when{semantics: []Semantic{Any, Exact}, probe: notSent}), Accept, reason.OK, srcPlanPaged, WaitNone, ThenPlanPages},
		{plan(when{semantics: []Semantic{MostRecent}, probe: notSent, cont: yes}), Accept, reason.OK, srcPlanPaged, WaitNone, ThenPlanPages},
		{plan(when{semantics: []Semantic{MostRecent}, probe: notSent, cont: no, retrying: yes}), Accept, reason.OK, srcPlanRetry, WaitNone, ThenPlanPages},
		{plan(when{semantics: []Semantic{MostRecent}, probe: notSent, cont: no, retrying: no, paginate: yes}), Accept, reason.OK, srcPlanPaged + "; Options.PaginateLists", WaitNone, ThenPlanPages},
		{plan(when{semantics: []Semantic{MostRecent}, probe: notSent, cont: no, retrying: no, paginate: no, pageSize: no}), Accept, reason.OK, srcPlanFromSize, WaitNone, ThenPlanPages},

		// A first MostRecent list, by where the server reads it.
		{first(when{cacheReads: cacheReads(CacheReadsNotAsked)}), Accept, reason.OK, srcPlanAsk, WaitNone, ThenPlanAskServer},
		{first(when{cacheReads: cacheReads(CacheReadsYes)}), Accept, reason.OK, srcPlanCache, WaitNone, ThenPlanWhole},
		{first(when{cacheReads: cacheReads(CacheReadsNo)}), Accept, reason.OK, srcPlanEtcd, WaitNone, ThenPlanPages},
		{first(when{cacheReads: cacheReads(CacheReadsUnknown), retriesInside: yes}), Accept, reason.OK, srcPlanInside, WaitNone, ThenPlanPages},
		{first(when{cacheReads: cacheReads(CacheReadsUnknown), retriesInside: no}), Accept, reason.OK, srcPlanProbe, WaitNone, ThenPlanProbe},

		// The limit=1 read's outcome.
		{plan(when{probe: probes(ProbeRV), retriesInside: no}), Accept, reason.OK, srcPlanProbed, WaitNone, ThenPlanNotOlderProbed},
		{plan(when{probe: probes(ProbeRV), retriesInside: yes}), Accept, reason.OK, srcPlanInsideRV, WaitNone, ThenPlanPages},
		{plan(when{probe: probes(ProbeNoRV)}), Accept, reason.OK, srcPlanProbeNil, WaitNone, ThenPlanPages},
	}
}()

func probes(p ...PlanProbe) []PlanProbe       { return p }
func cacheReads(c ...CacheReads) []CacheReads { return c }
