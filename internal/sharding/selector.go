package sharding

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The object fields a shardSelector may hash (KEP-5866; the apiserver
// rejects any other).
const (
	FieldUID       = "object.metadata.uid"
	FieldNamespace = "object.metadata.namespace"
)

// Range is a half-open range [Start, End) of the 64-bit hash space. End 0
// stands for 2^64 (the end of the space), so the whole space is
// Range{0, 0}.
type Range struct {
	Start, End uint64
}

// Contains reports whether h is in r.
func (r Range) Contains(h uint64) bool {
	return h >= r.Start && (r.End == 0 || h < r.End)
}

// String is r in the wire form of shardRange's bounds.
func (r Range) String() string {
	return "['" + hexBound(r.Start, false) + "', '" + hexBound(r.End, true) + "')"
}

// hexBound spells a bound as the apiserver requires: 0x and 16 lowercase hex
// digits; an end of 0 is 2^64, "0x10000000000000000".
func hexBound(v uint64, end bool) string {
	if end && v == 0 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", v)
}

// Selector is a parsed shardSelector: the objects whose hashed Field falls
// in any of Ranges. The zero Selector selects everything and is never sent;
// a Selector with a Field and no Ranges selects nothing (a member with no
// slices), which no shardSelector can say: it is filtered on the client.
type Selector struct {
	Field  string
	Ranges []Range
}

// Equal reports whether s and o select the same ranges of the same field
// (the Selector that selects nothing differs from the one that selects
// everything, though neither sends a parameter).
func (s Selector) Equal(o Selector) bool {
	return s.Field == o.Field && slices.Equal(s.Ranges, o.Ranges)
}

// Empty reports whether s selects everything without a parameter (the zero
// Selector).
func (s Selector) Empty() bool { return s.Field == "" && len(s.Ranges) == 0 }

// String is s in the wire form the apiserver parses and echoes in
// ListMeta.shardInfo.selector; "" for the empty Selector.
func (s Selector) String() string {
	parts := make([]string, len(s.Ranges))
	for i, r := range s.Ranges {
		parts[i] = fmt.Sprintf("shardRange(%s, '%s', '%s')", s.Field, hexBound(r.Start, false), hexBound(r.End, true))
	}
	return strings.Join(parts, " || ")
}

// Hash is the FNV-1a 64-bit hash of a field value, the hash KEP-5866 ranges
// are over (k8s.io/apimachinery/pkg/sharding.HashField spells it in hex).
// It allocates nothing: it runs on every watch event.
func Hash(value string) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211 // hash/fnv
	h := uint64(offset64)
	for i := 0; i < len(value); i++ {
		h ^= uint64(value[i])
		h *= prime64
	}
	return h
}

// MatchesHash reports whether a hash falls in s (every hash, for the empty
// Selector).
func (s Selector) MatchesHash(h uint64) bool {
	if s.Empty() {
		return true
	}
	for _, r := range s.Ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// Matches reports whether obj is selected by s: the same decision an
// apiserver that applies the shardSelector makes.
func (s Selector) Matches(obj runtime.Object) (bool, error) {
	if s.Empty() {
		return true, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("shard: %w", err)
	}
	return s.MatchesMeta(m)
}

// MatchesMeta is Matches for an object's metadata.
func (s Selector) MatchesMeta(m metav1.Object) (bool, error) {
	if s.Empty() {
		return true, nil
	}
	var v string
	switch s.Field {
	case FieldUID:
		v = string(m.GetUID())
	case FieldNamespace:
		v = m.GetNamespace()
	default:
		return false, &SelectorError{Selector: s.String(), Detail: "unsupported field " + strconv.Quote(s.Field)}
	}
	return s.MatchesHash(Hash(v)), nil
}

// ErrInvalidSelector matches every *SelectorError (errors.Is).
var ErrInvalidSelector = errors.New("invalid shard selector")

// SelectorError is a shardSelector that is not in the form KEP-5866
// defines; Parse returns it before any request is sent.
type SelectorError struct {
	Selector string
	Detail   string
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("shard: invalid shardSelector %q: %s (KEP-5866 form: shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || ...)", e.Selector, e.Detail)
}

// Is makes errors.Is(err, ErrInvalidSelector) true.
func (e *SelectorError) Is(target error) bool { return target == ErrInvalidSelector }

// Parse validates and parses a shardSelector with the apiserver's rules
// (k8s.io/apiserver/pkg/sharding.Parse): one or more
// shardRange(<field>, '<start>', '<end>') joined by ||, every one over the
// same field (object.metadata.uid or object.metadata.namespace), bounds 0x
// and exactly 16 lowercase hex digits (the end may be 0x10000000000000000,
// 2^64), start < end. "" is the empty Selector.
func Parse(expr string) (Selector, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return Selector{}, nil
	}
	fail := func(format string, args ...any) (Selector, error) {
		return Selector{}, &SelectorError{Selector: expr, Detail: fmt.Sprintf(format, args...)}
	}
	var s Selector
	for i, term := range strings.Split(expr, "||") {
		term = strings.TrimSpace(term)
		args, ok := strings.CutPrefix(term, "shardRange(")
		if !ok || !strings.HasSuffix(args, ")") {
			return fail("term %d (%q) is not shardRange(field, 'start', 'end')", i+1, term)
		}
		parts := strings.Split(strings.TrimSuffix(args, ")"), ",")
		if len(parts) != 3 {
			return fail("shardRange() takes 3 arguments, term %d has %d", i+1, len(parts))
		}
		field := strings.TrimSpace(parts[0])
		if field != FieldUID && field != FieldNamespace {
			return fail("unsupported field %q; supported: %s, %s", field, FieldUID, FieldNamespace)
		}
		if s.Field != "" && field != s.Field {
			return fail("all shard ranges must hash the same field, got %q and %q", s.Field, field)
		}
		s.Field = field
		start, err := parseBound(parts[1], false)
		if err != nil {
			return fail("start of term %d: %v", i+1, err)
		}
		end, err := parseBound(parts[2], true)
		if err != nil {
			return fail("end of term %d: %v", i+1, err)
		}
		if end != 0 && start >= end {
			return fail("start %s must be less than end %s", hexBound(start, false), hexBound(end, true))
		}
		s.Ranges = append(s.Ranges, Range{Start: start, End: end})
	}
	return s, nil
}

// parseBound reads '0x' and 16 lowercase hex digits in single quotes; an end
// may be '0x10000000000000000' (returned as 0).
func parseBound(raw string, end bool) (uint64, error) {
	raw = strings.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '\'' || raw[len(raw)-1] != '\'' {
		return 0, fmt.Errorf("%s is not a single-quoted string", raw)
	}
	v := raw[1 : len(raw)-1]
	hex, ok := strings.CutPrefix(v, "0x")
	if !ok {
		return 0, fmt.Errorf("%q lacks the 0x prefix", v)
	}
	if end && v == "0x10000000000000000" {
		return 0, nil
	}
	if len(hex) != 16 {
		return 0, fmt.Errorf("%q must have exactly 16 hex digits", v)
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, fmt.Errorf("%q: %q is not a lowercase hex digit", v, c)
		}
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	if err == nil && end && n == 0 {
		// Range.End 0 stands for 2^64; an end of 0 is an empty range.
		return 0, fmt.Errorf("end %q is not greater than any start", v)
	}
	return n, err
}
