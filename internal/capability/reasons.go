package capability

import "k8s.io/apimachinery/pkg/runtime/schema"

// ReasonCode returns the reason a belief change is counted under
// (metrics.Recorder.Fallback's reason): "compat:<capability>=<support>" for
// a capability in AllCapabilities, "compat:unlisted-capability" for any
// other (a caller may Observe any Capability string; it never reaches a
// label). These are the values of package compat's ReasonCode constants; its
// tests check that both agree.
func ReasonCode(k Capability, s Support) string {
	for _, c := range AllCapabilities {
		if c == k {
			return "compat:" + string(k) + "=" + s.String()
		}
	}
	return "compat:unlisted-capability"
}

// MetricsName is the name the Detector gives metrics.Recorder.Fallback for a belief
// change in the host-wide scope. A group/version view reports under
// MetricsName + "/" + its group/version ("compat/v1", "compat/apps/v1"); see
// MetricsNameFor. The apiserver's host is never part of a label (it is logged,
// without user information): a label must not carry credentials, and one
// label value per host would grow with every cluster (and every test server)
// a process talks to.
const MetricsName = "compat"

// MetricsNameFor returns the metrics name for the scope gv: MetricsName for the
// zero GroupVersion (the host-wide scope), else "compat/<group>/<version>"
// ("compat/v1" for the core group). The number of values is bounded by the
// group/versions a process lists, like the lister's and reflector's names.
func MetricsNameFor(gv schema.GroupVersion) string {
	if gv.Empty() {
		return MetricsName
	}
	return MetricsName + "/" + gv.String()
}
