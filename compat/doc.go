// Package compat knows what an apiserver really does with list and watch
// parameters: a Detector reads each server's /version and records the
// behaviour the SDK observes (which outranks the version string, and
// expires), so the lister and reflector pick the cheap path on current
// servers and never wait for what an old server cannot send.
//
// Share one Detector per process and hand its Server to the SDK:
//
//	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
//	l := lister.New(client, lister.Options{Server: srv})
//
// What the version says follows KEP-2523
// (https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/2523-consistent-resource-version-semantics)
// and the Kubernetes API Concepts, Resource versions
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions).
// Behaviour is kept per host and per API group/version: an aggregated API
// or a custom resource may be served differently from the core group. A
// belief resting only on a feature-gate default (streaming lists on v1.34,
// say) is verified by the first request and corrected by what the server did.
//
// # Logs and metrics
//
// Belief changes are logged (klog.FromContext, V(2), with the host stripped of
// user information and the group/version) and counted through
// metrics.Recorder.Fallback(name, reason): name is "compat" for a host's
// beliefs and "compat/<group>/<version>" for one group/version's (the host
// is never a label); reason is one of these fallback.ReasonCode values
// (fallback.Reasons lists them with every other reason code):
//
//	compat:resourceVersionMatch=unknown    compat:resourceVersionMatch=yes    compat:resourceVersionMatch=no
//	compat:watchBookmarks=unknown          compat:watchBookmarks=yes          compat:watchBookmarks=no
//	compat:streamingList=unknown           compat:streamingList=yes           compat:streamingList=no
//	compat:consistentListFromCache=unknown compat:consistentListFromCache=yes compat:consistentListFromCache=no
//	compat:tooLargeRVByMessage=unknown     compat:tooLargeRVByMessage=yes     compat:tooLargeRVByMessage=no
//	compat:watchCacheProgress=unknown      compat:watchCacheProgress=yes      compat:watchCacheProgress=no
//	compat:unlisted-capability             (any capability the SDK does not declare)
//
// Capabilities never fail: an unknown, unparsable or unreachable version gives
// unknown capabilities, which the SDK treats conservatively.
//
// It is not a list or watch implementation (see package lister), and it does
// not decide what to do about a capability (see package fallback).
package compat
