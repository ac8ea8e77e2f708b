// Package compat knows what an apiserver really does: it parses /version into
// Capabilities and records observed behaviour (which outranks the version
// string), cached per server with expiry, so the lister and reflector pick the
// cheap path on current servers and never wait for what an old server cannot send.
//
// The version-to-capability knowledge is one table (Table), each row citing its
// source; FromVersion applies it. A belief resting only on a feature-gate default
// (Basis BasisGateDefault, e.g. StreamingList on v1.34) is "likely, verify": a
// cluster may run with the gate flipped, so callers use it but Observe what the
// server actually did, and the observation wins until it expires.
//
// A Detector caches, per host, the parsed /version (VersionTTL; failures are
// retried after VersionErrorTTL) and observations (ObservationTTL). A later
// observation contradicting an earlier one replaces it at once: an HA pair in
// the middle of an upgrade answers differently from request to request.
// Belief changes are logged (klog.FromContext, V(2)) and counted through
// metrics.Recorder.Fallback(host, "compat:<capability>=<support>").
//
// Capabilities never fail: an unknown, unparsable or unreachable version gives
// Unknown, which callers treat conservatively.
//
// It is not a list or watch implementation (see package lister), and it does
// not decide what to do about a capability (see package fallback).
package compat
