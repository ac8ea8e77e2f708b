package build

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// A recipe is how to build kube-apiserver for one range of releases. The
// plain recipe (a wrapper module plus go build) works for current releases;
// older ranges add steps, each documented with the failure it prevents.
type recipe struct {
	name     string
	min, max string // releases in [min, max) use this recipe; max "" = no upper bound
	verified string // releases this recipe is known to build and run

	// extra are replace directives added to the wrapper module.
	extra []replacement
	// generateOpenAPI: the module zip lacks pkg/generated/openapi's generated
	// file, so it must be generated before kube-apiserver builds (legacy.go).
	generateOpenAPI bool
	// providerless: build with -tags providerless when the release still
	// requires k8s.io/legacy-cloud-providers (see providerlessWhy).
	providerless bool
}

const (
	legacyCloudProviders = "k8s.io/legacy-cloud-providers"
	providerlessTag      = "providerless"
	// providerlessWhy: observed on v1.27.16, whose build otherwise fails with
	// "k8s.io/legacy-cloud-providers@v0.27.16: verifying module: ... sumdb
	// ... 404 Not Found". The in-tree cloud providers (azure, gce, vsphere)
	// are the only importers, kube-apiserver's upstream build supports
	// leaving them out with this tag, and the harness never uses them.
	providerlessWhy = "the in-tree cloud providers (k8s.io/legacy-cloud-providers) are left out; the harness needs none, and the module's checksum may be missing from the checksum database (v0.27.16 is)"
)

// recipes lists the recipe for each supported range of releases.
func recipes() []recipe {
	return []recipe{
		{
			name:         "plain",
			min:          "v1.23.0",
			verified:     "v1.34.4, v1.36.3, v1.37.2",
			providerless: true,
		},
		openAPIRecipe(),
		legacyRecipe(),
	}
}

// openAPIRecipe is for v1.20.x to v1.22.x: like the legacy recipe without
// vbom.ml/util (no longer required), and like the plain one without the
// in-tree cloud providers. v1.22.17 still pins reflect2 v1.0.1 and its
// module zip lacks pkg/generated/openapi/zz_generated.openapi.go (v1.26.15
// and v1.27.16 ship it; 1.23 to 1.25 were not tried). Not verified: on the
// module proxy used so far, v1.22.17 and v1.22.16 stop earlier, at the
// staging-module download (a zip the proxy does not serve, go.mod checksums
// missing from the checksum database).
func openAPIRecipe() recipe {
	rc := legacyRecipe()
	rc.name, rc.min, rc.max, rc.verified = "openapi", "v1.20.0", "v1.23.0", "none yet"
	rc.extra = rc.extra[1:] // no vbom.ml/util
	rc.providerless = true
	return rc
}

// legacyRecipe builds v1.16.x to v1.19.x (1.18 is the last minor before
// resourceVersionMatch; 1.19 still pins all three modules below and ships no
// generated openapi file: the plain recipe fails on v1.19.16 with "vbom.ml/util
// ... 403 Forbidden"). Four things differ from current releases; all four
// are required (each was observed to fail without it on v1.18.19) and the
// same four build v1.17.17 and v1.16.15 with Go 1.26 (verified; 1.15 and
// older were not tried: their staging modules predate the v0.Y.Z tags):
//
//  1. Staging modules at v0.18.Z, as for any release (the plain part).
//  2. vbom.ml/util, a dependency of v1.18, is gone from the module proxy;
//     its code lives on as github.com/fvbommel/util at the same commit.
//  3. The pinned github.com/modern-go/reflect2 (and the json-iterator built on
//     it) panics under Go >= 1.18 at the first JSON list it encodes; reflect2
//     v1.0.2 and json-iterator v1.1.12 are the fixed releases.
//  4. The module zip lacks pkg/generated/openapi/zz_generated.openapi.go
//     (generated at build time in that era, and not committed), so the server
//     exits with "unable to get openapi models". It is generated with the
//     openapi-gen the release pins, into a writable copy of the module.
func legacyRecipe() recipe {
	return recipe{
		name:     "legacy",
		min:      "v1.16.0",
		max:      "v1.20.0",
		verified: "v1.16.15, v1.17.17, v1.18.19, v1.19.16",
		extra: []replacement{
			{
				Old: "vbom.ml/util", New: "github.com/fvbommel/util", Version: "v0.0.0-20160121211510-db5cfe13f5cc",
				Why: "vbom.ml/util is gone from the module proxy; same code under its new path.",
			},
			{
				Old: "github.com/modern-go/reflect2", New: "github.com/modern-go/reflect2", Version: "v1.0.2",
				Why: "reflect2 < v1.0.2 panics under Go >= 1.18 (first JSON list encoded).",
			},
			{
				Old: "github.com/json-iterator/go", New: "github.com/json-iterator/go", Version: "v1.1.12",
				Why: "json-iterator v1.1.12 is the release that works with reflect2 v1.0.2.",
			},
		},
		generateOpenAPI: true,
	}
}

