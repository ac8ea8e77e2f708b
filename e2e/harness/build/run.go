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
	"strings"
	"sync"
	"time"
)

// heartbeat is how often a long step reports that it is still running.
const heartbeat = 30 * time.Second

// run is one build of one version: where its files go, and its progress
// output. Its methods are safe for concurrent use.
type run struct {
	cacheDir string
	version  string
	srcDir   string // <cacheDir>/src/<version>: the wrapper module
	logPath  string // <srcDir>/build.log: every command's full output

	start time.Time
	mu    sync.Mutex
	out   io.Writer
}

func newRun(cacheDir, version string, progress io.Writer) *run {
	if progress == nil {
		progress = io.Discard
	}
	src := filepath.Join(cacheDir, "src", version)
	return &run{
		cacheDir: cacheDir,
		version:  version,
		srcDir:   src,
		logPath:  filepath.Join(src, "build.log"),
		start:    time.Now(),
		out:      progress,
	}
}

// logf writes one progress line: "[v1.37.2 +12.3s] message".
func (r *run) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "[%s +%.1fs] %s\n", r.version, time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// step runs fn as the named step, reporting its start, a heartbeat while it
// runs, and its duration. An error that is not already a *BuildError is
// wrapped in one naming the step.
func (r *run) step(ctx context.Context, name string, fn func() error) error {
	r.logf("step: %s", name)
	began := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				r.logf("  ... %s still running (%.0fs)", name, time.Since(began).Seconds())
			}
		}
	}()
	err := fn()
	close(done)
	wg.Wait()
	if err != nil {
		r.logf("step failed: %s after %.1fs", name, time.Since(began).Seconds())
		var be *BuildError
		if errors.As(err, &be) {
			return err
		}
		return &BuildError{Version: r.version, Step: name, Err: err}
	}
	r.logf("step done: %s in %.1fs", name, time.Since(began).Seconds())
	return nil
}

// goCmd runs the go command in dir. Combined output goes to the build log.
// When wantStdout is set, stdout is returned (also with an error) and only
// stderr counts as output. On failure it returns a *BuildError carrying the
// output's tail.
func (r *run) goCmd(ctx context.Context, step, dir string, wantStdout bool, args ...string) ([]byte, error) {
	return r.command(ctx, step, dir, nil, wantStdout, "go", args...)
}

func (r *run) command(ctx context.Context, step, dir string, env []string, wantStdout bool, name string, args ...string) ([]byte, error) {
	if err := os.MkdirAll(r.srcDir, 0o755); err != nil {
		return nil, &BuildError{Version: r.version, Step: step, Err: err}
	}
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, &BuildError{Version: r.version, Step: step, Err: err}
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s: (cd %s && %s %s)\n", time.Now().UTC().Format(time.RFC3339), dir, name, strings.Join(args, " "))

	tail := &tailBuffer{max: 8 << 10}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(goEnv(os.Environ()), env...)
	cmd.Stderr = io.MultiWriter(logf, tail)
	if wantStdout {
		cmd.Stdout = io.MultiWriter(logf, &stdout)
	} else {
		cmd.Stdout = io.MultiWriter(logf, tail)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return stdout.Bytes(), &BuildError{Version: r.version, Step: step, Output: tail.String(), Log: r.logPath, Err: err}
	}
	return stdout.Bytes(), nil
}

// goEnv is the environment for go commands: the caller's, with workspaces
// off (a go.work above the cache must not capture the wrapper module),
// module mode on, and cgo off (as Kubernetes' own release builds of
// kube-apiserver: a static binary, and fewer C compilations).
func goEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK", "GO111MODULE", "CGO_ENABLED", "GOOS", "GOARCH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOWORK=off", "GO111MODULE=on", "CGO_ENABLED=0")
}

// tailBuffer keeps the last max bytes written to it, cut at a line start.
type tailBuffer struct {
	max int
	mu  sync.Mutex // stdout and stderr are copied by separate goroutines
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) >= t.max {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimRight(string(b), "\n")
}
