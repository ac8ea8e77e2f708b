// Package reflector keeps a client-go store in step with an apiserver and
// survives every resourceVersion corner case of KEP-2523: it is a drop-in for
// client-go's cache.Reflector, written as an explicit state machine.
//
// The phases (Phase) are InitialList or StreamingList, then StartingWatch and
// Watching, with Relisting and BackingOff on the way back; one state type per
// phase carries exactly the data valid in it, and one step function maps
// (state, outcome) to the next state. Every transition is logged (V(2), with
// its reason) and counted through metrics.Recorder.
//
// What it does that client-go's reflector does not:
//   - the first list is MostRecent by default (a consistent read), not Any
//     (resourceVersion "0"), which can go back in time in HA control planes;
//   - a list served older than what the store already reflects (its
//     resourceVersion, or the version of any object it holds, listed or
//     not) is never applied and deletes nothing (StaleListError); it asks
//     again with NotOlderThan;
//   - a streaming list is used only where compat says the server honours it,
//     and a server that silently ignores sendInitialEvents (v1.18) is
//     detected (no end bookmark within Options.Lister.InitialEventsTimeout, or a
//     plain bookmark/MODIFIED during the initial events) and listed instead;
//   - a watch event older than what the store holds (for its object, its
//     deletion, or the watch's start) is never applied: the watch ends and
//     the reflector relists (the watch pipeline it shares with the drop-in
//     ListerWatcher);
//   - a watch that delivers nothing, not even a bookmark, for
//     Options.Lister.StallTimeout is restarted from the last resourceVersion;
//     one that ends without adopting a newer resourceVersion is a failure,
//     and the next request waits a growing backoff;
//   - an optional consistency checker compares the store with an Exact list
//     at a bookmark's resourceVersion.
//
// It feeds any cache.ReflectorStore: a cache.Store or cache.Indexer, or a
// DeltaFIFO/RealFIFO under an informer-style processing loop.
//
// It is not an informer (no event handlers, no indexers of its own). The
// informers built on it are one line per adoption path:
// NewSharedInformerFactory in place of client-go's SharedInformerFactory
// constructor, NewInformerFor(cfg) for controller-runtime's
// cache.Options.NewInformer, NewSharedIndexInformer in place of
// cache.NewSharedIndexInformer. It does not decide the
// KEP-2523 list fallbacks itself: package lister executes every list
// (Options.List), following the SDK's decision table (docs/rules.md).
package reflector
