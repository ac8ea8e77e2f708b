// Package steadywatchtest is an in-memory apiserver for one resource: list
// and watch with the resourceVersion semantics of a real kube-apiserver, for
// unit tests. A controller test against it syncs in milliseconds, and one
// line switches on a misbehaviour that a real server, proxy or aggregated
// API has been reported to show (Faults), so a test can reproduce a field
// failure without a cluster.
//
// What it implements (Kubernetes API Concepts, "Resource versions",
// https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions,
// and KEP-2523, kubernetes/enhancements keps/sig-api-machinery/2523-consistent-resource-version-semantics):
//
//   - a store with an etcd-like global resourceVersion counter and a history
//     of changes; Create, Update, Delete and Apply bump it, Advance moves it on
//     as writes to other resources do; Compact drops history;
//   - list: MostRecent (resourceVersion unset), Any ("0"), NotOlderThan and
//     Exact with resourceVersionMatch, the legacy reading without it (limit
//     set: Exact, unset: NotOlderThan), limit/continue with an opaque token
//     holding the snapshot and the last key, remainingItemCount, 410 Gone for
//     a compacted Exact resourceVersion or continue token, 504 "Too large
//     resource version" (cause ResourceVersionTooLarge, Retry-After 1) for a
//     resourceVersion newer than the store, and the request validation of a
//     1.34 apiserver (422 Invalid, 400 Bad Request);
//   - watch: synthetic ADDED events of the current state for resourceVersion
//     "" and "0", streaming lists (sendInitialEvents=true) ending with the
//     BOOKMARK annotated k8s.io/initial-events-end, start at an exact
//     resourceVersion, a 410 ERROR event inside the stream when it is
//     compacted (as the watch cache does), bookmarks on demand or periodic,
//     timeoutSeconds, label selectors and the metadata.name/metadata.namespace
//     field selectors;
//   - adapters: Server has List and Watch methods (a lister.Client and a
//     reflector.Client), ListerWatcher returns a cache.ListerWatcher, and
//     Install puts the server behind a client-go fake clientset;
//   - a request log and counters.
//
// It is not a general fake apiserver: one resource, no admission, defaulting,
// field managers or patches, and resourceVersions are decimal integers (a real
// client must treat them as opaque; tests may compare them).
package steadywatchtest
