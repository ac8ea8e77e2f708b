package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildVersion is what `version` and --version print, read from the
// binary's build information.
type buildVersion struct {
	// Plugin is the module version of the plugin: a tag or pseudo-version
	// when installed with go install MODULE@VERSION, "(devel)" when built
	// from a checkout.
	Plugin string
	// Revision is the VCS commit the binary was built from ("" if unknown),
	// with "+dirty" when the work tree had changes.
	Revision string
	// SDK and ClientGo are the versions of the steadywatch SDK and
	// k8s.io/client-go linked in. The plugin is a package of the SDK's
	// module, so SDK is Plugin unless a build replaces the module.
	SDK, ClientGo string
	Go            string
	Platform      string
}

// releaseVersion is stamped by release builds (scripts/release.sh:
// -ldflags "-X main.releaseVersion=v0.1.0"); it wins over the build
// information, which says "(devel)" for a binary built in this repository.
var releaseVersion = ""

const (
	sdkModule      = "github.com/steadywatch/steadywatch"
	clientGoModule = "k8s.io/client-go"
)

func readBuildVersion() buildVersion {
	v := buildVersion{Plugin: "(devel)", SDK: "unknown", ClientGo: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Plugin = bi.Main.Version
	}
	if bi.Main.Path == sdkModule {
		v.SDK = v.Plugin
	}

	for _, d := range bi.Deps {
		switch d.Path {
		case sdkModule:
			v.SDK = moduleVersion(d)
		case clientGoModule:
			v.ClientGo = moduleVersion(d)
		}
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v.Revision != "" && dirty {
		v.Revision += "+dirty"
	}
	if releaseVersion != "" {
		v.Plugin = releaseVersion
		if v.SDK == "(devel)" || v.SDK == "unknown" {
			v.SDK = releaseVersion // the SDK of this repository, released with it from one tag
		}
	}
	return v
}

// moduleVersion is d's version, "(devel)" when a replace points at a
// directory (the SDK built from this checkout).
func moduleVersion(d *debug.Module) string {
	if r := d.Replace; r != nil {
		if r.Version == "" {
			return "(devel)"
		}
		return r.Version
	}
	return d.Version
}

func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kubectl-steadywatch %s\n", v.Plugin)
	if v.Revision != "" {
		fmt.Fprintf(&b, "  %-11s %s\n", "commit", v.Revision)
	}
	fmt.Fprintf(&b, "  %-11s %s\n", "steadywatch", v.SDK)
	fmt.Fprintf(&b, "  %-11s %s\n", "client-go", v.ClientGo)
	fmt.Fprintf(&b, "  %-11s %s %s\n", "go", v.Go, v.Platform)
	return b.String()
}

func newVersionCommand(out io.Writer) *command {
	return &command{
		Use:         "version",
		Short:       "Print the plugin's version, the steadywatch and client-go versions it is built with, and Go's",
		Args:        noArgs,
		Annotations: map[string]string{annotationOffline: "true"},
		RunE: func(*command, []string) error {
			_, err := io.WriteString(out, readBuildVersion().String())
			return err
		},
	}
}
