package main

import "testing"

func TestReleaseVersionStampWins(t *testing.T) {
	defer func(v string) { releaseVersion = v }(releaseVersion)
	releaseVersion = "v9.8.7"
	if v := readBuildVersion(); v.Plugin != "v9.8.7" {
		t.Fatalf("plugin version %q with releaseVersion stamped, want v9.8.7", v.Plugin)
	}
}

// The plugin is a package of the SDK's module: the SDK version it reports is
// its own module's, not "unknown".
func TestSDKVersionIsThePluginsModule(t *testing.T) {
	if v := readBuildVersion(); v.SDK != v.Plugin {
		t.Fatalf("SDK version %q, plugin version %q: want the same module version", v.SDK, v.Plugin)
	}
}
