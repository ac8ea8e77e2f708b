// Package storecheck compares what a cache holds with what the apiserver
// holds: the server's ConfigMaps read straight from it (Truth) and the keys
// in which a cache differs (Compare). The e2e programs (soak, cmd/demo) and
// suites share it; it needs no Ginkgo. How a difference is reported stays
// with the caller.
package storecheck

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Truth is a fresh MostRecent (consistent) list of the ConfigMaps in ns
// straight from the apiserver behind cs: name -> resourceVersion, and the
// list's resourceVersion.
func Truth(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	out := make(map[string]string, len(l.Items))
	for _, cm := range l.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out, l.ResourceVersion, nil
}

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
