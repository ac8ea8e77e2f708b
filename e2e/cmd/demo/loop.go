package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/steadywatch/steadywatch/readyourwrites"
)

// The stale-reads scene: how long the proxy holds every watch event back,
// and how many write-then-read cycles each side's controller runs.
const (
	staleDelay  = 300 * time.Millisecond
	staleCycles = 30
)

// loopResult is one side's controller loop in the stale-reads scene.
type loopResult struct {
	cycles, stale int
	// waits: ours' added wait per read (how long readyourwrites.Client's
	// Get took); stock reads its cache at once and records none.
	waits []time.Duration
}

func (l *loopResult) String() string {
	s := fmt.Sprintf("%d of %d reads after its own write stale", l.stale, l.cycles)
	if len(l.waits) > 0 {
		s += fmt.Sprintf(", added wait p50 %v p99 %v", pct(l.waits, 50).Round(time.Millisecond), pct(l.waits, 99).Round(time.Millisecond))
	}
	return s
}

// pct is the p-th percentile of ds (nearest rank below).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// olderThan reports whether read is older than written; resourceVersions
// of a real server compare (KEP-5504).
func olderThan(read, written string) (bool, error) {
	c, err := resourceversion.CompareResourceVersion(read, written)
	if err != nil {
		return false, fmt.Errorf("comparing resourceVersions %q and %q: %w", read, written, err)
	}
	return c < 0, nil
}

// loopPatch is cycle i's write: a merge patch, as a controller that owns a
// field writes it (no resourceVersion precondition, so a stale cache does
// not turn into a conflict).
func loopPatch(i int) []byte {
	return []byte(`{"data":{"n":"` + strconv.Itoa(i) + `"}}`)
}

// stockLoop is a controller written the common way: it writes name through
// its client, then reads it right back from its informer's cache (what a
// lister returns), n times, and counts the reads older than the write.
func (s *side) stockLoop(ctx context.Context, name string, n int) error {
	cms := s.cs.CoreV1().ConfigMaps(s.ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	l := &loopResult{cycles: n}
	defer func() { s.loop = l }()
	for i := range n {
		w, err := cms.Patch(ctx, name, types.MergePatchType, loopPatch(i), metav1.PatchOptions{})
		if err != nil {
			return err
		}
		obj, ok, err := s.inf.GetIndexer().GetByKey(s.ns + "/" + name)
		if err != nil {
			return err
		}
		stale := !ok
		if ok {
			if stale, err = olderThan(obj.(*corev1.ConfigMap).ResourceVersion, w.ResourceVersion); err != nil {
				return err
			}
		}
		if stale {
			l.stale++
		}
	}
	return nil
}

// oursLoop is the same controller through readyourwrites.Client over the
// side's informer: Get is never older than the Client's own writes.
func (s *side) oursLoop(ctx context.Context, name string, n int) error {
	c, err := readyourwrites.New(s.cs.CoreV1().ConfigMaps(s.ns), s.ns, s.inf, readyourwrites.Options{})
	if err != nil {
		return err
	}
	if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	l := &loopResult{cycles: n}
	defer func() { s.loop = l }()
	for i := range n {
		w, err := c.Patch(ctx, name, types.MergePatchType, loopPatch(i), metav1.PatchOptions{})
		if err != nil {
			return err
		}
		begin := time.Now()
		got, err := c.Get(ctx, name)
		l.waits = append(l.waits, time.Since(begin))
		if err != nil {
			return err
		}
		stale, err := olderThan(got.ResourceVersion, w.ResourceVersion)
		if err != nil {
			return err
		}
		if stale {
			l.stale++
		}
	}
	return nil
}
