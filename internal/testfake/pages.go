package testfake

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pages are pre-built list pages keyed by continue token ("" is the first),
// for benchmarks: handing one out costs next to nothing, so a benchmark
// measures the code under test, not a server (tests use steadywatchtest).
type Pages map[string]*corev1.ConfigMapList

// NewPages builds n pages of perPage ConfigMaps (cm-<page>-<i> in namespace
// ns) at resourceVersion "100", chained by the continue tokens "c1", "c2",
// … with remainingItemCount set; fill, when set, completes each item.
func NewPages(n, perPage int, ns string, fill func(*corev1.ConfigMap)) Pages {
	pages := Pages{}
	for p := range n {
		l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
		if p < n-1 {
			l.Continue = fmt.Sprintf("c%d", p+1)
			rem := int64((n - p - 1) * perPage)
			l.RemainingItemCount = &rem
		}
		l.Items = make([]corev1.ConfigMap, perPage)
		for i := range l.Items {
			l.Items[i].Name = fmt.Sprintf("cm-%d-%d", p, i)
			l.Items[i].Namespace = ns
			if fill != nil {
				fill(&l.Items[i])
			}
		}
		key := ""
		if p > 0 {
			key = fmt.Sprintf("c%d", p)
		}
		pages[key] = l
	}
	return pages
}

// Page returns a shallow copy of the page of token, as a decoder hands out
// a fresh list object.
func (p Pages) Page(token string) (*corev1.ConfigMapList, error) {
	l, ok := p[token]
	if !ok {
		return nil, fmt.Errorf("unknown continue token %q", token)
	}
	cp := *l
	return &cp, nil
}

// PageLoop lists every page of a NotOlderThan("100") list with limit
// through list, as a hand-written limit/continue loop does (no retries, no
// checks: the floor benchmarks compare against), and returns the items seen.
func PageLoop(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error), limit int64) (int, error) {
	o := metav1.ListOptions{ResourceVersion: "100", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: limit}
	n := 0
	for {
		obj, err := list(ctx, o)
		if err != nil {
			return n, err
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return n, err
		}
		n += meta.LenList(obj)
		if lm.GetContinue() == "" {
			return n, nil
		}
		o = metav1.ListOptions{Limit: limit, Continue: lm.GetContinue()}
	}
}
