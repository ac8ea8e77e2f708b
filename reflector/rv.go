package reflector

import (
	"errors"
	"fmt"

	"github.com/steadywatch/steadywatch/internal/vocab"
)

// isOlder reports whether rv is known to be older than ref (both parse as
// uint64 and rv < ref); incomparable resourceVersions are never "older".
func isOlder(rv, ref string) bool {
	return vocab.CompareRV(rv, ref) == vocab.Older
}

// ErrStaleList is matched (errors.Is) by a *StaleListError.
var ErrStaleList = errors.New("list served at a resourceVersion older than required")

// StaleListError says a list was served older than what the reflector's store
// already reflects (or older than the NotOlderThan it asked for). The
// reflector never replaces its store with such a list: that would take
// consumers back in time (for example a lagging apiserver in an HA pair).
type StaleListError struct {
	// Required is the resourceVersion the list had to be at least at.
	Required string
	// Served is the list's ListMeta.resourceVersion.
	Served string
}

func (e *StaleListError) Error() string {
	return fmt.Sprintf("list served at resourceVersion %s, older than required %s", e.Served, e.Required)
}

// Is makes errors.Is(err, ErrStaleList) true.
func (e *StaleListError) Is(target error) bool { return target == ErrStaleList }

// ErrNotExact is matched (errors.Is) by a *NotExactError.
var ErrNotExact = errors.New("exact list not served at the requested resourceVersion")

// NotExactError says an Exact list came back at another resourceVersion (a
// server that ignores resourceVersionMatch, KEP-2523's backward-compatibility
// case). The consistency checker reports it as an error, never as a mismatch.
type NotExactError struct {
	Requested, Served string
}

func (e *NotExactError) Error() string {
	return fmt.Sprintf("exact list at resourceVersion %s served at %s", e.Requested, e.Served)
}

// Is makes errors.Is(err, ErrNotExact) true.
func (e *NotExactError) Is(target error) bool { return target == ErrNotExact }
