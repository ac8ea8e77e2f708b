// Package dropin implements the drop-in ListerWatcher: the
// cache.ListerWatcher that client-go informers, informer factories and
// controller-runtime use unchanged over package lister's executor. Its lists
// are the executor's, never back in time; every watch event passes the watch
// pipeline (internal/watchpipe), streaming lists included; a watch that ends
// without progress delays the next one.
//
// Users see it as lister.ListerWatcher (NewListerWatcher, Wrap,
// WrapDecoding), whose godoc states its guarantees. It imports no list
// executor: the lister hands it one as a function.
package dropin
