// Package engine is the KEP-2523 decision engine of steadywatch: given one
// list response, it returns the complete next step (action, next request,
// whether a newer resourceVersion must be found first, the wait, whether
// pages already handed over are void, and the reason). It does no I/O; the
// list executor in package lister sends, verifies, asks Plan, then probes or
// waits, in one loop.
//
//   - table.go: every rule as a row of data, checked line by line against
//     KEP-2523 "Backward Compatibility" and the Kubernetes API Concepts
//     "Resource versions" tables (see fallback.SourceKEP2523 and
//     fallback.SourceResourceVersions); rows are disjoint and exhaustive
//     (table_test.go walks every situation).
//   - plan.go: the Planner, which owns the call's retry budgets and backoff
//     and turns the row's Action into a Step.
//   - wire.go: the one place that spells a query on the wire for a server
//     belief (the legacy Exact limit included).
//   - evidence.go: what a response proves about resourceVersionMatch support.
//
// It is internal: users see its decisions as fallback.Event and
// fallback.ReasonCode values, and read the table in docs/rules.md.
package engine
