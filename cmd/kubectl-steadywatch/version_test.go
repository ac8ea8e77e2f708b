package main

import "testing"

func TestReleaseVersionStampWins(t *testing.T) {
	defer func(v string) { releaseVersion = v }(releaseVersion)
	releaseVersion = "v9.8.7"
	if v := readBuildVersion(); v.Plugin != "v9.8.7" {
		t.Fatalf("plugin version %q with releaseVersion stamped, want v9.8.7", v.Plugin)
	}
}
