// Package build produces real kube-apiserver binaries for steadywatch's e2e
// suite, from nothing but the Go module proxy.
//
// Ensure returns the path of a kube-apiserver for a release such as
// "v1.37.2", building it on first use into a per-version cache directory
// (see CacheDir). A build generates a small wrapper module that requires
// k8s.io/kubernetes at that release and points every staging module
// (k8s.io/api, k8s.io/apiserver, ...) at its published v0.Y.Z twin, then runs
// `go build` with the version stamped into the binary so that /version
// reports the real release. Older releases need extra steps; each range of
// versions has its own documented recipe (see recipe.go).
//
// The package is for the e2e harness only: it lives in the e2e module so that
// the SDK's own go.mod never requires k8s.io/kubernetes. It does not start
// servers or etcd (that is the harness's job) and it is not a general
// Kubernetes build system: it builds one command, kube-apiserver, for linux.
package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

const (
	// Current is the newest Kubernetes release the suite runs against (and
	// the one client-go v0.37.2 pairs with). Choosing another release is
	// this one line.
	Current = "v1.37.2"
	// Previous is the minor before Current, kept buildable and runnable
	// (`go run ./cmd/build-apiservers `+Previous) for suites and matrix runs
	// that compare the two.
	Previous = "v1.36.3"
	// Legacy is the last minor before resourceVersionMatch (KEP-2523, 1.19).
	Legacy = "v1.18.19"
	// Floor is the oldest release the harness builds and runs (not built
	// by `make test`; the legacy recipe, verified).
	Floor = "v1.16.15"
	// Floor17 is the 1.17 release kept beside Floor: 1.17.0-1.18.5 answer a
	// too-large resourceVersion without the ResourceVersionTooLarge cause
	// type (kubernetes/kubernetes#92537), and so does 1.16.
	Floor17 = "v1.17.17"
)

// ErrInvalidVersion is returned (wrapped) by Ensure when the version is not a
// canonical Kubernetes release version ("v1.Y.Z") or is older than any recipe
// supports.
var ErrInvalidVersion = errors.New("invalid or unsupported kube-apiserver version")

// BuildError reports a failed build step. Output holds the tail of the failing
// command's combined output; Log names the file holding all of it.
type BuildError struct {
	Version string // the release being built, e.g. "v1.36.3"
	Step    string // the step that failed, e.g. "go build kube-apiserver"
	Output  string // last lines of the command's output (may be empty)
	Log     string // full build log on disk (may be empty)
	Err     error  // the underlying error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "build kube-apiserver %s: %s: %v", e.Version, e.Step, e.Err)
	if e.Log != "" {
		fmt.Fprintf(&b, " (full log: %s)", e.Log)
	}
	if e.Output != "" {
		b.WriteString("\n--- output tail ---\n")
		b.WriteString(e.Output)
	}
	return b.String()
}

func (e *BuildError) Unwrap() error { return e.Err }

// CacheDir is $STEADYWATCH_CACHE_DIR if set, else <repo>/e2e/.cache, where
// <repo> is found from this source file's location; if that is unavailable
// (a binary built with -trimpath, or the sources moved), it falls back to
// os.UserCacheDir()/steadywatch, and finally to os.TempDir()/steadywatch.
func CacheDir() string {
	if d := os.Getenv("STEADYWATCH_CACHE_DIR"); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	return cacheDirFrom(file, ok)
}

// cacheDirFrom derives the cache directory from this file's path
// (<repo>/e2e/harness/build/build.go -> <repo>/e2e/.cache).
func cacheDirFrom(file string, ok bool) string {
	if ok && filepath.IsAbs(file) {
		e2e := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if _, err := os.Stat(filepath.Join(e2e, "go.mod")); err == nil {
			return filepath.Join(e2e, ".cache")
		}
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "steadywatch")
	}
	return filepath.Join(os.TempDir(), "steadywatch")
}

// BinaryPath is where Ensure puts the binary for version under cacheDir:
// <cacheDir>/bin/<version>/kube-apiserver.
func BinaryPath(cacheDir, version string) string {
	return filepath.Join(cacheDir, "bin", version, "kube-apiserver")
}

