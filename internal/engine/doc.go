// Package engine is the KEP-2523 decision engine of steadywatch: given the
// state of one list call and the answer to its last request, Call.Next
// returns the finished next request (semantic, resourceVersion, wire form
// and wait; a probe is a request of its own) or the end of the call. It does
// no I/O; the list executor in package lister sends, asks Next, and acts.
//
//   - table.go: every rule as a row of data, checked line by line against
//     KEP-2523 "Backward Compatibility" and the Kubernetes API Concepts
//     "Resource versions" tables (see vocab.SourceKEP2523 and
//     vocab.SourceResourceVersions); rows are disjoint and exhaustive
//     (table_test.go walks every situation). The call's own limits
//     (Config.MaxRequests, a restart the caller does not allow, a 200 that is
//     not a list), the answers to its limit=1 reads (OpNewerRV, OpCurrentRV)
//     and the reflector's relist and watch-failure choices (Decide, OpRelist
//     and OpWatch) are rows too; steps.go holds the rows of the reflector's
//     streaming lists and watch ends and the drop-in's watch attempts,
//     listend.go those of a list's end and the reflector's stop.
//   - plan.go: Call, which owns the call's retry budgets and backoff, verifies
//     each answer and says what it proves about resourceVersionMatch support
//     (verify, also read through AcceptsListMeta before a page's items are
//     decoded).
//   - next.go: Call.Next gathers the situation, asks the table, and carries
//     out the row: every Step names the row it carries out
//     (steps_test.go checks it on random calls).
//   - probe.go: the limit=1 read between two pages, a small state machine
//     holding the page it serves and the row that sent it.
//
// It is internal: users see its decisions as fallback.Event and
// fallback.ReasonCode values, and read the table in docs/rules.md.
package engine