// recipeFor returns the recipe for a release, or an error wrapping
// ErrInvalidVersion.
func recipeFor(version string) (recipe, error) {
	if _, err := stagingVersion(version); err != nil {
		return recipe{}, err
	}
	for _, rc := range recipes() {
		if semver.Compare(version, rc.min) >= 0 && (rc.max == "" || semver.Compare(version, rc.max) < 0) {
			return rc, nil
		}
	}
	return recipe{}, fmt.Errorf("%w: %s is older than every recipe (oldest supported: v1.16.0)", ErrInvalidVersion, version)
}

// moduleInfo is one object of `go mod download -json` output.
type moduleInfo struct {
	Path, Version string
	Error         string
	GoMod, Dir    string
}

// inputsTag is the build tag of the wrapper's file that imports openapi-gen's
// input packages (legacy recipe), so that the go command records their
// modules and checksums without them being part of kube-apiserver's build.
const inputsTag = "steadywatch_openapi_inputs"

const inputsFile = "openapi_inputs.go"

// buildInto is the real buildFunc: it builds kube-apiserver r.version to out.
func buildInto(ctx context.Context, r *run, out string) error {
	rc, err := recipeFor(r.version)
	if err != nil {
		return err
	}
	staging, _ := stagingVersion(r.version) // validated by recipeFor
	r.logf("recipe %q (verified: %s); wrapper module in %s", rc.name, rc.verified, r.srcDir)

	var kube moduleInfo
	var gomod *kubeGoMod
	if err := r.step(ctx, "download k8s.io/kubernetes@"+r.version, func() error {
		mods, err := r.downloadModules(ctx, "download k8s.io/kubernetes@"+r.version, "k8s.io/kubernetes@"+r.version)
		if err != nil {
			return err
		}
		kube = mods[0]
		data, err := os.ReadFile(kube.GoMod)
		if err != nil {
			return err
		}
		gomod, err = parseKubeGoMod(data)
		return err
	}); err != nil {
		return err
	}
	r.logf("k8s.io/kubernetes %s: go %s, %d staging modules at %s", r.version, gomod.GoVersion, len(gomod.Staging), staging)

	w := wrapperModule{
		Version:        r.version,
		GoVersion:      gomod.GoVersion,
		Staging:        gomod.Staging,
		StagingVersion: staging,
		Extra:          rc.extra,
	}
	var inputs []string
	if rc.generateOpenAPI {
		w.KubernetesDir = "./" + localKubeDir
		if inputs, err = r.prepareOpenAPIInputs(ctx, kube, gomod, staging); err != nil {
			return err
		}
	}
	if err := r.writeWrapper(w, inputs); err != nil {
		return &BuildError{Version: r.version, Step: "write wrapper module", Err: err}
	}

	var tags []string
	if rc.providerless && slices.Contains(gomod.Staging, legacyCloudProviders) {
		tags = append(tags, providerlessTag)
		r.logf("building with -tags %s: %s", providerlessTag, providerlessWhy)
	}
	targets := []string{"k8s.io/kubernetes/cmd/kube-apiserver"}
	listArgs := []string{"list", "-mod=mod", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}"}
	listTags := tags
	if rc.generateOpenAPI {
		targets = append(targets, "k8s.io/kube-openapi/cmd/openapi-gen", ".")
		listTags = append(slices.Clone(tags), inputsTag)
	}
	if len(listTags) > 0 {
		listArgs = append(listArgs, "-tags", strings.Join(listTags, ","))
	}
	// Resolving every package first downloads exactly the modules the build
	// needs and records their checksums in the wrapper's go.sum, so the
	// compile step below is only compiling.
	if err := r.step(ctx, "download dependencies", func() error {
		_, err := r.goCmd(ctx, "download dependencies", r.srcDir, false, append(listArgs, targets...)...)
		return err
	}); err != nil {
		return err
	}

	if rc.generateOpenAPI {
		if err := r.generateOpenAPI(ctx, gomod, inputs); err != nil {
			return err
		}
	}

	flags, err := ldflags(r.version, time.Now())
	if err != nil {
		return err
	}
	return r.step(ctx, "go build kube-apiserver", func() error {
		args := []string{"build", "-mod=mod", "-ldflags", flags, "-o", out}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		_, err := r.goCmd(ctx, "go build kube-apiserver", r.srcDir, false, append(args, "k8s.io/kubernetes/cmd/kube-apiserver")...)
		return err
	})
}