// Ensure returns the path of a kube-apiserver binary for version (e.g.
// "v1.36.3"), building it if missing: <CacheDir>/bin/<version>/kube-apiserver.
//
// Progress lines (which step, elapsed time) go to progress; nil discards them.
// Ensure is safe to call from several goroutines and processes at once: a
// file lock per version lets one caller build while the others wait (until
// ctx is done) and then reuse its result. The binary is built under a
// temporary name, checked with --version and only then renamed into place, so
// a partial binary never appears at the final path.
//
// Errors: ErrInvalidVersion (wrapped) for a bad version; *BuildError with the
// failing step and the tail of go's output when a step fails; ctx's error if
// ctx ends while waiting for another builder.
func Ensure(ctx context.Context, version string, progress io.Writer) (string, error) {
	return ensure(ctx, CacheDir(), version, progress, buildInto)
}

// buildFunc builds a kube-apiserver for r.version at the path out.
type buildFunc func(ctx context.Context, r *run, out string) error

func ensure(ctx context.Context, cacheDir, version string, progress io.Writer, build buildFunc) (string, error) {
	if _, err := recipeFor(version); err != nil {
		return "", err
	}
	final := BinaryPath(cacheDir, version)
	if isFile(final) {
		return final, nil
	}
	r := newRun(cacheDir, version, progress)
	r.logf("kube-apiserver %s not in cache; building into %s", version, final)

	lock, err := acquireLock(ctx, filepath.Join(cacheDir, "locks", version+".lock"), func() {
		r.logf("another process is building %s; waiting for it", version)
	})
	if err != nil {
		return "", fmt.Errorf("build kube-apiserver %s: waiting for build lock: %w", version, err)
	}
	defer lock.release()

	if isFile(final) { // built by whoever held the lock before us
		r.logf("%s was built by another process; reusing it", version)
		return final, nil
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &BuildError{Version: version, Step: "prepare", Err: err}
	}
	// We hold the lock, so any temporary binary left here is from a build
	// that died; remove it rather than let it accumulate (they are ~150 MB).
	if stale, _ := filepath.Glob(filepath.Join(dir, ".kube-apiserver.tmp-*")); len(stale) > 0 {
		for _, s := range stale {
			_ = os.Remove(s)
		}
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".kube-apiserver.tmp-%d", os.Getpid()))
	defer os.Remove(tmp) // no-op after a successful rename

	if err := build(ctx, r, tmp); err != nil {
		return "", err
	}
	if err := r.step(ctx, "verify --version", func() error { return verifyVersion(ctx, tmp, version) }); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", &BuildError{Version: version, Step: "install", Err: err}
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", &BuildError{Version: version, Step: "install", Err: err}
	}
	r.logf("done: %s", final)
	return final, nil
}

// verifyVersion runs bin --version and checks that it reports version.
func verifyVersion(ctx context.Context, bin, version string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w: %s", filepath.Base(bin), err, bytes.TrimSpace(out))
	}
	got := strings.TrimSpace(string(out))
	if want := "Kubernetes " + version; got != want {
		return fmt.Errorf("--version printed %q, want %q (version not stamped?)", got, want)
	}
	return nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// versionParts splits a canonical release version "v1.36.3" into its major
// and minor numbers ("1", "36"). ok is false for anything else.
func versionParts(version string) (major, minor string, ok bool) {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return "", "", false
	}
	core := strings.TrimPrefix(version, "v")
	core, _, _ = strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// stagingVersion is the version the staging modules (k8s.io/api, ...) are
// published at for a Kubernetes release: v1.Y.Z -> v0.Y.Z.
func stagingVersion(version string) (string, error) {
	major, _, ok := versionParts(version)
	if !ok || major != "1" {
		return "", fmt.Errorf("%w: %q (want a release such as %q)", ErrInvalidVersion, version, Current)
	}
	return "v0" + strings.TrimPrefix(version, "v1"), nil
}
