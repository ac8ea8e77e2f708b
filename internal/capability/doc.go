// Package capability knows what an apiserver really does: it parses /version
// into Capabilities and records observed behaviour (which outranks the
// version string), cached per server with expiry, so the lister and reflector
// pick the cheap path on current servers and never wait for what an old
// server cannot send. Package compat is its public face (compat.NewDetector,
// compat.Server).
//
// The version-to-capability knowledge is one table (Table), each row citing its
// public source (KEP-2523,
// https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/2523-consistent-resource-version-semantics;
// Kubernetes API Concepts, Resource versions,
// https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions;
// Kubernetes source files and issues); FromVersion applies it. A belief
// resting only on a feature-gate default (Basis BasisGateDefault, e.g.
// StreamingList on v1.34) is "likely, verify": a cluster may run with the gate
// flipped, so callers use it but Observe what the server actually did, and the
// observation wins until it expires.
//
// # Scopes
//
// What the version says is a fact about a host: a Detector fetches /version
// once per host (VersionTTL; failures are retried after VersionErrorTTL).
// Behaviour is a fact about what served a request, and one host serves
// different API groups differently: aggregated APIs are proxied to other
// servers, custom resources are served by other code than core ones. So
// observations are kept per host and API group/version: ForGroupVersion(server,
// gv) returns the view of one group/version, whose Observe records for gv only
// and whose Capabilities are gv's own observations over the host-wide
// observations over the version. The unscoped Server (Detector.For,
// Detector.ForConfig, Static) is the host-wide scope, for callers that have no
// group/version and for evidence about the whole host; it never sees a
// group/version's observations.
//
// In every scope a later observation contradicting an earlier one replaces it
// at once (an HA pair in the middle of an upgrade answers differently from
// request to request), and every observation expires after ObservationTTL
// (10 min by default), a "No" as much as a "Yes", so a long-lived informer
// streams again once the server can.
//
// # Logs and metrics
//
// Belief changes are logged (klog.FromContext, V(2), with the host stripped of
// user information and the group/version) and counted through
// metrics.Recorder.Fallback(name, reason): name is MetricsNameFor the scope,
// reason is ReasonCode (package compat's ReasonCode constants).
//
// Capabilities never fail: an unknown, unparsable or unreachable version gives
// Unknown, which callers treat conservatively.
package capability
