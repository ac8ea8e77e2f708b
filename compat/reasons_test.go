package compat

import (
	"testing"

	"github.com/steadywatch/steadywatch/internal/capability"
)

// ReasonCodes is the closed set of the reasons the Detector counts: the
// constants here and the codes internal/capability computes agree.
func TestReasonCodesAreTheClosedSet(t *testing.T) {
	codes := ReasonCodes()
	if len(codes) != 3*len(capability.AllCapabilities)+1 {
		t.Fatalf("%d reason codes, want %d", len(codes), 3*len(capability.AllCapabilities)+1)
	}
	seen := map[ReasonCode]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("duplicate reason code %q", c)
		}
		seen[c] = true
	}
	for _, k := range capability.AllCapabilities {
		for _, s := range []capability.Support{capability.Unknown, capability.Yes, capability.No} {
			got := ReasonFor(k, s)
			if want := ReasonCode("compat:" + string(k) + "=" + s.String()); got != want {
				t.Errorf("ReasonFor(%s, %s) = %q, want %q", k, s, got, want)
			}
			if internal := capability.ReasonCode(k, s); string(got) != internal {
				t.Errorf("ReasonFor(%s, %s) = %q, but the Detector counts %q", k, s, got, internal)
			}
			if !seen[got] {
				t.Errorf("ReasonFor(%s, %s) = %q is not in ReasonCodes", k, s, got)
			}
		}
	}
	tests := []struct {
		k    capability.Capability
		s    capability.Support
		want ReasonCode
	}{
		{"notDeclared", capability.Yes, ReasonUnlistedCapability},
		{"", capability.No, ReasonUnlistedCapability},
		{capability.StreamingList, capability.Support(42), ReasonStreamingListUnknown},
	}
	for _, tc := range tests {
		if internal := capability.ReasonCode(tc.k, tc.s); internal != string(tc.want) {
			t.Errorf("the Detector counts %q for (%q, %d), want %q", internal, tc.k, tc.s, tc.want)
		}
		if got := ReasonFor(tc.k, tc.s); got != tc.want {
			t.Errorf("ReasonFor(%q, %d) = %q, want %q", tc.k, tc.s, got, tc.want)
		}
	}
	codes[0] = "mutated"
	if ReasonCodes()[0] != ReasonResourceVersionMatchUnknown {
		t.Error("ReasonCodes returns shared state")
	}
}
