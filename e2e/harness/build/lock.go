package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const (
	// lockPoll is how often a waiting caller retries the build lock.
	lockPoll = 250 * time.Millisecond
	// maxLockWait bounds the wait for another builder even when ctx has no
	// deadline: a cold build takes minutes, never this long.
	maxLockWait = 30 * time.Minute
)

// errLockTimeout is returned when the build lock stays held for maxLockWait.
var errLockTimeout = errors.New("build lock held too long by another process")

// fileLock is an exclusive advisory lock on a file (flock(2)). The lock is
// tied to the open file, so it is released when the holder exits, however
// it exits; and two opens conflict even within one process, so it also
// serialises goroutines.
type fileLock struct{ f *os.File }

// acquireLock takes the lock at path, creating the file if needed. If the
// lock is held, onWait is called once and the lock is retried every lockPoll
// until it is free, ctx is done, or maxLockWait has passed.
func acquireLock(ctx context.Context, path string, onWait func()) (*fileLock, error) {
	return acquireLockWithin(ctx, path, onWait, maxLockWait)
}

func acquireLockWithin(ctx context.Context, path string, onWait func(), maxWait time.Duration) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for waited := false; ; {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return &fileLock{f: f}, nil
		}
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-deadline.C:
			f.Close()
			return nil, fmt.Errorf("%w (%s, waited %s)", errLockTimeout, path, maxWait)
		case <-tick.C:
		}
	}
}

// release unlocks and closes the lock file. The file itself stays: removing
// it would let a waiter lock a file that a newcomer no longer sees.
func (l *fileLock) release() {
	_ = unlock(l.f)
	_ = l.f.Close()
}
