package build

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCacheDirEnvOverride(t *testing.T) {
	d := t.TempDir()
	t.Setenv("STEADYWATCH_CACHE_DIR", d)
	if got := CacheDir(); got != d {
		t.Errorf("CacheDir() = %q, want %q", got, d)
	}
}

func TestCacheDirFromSourceLocation(t *testing.T) {
	t.Setenv("STEADYWATCH_CACHE_DIR", "")
	got := CacheDir()
	_, file, _, _ := runtime.Caller(0) // this test file sits next to build.go
	want := filepath.Join(filepath.Dir(file), "..", "..", ".cache")
	if filepath.Clean(got) != filepath.Clean(want) {
		t.Errorf("CacheDir() = %q, want %q", got, filepath.Clean(want))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(got), "go.mod")); err != nil {
		t.Errorf("CacheDir() %q is not next to the e2e go.mod: %v", got, err)
	}
}

func TestCacheDirFrom(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "e2e", "harness", "build", "build.go")
	user, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache dir: %v", err)
	}
	fallback := filepath.Join(user, "steadywatch")

	// No e2e/go.mod beside the file: the sources moved; fall back.
	if got := cacheDirFrom(src, true); got != fallback {
		t.Errorf("without go.mod: %q, want %q", got, fallback)
	}
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "e2e", "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := cacheDirFrom(src, true), filepath.Join(root, "e2e", ".cache"); got != want {
		t.Errorf("with go.mod: %q, want %q", got, want)
	}
	if got := cacheDirFrom(src, false); got != fallback {
		t.Errorf("runtime.Caller failed: %q, want %q", got, fallback)
	}
	if got := cacheDirFrom("e2e/harness/build/build.go", true); got != fallback {
		t.Errorf("-trimpath (relative) file: %q, want %q", got, fallback)
	}
}

func TestBinaryPath(t *testing.T) {
	if got, want := BinaryPath("/c", "v1.36.3"), filepath.FromSlash("/c/bin/v1.36.3/kube-apiserver"); got != want {
		t.Errorf("BinaryPath = %q, want %q", got, want)
	}
}

// fakeBuild returns a buildFunc that writes a shell script printing
// "Kubernetes <printed>" (what a stamped kube-apiserver --version prints) and
// counts its calls. gate, if not nil, is waited on before writing.
func fakeBuild(printed string, calls *atomic.Int32, gate <-chan struct{}) buildFunc {
	return func(ctx context.Context, r *run, out string) error {
		calls.Add(1)
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		script := fmt.Sprintf("#!/bin/sh\necho Kubernetes %s\n", printed)
		return os.WriteFile(out, []byte(script), 0o755)
	}
}

func TestEnsureBuildsOnceAndReuses(t *testing.T) {
	cache := t.TempDir()
	var calls atomic.Int32
	var progress bytes.Buffer
	build := fakeBuild("v1.36.3", &calls, nil)

	p, err := ensure(t.Context(), cache, "v1.36.3", &progress, build)
	if err != nil {
		t.Fatal(err)
	}
	if p != BinaryPath(cache, "v1.36.3") || !isFile(p) {
		t.Fatalf("path %q missing or wrong", p)
	}
	for _, want := range []string{"step: verify --version", "step done: verify --version", "done: " + p} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	if _, err := ensure(t.Context(), cache, "v1.36.3", nil, build); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("build ran %d times, want 1 (second call must reuse the binary)", n)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".kube-apiserver.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestEnsureConcurrentCallersShareOneBuild(t *testing.T) {
	cache := t.TempDir()
	var calls atomic.Int32
	gate := make(chan struct{})
	build := fakeBuild("v1.18.19", &calls, gate)

	const n = 4
	var wg sync.WaitGroup
	paths := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = ensure(t.Context(), cache, "v1.18.19", nil, build)
		}()
	}
	// Let the builder finish only once it is provably building (holding the lock).
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // poll with a deadline
	}
	close(gate)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || paths[i] != BinaryPath(cache, "v1.18.19") {
			t.Errorf("caller %d: %q, %v", i, paths[i], errs[i])
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("build ran %d times for %d concurrent callers, want 1", got, n)
	}
}

func TestEnsureFailedBuildLeavesNothing(t *testing.T) {
	cache := t.TempDir()
	boom := errors.New("boom")
	build := func(ctx context.Context, r *run, out string) error {
		if err := os.WriteFile(out, []byte("partial"), 0o755); err != nil {
			t.Fatal(err)
		}
		return &BuildError{Version: r.version, Step: "go build kube-apiserver", Output: "x.go:1: oops", Err: boom}
	}
	_, err := ensure(t.Context(), cache, "v1.36.3", nil, build)
	var be *BuildError
	if !errors.As(err, &be) || be.Step != "go build kube-apiserver" || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want *BuildError{Step: go build kube-apiserver} wrapping boom", err)
	}
	if !strings.Contains(err.Error(), "x.go:1: oops") {
		t.Errorf("error lacks the output tail: %v", err)
	}
	assertNoBinary(t, cache, "v1.36.3")
}

