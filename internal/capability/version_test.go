package capability

import (
	"errors"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	type want struct {
		major, minor, patch int
		noPatch             bool
		pre, build          string
	}
	tests := []struct {
		in   string
		want want
	}{
		// Upstream and our own e2e servers.
		{"v1.18.19", want{1, 18, 19, false, "", ""}},
		{"v1.36.3", want{1, 36, 3, false, "", ""}},
		{"v1.33.0-alpha.1", want{1, 33, 0, false, "alpha.1", ""}},
		{"v1.31.0-rc.0", want{1, 31, 0, false, "rc.0", ""}},
		{"v1.22.0-beta.0.123+abcdef012345", want{1, 22, 0, false, "beta.0.123", "abcdef012345"}},
		// Managed clouds.
		{"v1.27.3-eks-4f4795d", want{1, 27, 3, false, "eks-4f4795d", ""}},
		{"v1.30.2-gke.1587003", want{1, 30, 2, false, "gke.1587003", ""}},
		{"v1.22.3-aliyun.1", want{1, 22, 3, false, "aliyun.1", ""}},
		{"v1.20.6-tke.12", want{1, 20, 6, false, "tke.12", ""}},
		{"v1.29.4-eks-036c24b", want{1, 29, 4, false, "eks-036c24b", ""}},
		// Distributions.
		{"v1.29.0+k3s1", want{1, 29, 0, false, "", "k3s1"}},
		{"v1.28.9-rancher1", want{1, 28, 9, false, "rancher1", ""}},
		{"v1.31.1+rke2r1", want{1, 31, 1, false, "", "rke2r1"}},
		{"v1.26.6+vmware.1", want{1, 26, 6, false, "", "vmware.1"}},
		{"v1.28.3-3+1df4a1f4b3e5e1", want{1, 28, 3, false, "3", "1df4a1f4b3e5e1"}},
		// OpenShift: kube version with the commit as build metadata, and the odd 3.x forms.
		{"v1.11.0+d4cacc0", want{1, 11, 0, false, "", "d4cacc0"}},
		{"v1.27.6+f67aeb3", want{1, 27, 6, false, "", "f67aeb3"}},
		{"v1.9.1+a0ce1bc657", want{1, 9, 1, false, "", "a0ce1bc657"}},
		{"v3.11.0+0cbc58b-dirty", want{3, 11, 0, false, "", "0cbc58b-dirty"}},
		{"4.14.0-0.okd-2024-01-06-084517", want{4, 14, 0, false, "0.okd-2024-01-06-084517", ""}},
		// Unstamped development build: parses, but IsZero.
		{"v0.0.0-master+$Format:%H$", want{0, 0, 0, false, "master", "$Format:%H$"}},
		// Lenient forms.
		{"1.29", want{1, 29, 0, true, "", ""}},
		{"v1.29", want{1, 29, 0, true, "", ""}},
		{"1.29.3", want{1, 29, 3, false, "", ""}},
		{"V1.29.3", want{1, 29, 3, false, "", ""}},
		{"  v1.29.3\n", want{1, 29, 3, false, "", ""}},
		{"v1.29-eks", want{1, 29, 0, true, "eks", ""}},
		{"v1.09.01", want{1, 9, 1, false, "", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if err != nil {
				t.Fatalf("ParseVersion(%q) error: %v", tc.in, err)
			}
			got := want{v.Major, v.Minor, v.Patch, v.PatchMissing, v.Pre, v.Build}
			if got != tc.want {
				t.Fatalf("ParseVersion(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			if v.Raw != tc.in {
				t.Errorf("Raw = %q, want the input %q", v.Raw, tc.in)
			}
			again, err := ParseVersion(v.String())
			if err != nil {
				t.Fatalf("String %q does not parse: %v", v.String(), err)
			}
			if !sameVersion(v, again) {
				t.Errorf("round trip %q -> %q -> %+v, want %+v", tc.in, v.String(), again, v)
			}
		})
	}
}

func TestParseVersionStringCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"1.29":                  "v1.29",
		"V1.29.3":               "v1.29.3",
		" v1.27.3-eks-4f4795d ": "v1.27.3-eks-4f4795d",
		"v1.29.0+k3s1":          "v1.29.0+k3s1",
		"v1.09.01":              "v1.9.1",
	} {
		v, err := ParseVersion(in)
		if err != nil {
			t.Fatalf("ParseVersion(%q): %v", in, err)
		}
		if got := v.String(); got != want {
			t.Errorf("ParseVersion(%q).String() = %q, want %q", in, got, want)
		}
	}
}

