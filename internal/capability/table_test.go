package capability

import (
	"strings"
	"testing"
)

// TestTableIsWellFormed checks the table's own invariants: per capability the rows
// are contiguous from v1.0.0, do not overlap, end open-ended, and each cites a source.
func TestTableIsWellFormed(t *testing.T) {
	for _, k := range AllCapabilities {
		var rows []Row
		for _, r := range Table {
			if r.Capability == k {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			t.Errorf("%s: no rows", k)
			continue
		}
		if rows[0].Since.Compare(ver(1, 0, 0)) != 0 {
			t.Errorf("%s: first row starts at %s, want v1.0.0", k, rows[0].Since)
		}
		for i, r := range rows {
			if r.Reason == "" || r.Source == "" {
				t.Errorf("%s row %d: missing Reason or Source", k, i)
			}
			if r.Support == Unknown {
				t.Errorf("%s row %d: Unknown is not a table answer", k, i)
			}
			if r.Basis != BasisVersion && r.Basis != BasisGateDefault {
				t.Errorf("%s row %d: basis %s, want version or gate-default", k, i, r.Basis)
			}
			last := i == len(rows)-1
			if last != r.Until.IsZero() {
				t.Errorf("%s row %d: only the last row may (and must) be open-ended", k, i)
			}
			if !last {
				if r.Until.Compare(r.Since) <= 0 {
					t.Errorf("%s row %d: empty range [%s, %s)", k, i, r.Since, r.Until)
				}
				if rows[i+1].Since.Compare(r.Until) != 0 {
					t.Errorf("%s row %d ends at %s but row %d starts at %s", k, i, r.Until, i+1, rows[i+1].Since)
				}
			}
		}
	}
	for _, r := range Table {
		found := false
		for _, k := range AllCapabilities {
			found = found || r.Capability == k
		}
		if !found {
			t.Errorf("row for %q, which is not in AllCapabilities", r.Capability)
		}
	}
}

func TestFromVersion(t *testing.T) {
	const (
		U = Unknown
		Y = Yes
		N = No
	)
	type row struct {
		rvMatch, bookmarks, streaming, clfc Support
		tooLargeByMessage                   bool
		streamingTentative                  bool
	}
	tests := []struct {
		in   string
		want row
	}{
		{"v1.14.10", row{N, N, N, N, true, false}},
		{"v1.15.12", row{N, N, N, N, true, false}},
		{"v1.16.15", row{N, Y, N, N, true, false}},
		{"v1.17.0", row{N, Y, N, N, true, false}},
		{"v1.18.5", row{N, Y, N, N, true, false}},
		{"v1.18.6", row{N, Y, N, N, false, false}},
		{"v1.18.19", row{N, Y, N, N, false, false}},
		{"v1.19.0", row{Y, Y, N, N, false, false}},
		{"v1.26.6+vmware.1", row{Y, Y, N, N, false, false}},
		{"v1.27.3-eks-4f4795d", row{Y, Y, N, N, false, true}},
		{"v1.28.9-rancher1", row{Y, Y, N, N, false, true}},
		{"v1.30.2-gke.1587003", row{Y, Y, N, N, false, true}},
		{"v1.31.1+rke2r1", row{Y, Y, N, Y, false, true}},
		{"v1.32.0", row{Y, Y, Y, Y, false, true}},
		{"v1.33.0-alpha.1", row{Y, Y, N, Y, false, true}},
		{"v1.34.4", row{Y, Y, Y, Y, false, true}},
		{"v1.36.3", row{Y, Y, Y, Y, false, true}},
		{"v1.99.0", row{Y, Y, Y, Y, false, true}},
		// No patch: decided when the minor decides, Unknown (conservative) otherwise.
		{"1.29", row{Y, Y, N, N, false, true}},
		{"1.18", row{N, Y, N, N, true, false}},
		// Not Kubernetes 1.x, or unstamped: all Unknown, and match the message form too.
		{"v0.0.0-master+$Format:%H$", row{U, U, U, U, true, false}},
		{"v3.11.0+0cbc58b-dirty", row{U, U, U, U, true, false}},
		{"4.14.0-0.okd-2024-01-06-084517", row{U, U, U, U, true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			c := FromVersion(v)
			got := row{c.Get(ResourceVersionMatch), c.Get(WatchBookmarks), c.Get(StreamingList),
				c.Get(ConsistentListFromCache), c.TooLargeRVByMessage, c.Tentative(StreamingList)}
			if got != tc.want {
				t.Errorf("FromVersion(%s) = %+v, want %+v\n%s", tc.in, got, tc.want, c)
			}
			for _, k := range AllCapabilities {
				if c.Reasons[k] == "" {
					t.Errorf("no reason for %s", k)
				}
			}
		})
	}
}

// The watch cache advances on etcd progress notifications from
// EfficientWatchResumption's default on (KEP-1904: beta v1.21, GA v1.24).
func TestFromVersionWatchCacheProgress(t *testing.T) {
	tests := []struct {
		in    string
		want  Support
		basis Basis
	}{
		{"v1.16.15", No, BasisVersion},
		{"v1.18.19", No, BasisVersion},
		{"v1.19.16", No, BasisVersion},
		{"v1.20.15", No, BasisGateDefault},
		{"v1.21.0", Yes, BasisGateDefault},
		{"v1.23.17", Yes, BasisGateDefault},
		{"v1.24.0", Yes, BasisVersion},
		{"v1.37.2", Yes, BasisVersion},
		{"1.20", No, BasisGateDefault},
		{"v3.11.0", Unknown, BasisNone},
	}
	for _, tc := range tests {
		v, err := ParseVersion(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		c := FromVersion(v)
		if got := c.Get(WatchCacheProgress); got != tc.want || c.Basis[WatchCacheProgress] != tc.basis {
			t.Errorf("FromVersion(%s): watchCacheProgress = %s (%s), want %s (%s)", tc.in, got, c.Basis[WatchCacheProgress], tc.want, tc.basis)
		}
	}
}

func TestFromVersionAmbiguousPatch(t *testing.T) {
	v, _ := ParseVersion("v1.18")
	c := FromVersion(v)
	if c.Get(TooLargeRVMessage) != Unknown {
		t.Errorf("v1.18 without patch: tooLargeRVByMessage = %s, want unknown (1.18.0-1.18.5 differ from 1.18.6+)", c.Get(TooLargeRVMessage))
	}
	if !strings.Contains(c.Reasons[TooLargeRVMessage], "no patch") {
		t.Errorf("reason %q does not say the patch is missing", c.Reasons[TooLargeRVMessage])
	}
	if c.Get(ResourceVersionMatch) != No {
		t.Errorf("v1.18 without patch: resourceVersionMatch = %s, want no (the whole minor agrees)", c.Get(ResourceVersionMatch))
	}
}

func TestFromVersionReasonsCiteVersionAndBasis(t *testing.T) {
	v, _ := ParseVersion("v1.34.4")
	c := FromVersion(v)
	if r := c.Reasons[StreamingList]; !strings.Contains(r, "v1.34.4") || !strings.Contains(r, "verify") {
		t.Errorf("StreamingList reason %q should name the version and ask to verify", r)
	}
	if c.Basis[StreamingList] != BasisGateDefault || c.Basis[ResourceVersionMatch] != BasisVersion {
		t.Errorf("basis = %v", c.Basis)
	}
}

func TestCapabilitiesString(t *testing.T) {
	v, _ := ParseVersion("v1.34.4")
	got := FromVersion(v).String()
	want := "v1.34.4 resourceVersionMatch=yes watchBookmarks=yes streamingList=yes(verify) consistentListFromCache=yes tooLargeRVByMessage=no watchCacheProgress=yes"
	if got != want {
		t.Errorf("String() =\n %q, want\n %q", got, want)
	}
	if got := (Capabilities{}).String(); !strings.HasPrefix(got, "version=unknown resourceVersionMatch=unknown") {
		t.Errorf("zero Capabilities String() = %q", got)
	}
	c := FromVersion(v)
	c.Support["zzExtra"] = No
	if got := c.String(); !strings.HasSuffix(got, " zzExtra=no") {
		t.Errorf("extra capability not printed: %q", got)
	}
}
