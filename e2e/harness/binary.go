package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// defaultVersion is the kube-apiserver version used when Options.Version is
// empty. TEMPORARY: equals build.Current until package build compiles.
const defaultVersion = "v1.36.3"

// binaryWaitPoll is how often ensureBinary looks for the binary.
const binaryWaitPoll = 2 * time.Second

// ensureBinary returns the kube-apiserver binary for version.
//
// TEMPORARY until package build lands: it waits (until ctx is done) for
// <e2e>/.cache/bin/<version>/kube-apiserver, which package build produces,
// and never builds anything itself.
func ensureBinary(ctx context.Context, version string, progress io.Writer) (string, error) {
	path := filepath.Join(cacheDir(), "bin", version, "kube-apiserver")
	tick := time.NewTicker(binaryWaitPoll)
	defer tick.Stop()
	start := time.Now()
	lastSaid := time.Time{}
	for {
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return path, nil
		}
		if time.Since(lastSaid) > 30*time.Second {
			fmt.Fprintf(progress, "harness: waiting for %s (built by package build) for %s\n", path, time.Since(start).Round(time.Second))
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w: %s: %v", ErrBinary, path, ctx.Err())
		case <-tick.C:
		}
	}
}

func cacheDir() string {
	if d := os.Getenv("STEADYWATCH_CACHE_DIR"); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	if ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(filepath.Dir(file)), ".cache")
	}
	return filepath.Join(os.TempDir(), "steadywatch")
}
