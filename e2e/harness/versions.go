package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// minorFlags says which version-specific kube-apiserver flags a range of
// minors needs. Flags common to every supported minor live in
// apiServerArgs; only the differences are here, one row per difference.
type minorFlags struct {
	from, to int // inclusive range of 1.x minors
	flags    []string
	why      string
}

// versionTable is the whole of the harness's knowledge about flag differences
// between kube-apiserver minors. Supported: 1.16 (the legacy floor, built
// with Go 1.26 by package build's legacy recipe; see docs/compatibility.md)
// up to the newest.
var versionTable = []minorFlags{
	{from: 16, to: 23, flags: []string{"--insecure-port=0"},
		why: "the insecure port (8080) is on by default until the flag was removed in 1.24"},
}

const (
	minSupportedMinor = 16
	maxSupportedMinor = 99
)

// minorOf returns the minor of a "v1.Y.Z" version.
func minorOf(version string) (int, error) {
	v := strings.TrimPrefix(version, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] != "1" {
		return 0, fmt.Errorf("%w: %q is not a v1.Y.Z version", ErrUnsupportedVersion, version)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, fmt.Errorf("%w: %q: minor: %v", ErrUnsupportedVersion, version, err)
	}
	if minor < minSupportedMinor || minor > maxSupportedMinor {
		return 0, fmt.Errorf("%w: %q: supported minors are 1.%d and newer", ErrUnsupportedVersion, version, minSupportedMinor)
	}
	return minor, nil
}

// versionFlags returns the version-specific flags for version.
func versionFlags(version string) ([]string, error) {
	minor, err := minorOf(version)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, row := range versionTable {
		if minor >= row.from && minor <= row.to {
			out = append(out, row.flags...)
		}
	}
	return out, nil
}
