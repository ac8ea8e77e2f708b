package capability

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed apiserver version such as v1.18.19, v1.27.3-eks-4f4795d or v1.29.0+k3s1.
//
// Vendor suffixes are kept but do not change what the version means to steadywatch:
// v1.27.3-eks-4f4795d is treated as v1.27.3, and a pre-release such as
// v1.33.0-alpha.1 is treated as the release it leads to (v1.33.0).
type Version struct {
	Major, Minor, Patch int
	// PatchMissing is true when the server reported no patch number ("1.29",
	// "v1.29-eks"); Patch is then 0 and capabilities that change within the
	// minor are Unknown.
	PatchMissing bool
	// Pre is the text after the first '-' (up to any '+'), e.g. "eks-4f4795d",
	// "gke.1587003", "rancher1", "alpha.1". Empty when absent.
	Pre string
	// Build is the text after the first '+', e.g. "k3s1", "rke2r1", "vmware.1",
	// an OpenShift commit such as "d4cacc0". Empty when absent.
	Build string
	// Raw is the gitVersion string exactly as the server reported it.
	Raw string
}

// IsZero reports whether the version is unknown. Unstamped development builds
// (v0.0.0-master+$Format:%H$) are zero too: they say nothing about behaviour.
func (v Version) IsZero() bool { return v.Major == 0 && v.Minor == 0 && v.Patch == 0 }

// String returns the canonical form "v<major>.<minor>[.<patch>][-<pre>][+<build>]".
// For any v returned by ParseVersion, ParseVersion(v.String()) yields the same
// version (apart from Raw).
func (v Version) String() string {
	var b strings.Builder
	b.WriteString("v")
	b.WriteString(strconv.Itoa(v.Major))
	b.WriteString(".")
	b.WriteString(strconv.Itoa(v.Minor))
	if !v.PatchMissing {
		b.WriteString(".")
		b.WriteString(strconv.Itoa(v.Patch))
	}
	if v.Pre != "" {
		b.WriteString("-")
		b.WriteString(v.Pre)
	}
	if v.Build != "" {
		b.WriteString("+")
		b.WriteString(v.Build)
	}
	return b.String()
}

// Compare orders versions by major, minor and patch only (vendor suffixes and
// pre-releases are ignored; a missing patch counts as 0). It returns -1, 0 or +1.
func (v Version) Compare(w Version) int {
	switch {
	case v.Major != w.Major:
		return cmpInt(v.Major, w.Major)
	case v.Minor != w.Minor:
		return cmpInt(v.Minor, w.Minor)
	default:
		return cmpInt(v.Patch, w.Patch)
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}

// ErrInvalidVersion is matched (errors.Is) by every *VersionError.
var ErrInvalidVersion = errors.New("invalid apiserver version")

// VersionError says why a version string could not be parsed.
type VersionError struct {
	// Input is the string given to ParseVersion.
	Input string
	// Reason says what is wrong with it.
	Reason string
}

func (e *VersionError) Error() string {
	in := e.Input
	if len(in) > maxVersionLen {
		in = in[:maxVersionLen] + "..."
	}
	return fmt.Sprintf("compat: cannot parse apiserver version %q: %s", in, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrInvalidVersion }

const (
	maxVersionLen = 128 // longer strings are not versions
	maxNumDigits  = 6   // no component of a Kubernetes version needs more
)

// ParseVersion parses a Kubernetes gitVersion as real clusters report it:
// "v1.18.19", "v1.27.3-eks-4f4795d", "v1.30.2-gke.1587003", "v1.29.0+k3s1",
// "v1.28.9-rancher1", "v1.31.1+rke2r1", "v1.26.6+vmware.1", "v1.33.0-alpha.1",
// OpenShift's "v1.11.0+d4cacc0", and the lenient forms "1.29", "v1.29" and
// "V1.29.0". Surrounding white space is ignored. On failure it returns a
// *VersionError (errors.Is(err, ErrInvalidVersion)).
func ParseVersion(s string) (Version, error) {
	fail := func(reason string) (Version, error) {
		return Version{}, &VersionError{Input: s, Reason: reason}
	}
	in := strings.TrimSpace(s)
	if in == "" {
		return fail("empty")
	}
	if len(in) > maxVersionLen {
		return fail(fmt.Sprintf("longer than %d bytes", maxVersionLen))
	}
	for i := 0; i < len(in); i++ {
		if c := in[i]; c <= ' ' || c >= 0x7f {
			return fail(fmt.Sprintf("unexpected byte 0x%02x at offset %d", c, i))
		}
	}
	if in[0] == 'v' || in[0] == 'V' {
		in = in[1:]
	}
	v := Version{Raw: s}
	core := in
	if i := strings.IndexByte(core, '+'); i >= 0 {
		v.Build = core[i+1:]
		core = core[:i]
		if v.Build == "" {
			return fail("empty build metadata after '+'")
		}
	}
	if i := strings.IndexByte(core, '-'); i >= 0 {
		v.Pre = core[i+1:]
		core = core[:i]
		if v.Pre == "" {
			return fail("empty pre-release after '-'")
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return fail("want <major>.<minor>[.<patch>]")
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, ok := parseNum(p)
		if !ok {
			return fail(fmt.Sprintf("component %d (%q) is not a number", i+1, p))
		}
		nums[i] = n
	}
	v.Major, v.Minor, v.Patch = nums[0], nums[1], nums[2]
	v.PatchMissing = len(parts) == 2
	return v, nil
}

// parseNum accepts 1 to maxNumDigits ASCII digits.
func parseNum(s string) (int, bool) {
	if s == "" || len(s) > maxNumDigits {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
