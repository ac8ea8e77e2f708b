// Package soak holds each persistent fault the harness's fault proxy
// (e2e/harness/faults) can make in front of one real kube-apiserver for a
// fixed time, with stock client-go's informer and steadywatch's adoption
// paths (the drop-in informer reflector.NewSharedIndexInformerWithOptions,
// reflector.NewSharedInformerFactoryWithOptions' typed informer,
// controller-runtime's hook reflector.NewInformerFor, and reflector.New)
// side by side, each in a namespace of its own, all started while the fault
// holds. While it holds, a writer changes every namespace directly (not
// through the proxy). When it is lifted, each path must converge to what the
// server holds.
//
// Every request each path sends is counted on the wire by the proxy,
// client-go's own retries included: lists, streaming lists, watches, the
// busiest 10 s, the longest gap between two requests. Every object each path
// applies is checked against the versions it applied before (never back in
// time). Check turns the measurements into violations of the guarantees:
// steadywatch's paths never go back in time, converge after the fault, send
// no more requests than stock (or one every 5 s where stock is stuck inside
// one request) plus a small constant, and never send requests in a loop.
//
// Run is what `make soak-faults` runs (through e2e/cmd/soak-faults), which
// writes a section of docs/bad-server-data.md with Render. It is not part of
// `make test`.
package soak
