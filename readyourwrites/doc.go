// Package readyourwrites is a client for controllers whose reads from an
// informer's cache are never older than the controller's own writes.
//
// Client wraps a client-go typed client (for example
// clientset.CoreV1().ConfigMaps(ns)) and the informer of the same resource.
// Writes through it (Create, Update, UpdateStatus, Patch, Delete) remember
// the resourceVersion the server returned, per object. A Get of an object
// it wrote waits until the cache holds that version or a newer one (for an
// object it deleted: until the cache no longer holds it); a List waits until
// the cache reflects the newest version it wrote in the resource. A read of
// an object it did not write does not wait.
//
// The wait is bounded (Options.Bound, default 5s). Past the bound the read
// goes to the server (a consistent GET or list, never older than the write)
// and is logged and counted (Options.Metrics). Where the server's
// resourceVersions are not comparable (KEP-5504) reads go to the server at
// once.
//
// It is read-your-own-writes, not linearizability: writes by other clients
// are not waited for, and two Clients do not see each other's writes any
// sooner than the cache does. docs/consistency.md says what is guaranteed,
// the cost and the bound.
package readyourwrites