func TestParseVersionErrors(t *testing.T) {
	for _, in := range []string{
		"", "   ", "v", "vv1.2.3", "1", "v1", "v1.", "v1.2.", "v1..2", "1.2.3.4", "a.b.c",
		"v1.2.3-", "v1.2.3+", "v-1.2.3", "v1.2.x", "v1.2.3 extra", "v1.2.3\x00",
		"v1.2.3-é", "v1234567.1.1", "v1.1234567.1", "v1." + strings.Repeat("9", 30),
		"unknown", "master", strings.Repeat("1", 200), "+k3s1", "-eks",
	} {
		v, err := ParseVersion(in)
		if err == nil {
			t.Errorf("ParseVersion(%q) = %+v, want an error", in, v)
			continue
		}
		var ve *VersionError
		if !errors.As(err, &ve) {
			t.Errorf("ParseVersion(%q) error %T is not a *VersionError", in, err)
		} else if ve.Input != in || ve.Reason == "" {
			t.Errorf("ParseVersion(%q) error = %+v, want Input set and a Reason", in, ve)
		}
		if !errors.Is(err, ErrInvalidVersion) {
			t.Errorf("ParseVersion(%q): errors.Is(err, ErrInvalidVersion) = false", in)
		}
		if v != (Version{}) {
			t.Errorf("ParseVersion(%q) returned non-zero version %+v with its error", in, v)
		}
	}
}

func TestVersionErrorTruncatesLongInput(t *testing.T) {
	_, err := ParseVersion(strings.Repeat("x", 5000))
	if err == nil {
		t.Fatal("want an error")
	}
	if n := len(err.Error()); n > 400 {
		t.Errorf("error message is %d bytes; long input must be truncated", n)
	}
}

func TestVersionCompare(t *testing.T) {
	mk := func(s string) Version {
		v, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		a, b string
		want int
	}{
		{"v1.18.5", "v1.18.6", -1},
		{"v1.18.19", "v1.18.6", 1},
		{"v1.19.0", "v1.18.99", 1},
		{"v1.27.3-eks-4f4795d", "v1.27.3", 0},
		{"v1.33.0-alpha.1", "v1.33.0", 0},
		{"v1.29", "v1.29.0", 0},
		{"v2.0.0", "v1.99.99", 1},
	}
	for _, tc := range tests {
		if got := mk(tc.a).Compare(mk(tc.b)); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func sameVersion(a, b Version) bool {
	a.Raw, b.Raw = "", ""
	return a == b
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{
		"v1.18.19", "v1.27.3-eks-4f4795d", "v1.30.2-gke.1587003", "v1.29.0+k3s1",
		"v1.28.9-rancher1", "v1.31.1+rke2r1", "v1.26.6+vmware.1", "v1.33.0-alpha.1",
		"1.29", "v1.11.0+d4cacc0", "v0.0.0-master+$Format:%H$", "", "v", "v1.2.3-+", "1.2.3.4",
		"v1.2-+x", "v1.2.3+a+b-c", "V01.002.0003",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			var ve *VersionError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidVersion) {
				t.Fatalf("ParseVersion(%q) error %v (%T) is not a typed *VersionError", s, err, err)
			}
			if v != (Version{}) {
				t.Fatalf("ParseVersion(%q) returned %+v along with an error", s, v)
			}
			return
		}
		if v.Raw != s {
			t.Fatalf("Raw = %q, want %q", v.Raw, s)
		}
		if v.Major < 0 || v.Minor < 0 || v.Patch < 0 {
			t.Fatalf("negative component in %+v", v)
		}
		str := v.String()
		again, err := ParseVersion(str)
		if err != nil {
			t.Fatalf("ParseVersion(%q).String() = %q does not parse: %v", s, str, err)
		}
		if !sameVersion(v, again) {
			t.Fatalf("round trip %q -> %q -> %+v, want %+v", s, str, again, v)
		}
		if again.String() != str {
			t.Fatalf("String not stable: %q then %q", str, again.String())
		}
		// FromVersion must accept anything ParseVersion returns.
		c := FromVersion(v)
		for _, k := range AllCapabilities {
			if c.Reasons[k] == "" {
				t.Fatalf("FromVersion(%s): no reason for %s", v, k)
			}
		}
	})
}
