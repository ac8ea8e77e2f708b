// Package lister executes Kubernetes list requests with an explicit
// resourceVersion semantic (KEP-2523) and proves what it served: one list
// (page by page, bounded memory) returns a Record of every request sent, the
// resourceVersion served and every fallback taken and why. It also provides
// an exact get of one object, and a ListerWatcher that client-go informers,
// informer factories and controller-runtime use unchanged (Wrap puts it
// around any cache.ListerWatcher in one call).
//
// What to do when a server answers in a way that needs a fallback is not
// decided here: the executor asks the SDK's decision engine
// (internal/engine, shown row by row in docs/rules.md) for the next step and
// follows it. AwaitInitialEvents forwards the SDK's one streaming-list
// guard.
//
// Clients: FromClientset (client-go's typed clientset), FromDynamicConfig
// (custom resources, unstructured), FromRESTClient (a generated typed
// clientset, e.g. a custom resource's) and FromMetadataConfig (metadata
// only) send those clients' own requests and decode each list response item
// by item as it arrives, so a large list is never held as
// response bytes and decoded objects at once; FromDynamicConfig also
// decodes JSON watch events in half the passes client-go's REST client makes,
// the same events. FromFuncs, FromDynamic and FromMetadata
// adapt any list/watch pair as it is.
//
// Options.Transform (StripManagedFields is one) is applied to every object
// before anything keeps it: to each list item as soon as those adapters
// decode it, and to every watch event's object, on every adoption path.
//
// A listgate.Gate set as Options.ListGate and shared by the informers,
// reflectors and listers of a process bounds how many collection reads they
// have in flight against one apiserver and serves identical list requests
// once: informers that start together then cost the apiserver about one
// list instead of the sum of theirs.
//
// Where each job lives: the executor, the Record and the options are this
// package's; the SDK's own clients behind FromClientset, FromRESTClient,
// FromDynamicConfig and FromMetadataConfig are package internal/clients, and
// their decoding of list bodies and watch events package internal/decode;
// the drop-in ListerWatcher's behaviour is package internal/dropin, behind
// the ListerWatcher type here; the streaming-list guard, the stall detector
// and the never-older filter are the SDK's one watch pipeline, package
// internal/watchpipe, shared with package reflector; a listgate.Gate is
// package listgate's. This package keeps the exported names of all of them.
//
// It is not a cache or a reflector (see package reflector), and it never
// returns data older than a requested NotOlderThan resourceVersion, nor data
// at another resourceVersion than a requested Exact one.
package lister
