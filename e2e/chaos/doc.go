// Package chaos is the e2e chaos run: a writer churns ConfigMaps with a
// known final state while a replayable (numbered), logged schedule of faults (apiserver
// restarts, etcd compaction, dropped/ended/stalled watch streams, injected
// 410/429/500/504-with-Retry-After, HA failover to the other, lagging
// apiserver) hits two informers at once: steadywatch's reflector and a stock
// client-go informer, each through its own fault proxy in front of the same
// apiservers. Afterwards it checks what each informer reflects against an
// Exact list at a fresh resourceVersion.
//
// The non-test code here is the pure part, shared with the compatibility
// matrix: the schedule generator (Schedule) and the per-object observation
// Tracker. The package's Ginkgo suite drives real servers through the
// harness.
//
// It is not a load test (the writer is bounded in rate and count so a 2-core
// machine running other suites keeps up) and it makes no claim about
// wall-clock speed beyond a generous convergence bound.
package chaos