func TestEnsureRejectsWrongVersionStamp(t *testing.T) {
	cache := t.TempDir()
	var calls atomic.Int32
	_, err := ensure(t.Context(), cache, "v1.36.3", nil, fakeBuild("v0.0.0-master+$Format:%H$", &calls, nil))
	var be *BuildError
	if !errors.As(err, &be) || be.Step != "verify --version" {
		t.Fatalf("err = %v, want *BuildError{Step: verify --version}", err)
	}
	if !strings.Contains(err.Error(), "v0.0.0-master") {
		t.Errorf("error does not say what was printed: %v", err)
	}
	assertNoBinary(t, cache, "v1.36.3")
}

func TestEnsureRemovesStaleTemporaries(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Dir(BinaryPath(cache, "v1.36.3"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".kube-apiserver.tmp-999999")
	if err := os.WriteFile(stale, []byte("partial"), 0o755); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	if _, err := ensure(t.Context(), cache, "v1.36.3", nil, fakeBuild("v1.36.3", &calls, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary %s still there (%v)", stale, err)
	}
}

func TestEnsureInvalidVersion(t *testing.T) {
	var calls atomic.Int32
	for _, v := range []string{"1.36.3", "v1.15.12", "latest"} {
		if _, err := ensure(t.Context(), t.TempDir(), v, nil, fakeBuild(v, &calls, nil)); !errors.Is(err, ErrInvalidVersion) {
			t.Errorf("ensure(%q) err = %v, want ErrInvalidVersion", v, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("build ran for an invalid version")
	}
}

func TestEnsureWaiterHonoursContext(t *testing.T) {
	cache := t.TempDir()
	lock, err := acquireLock(t.Context(), filepath.Join(cache, "locks", "v1.36.3.lock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.release()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var calls atomic.Int32
	var progress bytes.Buffer
	_, err = ensure(ctx, cache, "v1.36.3", &progress, fakeBuild("v1.36.3", &calls, nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if calls.Load() != 0 {
		t.Errorf("built while another holder had the lock")
	}
	if !strings.Contains(progress.String(), "another process is building") {
		t.Errorf("waiting was not reported:\n%s", progress.String())
	}
}

func assertNoBinary(t *testing.T, cache, version string) {
	t.Helper()
	final := BinaryPath(cache, version)
	if _, err := os.Stat(final); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a failed build (%v)", final, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(final), ".kube-apiserver.tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestLockExcludesAndReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	first, err := acquireLock(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{}, 1)
	got := make(chan error, 1)
	go func() {
		l, err := acquireLock(t.Context(), path, func() { waited <- struct{}{} })
		if err == nil {
			l.release()
		}
		got <- err
	}()
	select {
	case <-waited:
	case err := <-got:
		t.Fatalf("second holder got the lock while the first held it (err %v)", err)
	case <-time.After(10 * time.Second):
		t.Fatal("second holder neither waited nor returned")
	}
	first.release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("second holder after release: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second holder did not get the lock after release")
	}
}

func TestLockMaxWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := acquireLock(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	if _, err := acquireLockWithin(t.Context(), path, nil, 200*time.Millisecond); !errors.Is(err, errLockTimeout) {
		t.Errorf("err = %v, want errLockTimeout", err)
	}
}

// TestLockAcrossProcesses holds the lock in a child process (this test
// binary re-executed) and checks that the parent cannot take it until the
// child exits without unlocking: the kernel releases it.
func TestLockAcrossProcesses(t *testing.T) {
	if p := os.Getenv("STEADYWATCH_TEST_LOCK_HOLDER"); p != "" {
		l, err := acquireLock(context.Background(), p, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		_ = l
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // hold until the parent closes stdin
		os.Exit(0)                                        // exit without release
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "STEADYWATCH_TEST_LOCK_HOLDER="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("child: %q, %v", line, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if l, err := acquireLock(short, path, nil); err == nil {
		l.release()
		t.Fatal("took the lock while another process held it")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	l, err := acquireLock(ctx, path, nil)
	if err != nil {
		t.Fatalf("lock not free after the holder exited: %v", err)
	}
	l.release()
}

func TestTailBufferKeepsWholeLastLines(t *testing.T) {
	tb := &tailBuffer{max: 16}
	for i := range 10 {
		fmt.Fprintf(tb, "line %d\n", i)
	}
	if got := tb.String(); got != "line 8\nline 9" {
		t.Errorf("tail = %q", got)
	}
	small := &tailBuffer{max: 1 << 10}
	small.Write([]byte("a\nb\n"))
	if got := small.String(); got != "a\nb" {
		t.Errorf("short tail = %q", got)
	}
}
