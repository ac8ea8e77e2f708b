// Package storediff compares what a cache holds with what the apiserver
// holds, both as key -> resourceVersion maps: the keys one side lacks and
// the keys whose resourceVersions differ. The reflector's consistency check
// (reflector.Options.ConsistencyCheckInterval) and the e2e suites' checks of
// a cache against a fresh list both use it. It sends no request and
// decides nothing about what a difference means.
package storediff

import "slices"

// Diff is how got differs from want, as sorted keys.
type Diff struct {
	Missing []string // in want, not in got
	Extra   []string // in got, not in want
	Differ  []string // in both, with another value
}

// Empty reports whether got equals want.
func (d Diff) Empty() bool { return len(d.Missing)+len(d.Extra)+len(d.Differ) == 0 }

// Compare returns how got differs from want (key -> resourceVersion maps).
func Compare(want, got map[string]string) Diff {
	var d Diff
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			d.Missing = append(d.Missing, k)
		case g != v:
			d.Differ = append(d.Differ, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d.Extra = append(d.Extra, k)
		}
	}
	slices.Sort(d.Missing)
	slices.Sort(d.Extra)
	slices.Sort(d.Differ)
	return d
}
