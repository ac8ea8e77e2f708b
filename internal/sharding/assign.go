package sharding

import (
	"cmp"
	"slices"
)

// DefaultSlices is how many equal slices of the hash space Assign hands out:
// enough that 2 to 8 members each get within a few percent of an equal share.
const DefaultSlices = 64

// Slice is the i-th of n equal slices of the hash space (the last one ends
// at 2^64).
func Slice(i, n int) Range {
	step := ^uint64(0)/uint64(n) + 1
	r := Range{Start: uint64(i) * step}
	if i+1 < n {
		r.End = uint64(i+1) * step
	}
	return r
}

// Assign maps each of n slices of the hash space to one of members, so that
// every replica that sees the same members computes the same map: rendezvous
// (highest random weight) hashing with bounded load. Each slice goes to the
// member that ranks it highest among those with room, and no member gets
// more than ceil(n/len(members)) slices, so shares differ by at most one
// slice. When a member joins or leaves, most slices keep their owner.
// Duplicate and empty member names are ignored. The result lists every
// member (possibly with no slices) with its slices in ascending order.
func Assign(members []string, n int) map[string][]int {
	ms := slices.Clone(members)
	ms = slices.DeleteFunc(ms, func(m string) bool { return m == "" })
	slices.Sort(ms)
	ms = slices.Compact(ms)
	out := make(map[string][]int, len(ms))
	if len(ms) == 0 || n <= 0 {
		return out
	}
	for _, m := range ms {
		out[m] = nil
	}
	capacity := (n + len(ms) - 1) / len(ms)
	type pref struct {
		slice  int
		member string
		w      uint64
	}
	// Every (slice, member) pair by weight, highest first: a slice goes to
	// the first member in this order that still has room.
	prefs := make([]pref, 0, n*len(ms))
	for s := range n {
		for _, m := range ms {
			prefs = append(prefs, pref{s, m, weight(m, s)})
		}
	}
	slices.SortFunc(prefs, func(a, b pref) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		if c := cmp.Compare(a.slice, b.slice); c != 0 {
			return c
		}
		return cmp.Compare(a.member, b.member)
	})
	taken := make([]bool, n)
	for _, p := range prefs {
		if taken[p.slice] || len(out[p.member]) >= capacity {
			continue
		}
		taken[p.slice] = true
		out[p.member] = append(out[p.member], p.slice)
	}
	for _, m := range ms {
		slices.Sort(out[m])
	}
	return out
}

// weight is member m's rendezvous weight for slice s.
func weight(m string, s int) uint64 {
	return mix(Hash(m) ^ mix(uint64(s)+0x9e3779b97f4a7c15))
}

// mix is SplitMix64's finalizer: it spreads FNV-1a's close values over the
// whole space.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// SelectorOf is the Selector of the given slices of n over field, with
// adjacent slices merged into one range: what a member sends for the slices
// Assign gave it. No slices: the Selector that selects nothing (Field and
// no Ranges; no shardSelector can say it), and ok is false.
func SelectorOf(field string, owned []int, n int) (s Selector, ok bool) {
	if len(owned) == 0 {
		return Selector{Field: field}, false
	}
	sorted := slices.Clone(owned)
	slices.Sort(sorted)
	s.Field = field
	for _, i := range slices.Compact(sorted) {
		r := Slice(i, n)
		if last := len(s.Ranges) - 1; last >= 0 && s.Ranges[last].End == r.Start && s.Ranges[last].End != 0 {
			s.Ranges[last].End = r.End
			continue
		}
		s.Ranges = append(s.Ranges, r)
	}
	return s, true
}