// downloadModules runs `go mod download -json` for the given module@version
// arguments and returns their metadata in order. It runs in a directory of
// its own with an empty go.mod, so no enclosing module (such as the e2e
// module around the default cache) is consulted or modified.
func (r *run) downloadModules(ctx context.Context, step string, mods ...string) ([]moduleInfo, error) {
	dir := filepath.Join(r.cacheDir, "src", ".download")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module steadywatch.invalid/download\n"), 0o644); err != nil {
		return nil, err
	}
	out, runErr := r.goCmd(ctx, step, dir, true, append([]string{"mod", "download", "-json"}, mods...)...)
	infos, err := decodeModuleInfos(out)
	if err != nil {
		if runErr != nil {
			return nil, runErr
		}
		return nil, err
	}
	var failed []string
	for _, m := range infos {
		if m.Error != "" {
			failed = append(failed, m.Error)
		}
	}
	if len(failed) > 0 {
		var be *BuildError
		if errors.As(runErr, &be) {
			be.Err = fmt.Errorf("%w: %s", be.Err, strings.Join(failed, "; "))
			return nil, be
		}
		return nil, errors.New(strings.Join(failed, "; "))
	}
	if runErr != nil {
		return nil, runErr
	}
	if len(infos) != len(mods) {
		return nil, fmt.Errorf("go mod download reported %d modules, asked for %d", len(infos), len(mods))
	}
	return infos, nil
}

// decodeModuleInfos decodes the JSON stream `go mod download -json` prints.
func decodeModuleInfos(out []byte) ([]moduleInfo, error) {
	var infos []moduleInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m moduleInfo
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return infos, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go mod download output: %w", err)
		}
		infos = append(infos, m)
	}
}

// writeWrapper writes the wrapper's go.mod (go.sum is kept from earlier
// builds; the go command completes it) and, if inputs is not empty, the
// build-tagged file importing openapi-gen's input packages.
func (r *run) writeWrapper(w wrapperModule, inputs []string) error {
	if err := os.MkdirAll(r.srcDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.srcDir, "go.mod"), w.goMod(), 0o644); err != nil {
		return err
	}
	path := filepath.Join(r.srcDir, inputsFile)
	if len(inputs) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(path, inputsSource(inputs), 0o644)
}

// inputsSource renders the build-tagged Go file that blank-imports pkgs.
func inputsSource(pkgs []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "//go:build %s\n\n", inputsTag)
	b.WriteString("// Code generated by github.com/steadywatch/steadywatch/e2e/harness/build. DO NOT EDIT.\n\n")
	b.WriteString("// Package inputs imports openapi-gen's input packages so that the go command\n")
	b.WriteString("// records their modules and checksums in this wrapper module.\n")
	b.WriteString("package inputs\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t_ %q\n", p)
	}
	b.WriteString(")\n")
	return []byte(b.String())
}
