package rvwait

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ErrIncomparable is matched (errors.Is) by an *IncomparableError.
var ErrIncomparable = errors.New("resourceVersions of this server are not comparable")

// IncomparableError says a wait cannot be decided because a resourceVersion
// is not comparable under KEP-5504.
type IncomparableError struct {
	// ResourceVersion is the first version that is not well formed.
	ResourceVersion string
	// Asked is true when it is the version asked for, false when the
	// server sent it.
	Asked bool
}

func (e *IncomparableError) Error() string {
	who := "the server sent"
	if e.Asked {
		who = "asked for"
	}
	return fmt.Sprintf("resourceVersion %q %s is not comparable (KEP-5504: a decimal integer without leading zeros)", e.ResourceVersion, who)
}

// Is makes errors.Is(err, ErrIncomparable) true.
func (e *IncomparableError) Is(target error) bool { return target == ErrIncomparable }

// Compare compares two resourceVersions as KEP-5504 defines it: -1 when a
// is older than b, 0 when equal, +1 when newer; an error when either is not
// well formed.
func Compare(a, b string) (int, error) {
	return resourceversion.CompareResourceVersion(a, b)
}

// Comparable reports whether rv is well formed under KEP-5504.
func Comparable(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// AtLeast reports whether have is rv or newer; false when either is not
// comparable.
func AtLeast(have, rv string) bool {
	c, err := Compare(have, rv)
	return err == nil && c >= 0
}

// Tracker holds the newest resourceVersion a store reflects. The zero value
// is not usable: create it with New. It is safe for concurrent use.
type Tracker struct {
	mu           sync.Mutex
	rv           string
	incomparable string
	// changed is closed on the next advance or Poke; it is made only when
	// a waiter asks for it, so that advances nobody waits for (every watch
	// event's) allocate nothing.
	changed chan struct{}
}

// New returns a Tracker that reflects nothing yet.
func New() *Tracker {
	return &Tracker{}
}

// Observe records that the store now reflects rv. An older or equal rv
// changes nothing; an empty one is ignored, and so is "0", which the API
// uses for "any version" and a real server never serves (an empty fake
// server's list may carry it). The first rv that is not well
// formed marks the server's versions as not comparable, for good. It
// reports whether the Tracker changed.
func (t *Tracker) Observe(rv string) bool {
	if rv == "" || rv == "0" {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.incomparable != "" {
		return false
	}
	newer := 1
	var err error
	if t.rv != "" { // t.rv is well formed: an error is rv's
		newer, err = Compare(rv, t.rv)
	} else if !Comparable(rv) {
		err = &IncomparableError{ResourceVersion: rv}
	}
	if err != nil {
		t.incomparable = rv
		t.wakeLocked()
		return true
	}
	if newer <= 0 {
		return false
	}
	t.rv = rv
	t.wakeLocked()
	return true
}

// Poke wakes the waiters without an advance, so that they check their
// condition again (a caller-side condition, such as "the object is gone",
// may have changed with a change that carries no newer resourceVersion).
func (t *Tracker) Poke() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wakeLocked()
}

func (t *Tracker) wakeLocked() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Current returns the newest resourceVersion observed ("" before the first)
// and, when the server's versions proved not comparable, an error matching
// ErrIncomparable.
func (t *Tracker) Current() (string, error) {
	rv, _, err := t.snapshot()
	return rv, err
}

// Changed returns a channel closed at the next Observe advance or Poke.
func (t *Tracker) Changed() <-chan struct{} {
	_, ch, _ := t.snapshot()
	return ch
}

func (t *Tracker) snapshot() (string, <-chan struct{}, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	if t.incomparable != "" {
		return t.rv, t.changed, &IncomparableError{ResourceVersion: t.incomparable}
	}
	return t.rv, t.changed, nil
}

// Wait returns nil once the store reflects rv or a newer version (at once
// when it already does, or when rv is ""). It returns an error matching
// ErrIncomparable at once when rv or a version the server sent is not
// comparable, and ctx's error (wrapped) when ctx ends first.
func (t *Tracker) Wait(ctx context.Context, rv string) error {
	if rv == "" {
		return nil
	}
	if !Comparable(rv) {
		return &IncomparableError{ResourceVersion: rv, Asked: true}
	}
	for {
		have, ch, err := t.snapshot()
		if err != nil {
			return err
		}
		if have != "" && AtLeast(have, rv) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the store to reflect resourceVersion %s (it reflects %q): %w", rv, have, context.Cause(ctx))
		}
	}
}
