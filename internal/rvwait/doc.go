// Package rvwait knows which resourceVersion a store reflects and lets a
// reader wait until it reflects a given one or a newer one.
//
// A Tracker is told, by whoever applies changes to the store, each
// resourceVersion the store now reflects (an object's, a deletion's, a
// list's, a bookmark's); Wait blocks until the newest of them is at least
// the one asked for, woken by those advances (no polling), bounded by its
// context.
//
// resourceVersions are compared as KEP-5504 defines it
// (k8s.io/apimachinery/pkg/util/resourceversion, GA in Kubernetes 1.35):
// well-formed decimal integers without leading zeros, longer is newer.
// A store fed a resourceVersion that is not well formed (an aggregated API
// with opaque versions) has shown that its server's versions cannot be
// compared: from then on every Wait fails at once with an error matching
// ErrIncomparable, so the caller reads from the server instead.
// https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/5504-comparable-resource-version
package rvwait
