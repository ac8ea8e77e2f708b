package harness

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsupportedVersion: Options.Version is not a kube-apiserver version
	// the harness knows how to start (v1.16 and newer).
	ErrUnsupportedVersion = errors.New("harness: unsupported kube-apiserver version")
	// ErrInvalidOptions: Options are contradictory or out of range (for
	// example a DisableWatchCacheOn index the cluster has no apiserver for);
	// Start returns it before starting anything.
	ErrInvalidOptions = errors.New("harness: invalid options")
	// ErrNotReady: a component did not become ready within its bound.
	ErrNotReady = errors.New("harness: component did not become ready")
	// ErrExited: a process exited while the harness expected it to run.
	ErrExited = errors.New("harness: process exited")
	// ErrStopped: the cluster (or component) has been stopped.
	ErrStopped = errors.New("harness: stopped")
	// ErrBinary: the kube-apiserver binary could not be obtained.
	ErrBinary = errors.New("harness: kube-apiserver binary unavailable")
)

// ComponentError says which component failed doing what, with the tail of
// its log so a failed start explains itself. Unwrap returns the cause, so
// errors.Is(err, ErrNotReady) / errors.Is(err, ErrExited) work through it.
// The log tail never contains the admin token: the apiserver only logs the
// token file's path.
type ComponentError struct {
	Component string // "etcd", "apiserver-0", ...
	Op        string // "start", "stop", "ready", ...
	LogPath   string // where the full log is, if any
	LogTail   string // last lines of that log, if any
	Err       error
}

func (e *ComponentError) Error() string {
	s := fmt.Sprintf("harness: %s %s: %v", e.Component, e.Op, e.Err)
	if e.LogPath != "" {
		s += fmt.Sprintf(" (log: %s)", e.LogPath)
	}
	if e.LogTail != "" {
		s += "\n--- log tail ---\n" + e.LogTail
	}
	return s
}

func (e *ComponentError) Unwrap() error { return e.Err }
