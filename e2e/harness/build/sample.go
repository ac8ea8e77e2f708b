package build

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SampleAPIServer is the k8s.io/sample-apiserver release EnsureSampleAPIServer
// builds by default: a real aggregated apiserver on k8s.io/apiserver v0.18,
// the last minor before resourceVersionMatch, whose watches ignore
// sendInitialEvents (ADDED events, never the initial-events-end bookmark),
// like the old aggregated APIs that broke informers in the field.
const SampleAPIServer = "v0.18.19"

// SampleAPIServerPath is where EnsureSampleAPIServer puts the binary for
// version under cacheDir: <cacheDir>/bin/sample-apiserver-<version>/sample-apiserver.
func SampleAPIServerPath(cacheDir, version string) string {
	return filepath.Join(cacheDir, "bin", "sample-apiserver-"+version, "sample-apiserver")
}

// EnsureSampleAPIServer returns the path of a k8s.io/sample-apiserver
// binary at version (v0.18.x: the legacy recipe's go.mod fixes apply),
// building it from the Go module proxy if missing, cached and locked like
// Ensure. The module zip carries its generated OpenAPI, so no generation step
// is needed.
func EnsureSampleAPIServer(ctx context.Context, version string, progress io.Writer) (string, error) {
	if !strings.HasPrefix(version, "v0.18.") {
		return "", fmt.Errorf("%w: sample-apiserver %q (only v0.18.x is supported)", ErrInvalidVersion, version)
	}
	cacheDir := CacheDir()
	final := SampleAPIServerPath(cacheDir, version)
	if isFile(final) {
		return final, nil
	}
	name := "sample-apiserver-" + version
	r := newRun(cacheDir, name, progress)
	lock, err := acquireLock(ctx, filepath.Join(cacheDir, "locks", name+".lock"), func() {
		r.logf("another process is building %s; waiting for it", name)
	})
	if err != nil {
		return "", fmt.Errorf("build %s: waiting for build lock: %w", name, err)
	}
	defer lock.release()
	if isFile(final) {
		return final, nil
	}
	for _, d := range []string{r.srcDir, filepath.Dir(final)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", &BuildError{Version: name, Step: "prepare", Err: err}
		}
	}
	replaces := []string{
		"github.com/json-iterator/go => github.com/json-iterator/go v1.1.12",
		"github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.2",
	}
	for _, m := range []string{"api", "apimachinery", "apiserver", "client-go", "code-generator", "component-base"} {
		replaces = append(replaces, fmt.Sprintf("k8s.io/%s => k8s.io/%s %s", m, m, version))
	}
	gomod := "module steadywatch.invalid/sample-apiserver-build\n\ngo 1.26\n\nrequire k8s.io/sample-apiserver " + version +
		"\n\nreplace (\n\t" + strings.Join(replaces, "\n\t") + "\n)\n"
	files := map[string]string{
		"go.mod":   gomod,
		"tools.go": "//go:build tools\n\npackage tools\n\nimport _ \"k8s.io/sample-apiserver\"\n",
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(r.srcDir, f), []byte(content), 0o644); err != nil {
			return "", &BuildError{Version: name, Step: "prepare", Err: err}
		}
	}
	tmp := filepath.Join(filepath.Dir(final), fmt.Sprintf(".sample-apiserver.tmp-%d", os.Getpid()))
	defer os.Remove(tmp)
	if _, err := r.goCmd(ctx, "go build sample-apiserver", r.srcDir, false, "build", "-mod=mod", "-o", tmp, "k8s.io/sample-apiserver"); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", &BuildError{Version: name, Step: "install", Err: err}
	}
	r.logf("done: %s", final)
	return final, nil
}
