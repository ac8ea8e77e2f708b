package main

import (
	"context"
	"fmt"
	"slices"
)

// alternate is the order of items in repetition r: as given on even
// repetitions, reversed on odd ones (ABAB...BABA: no item always runs
// first).
func alternate[T any](items []T, r int) []T {
	seq := slices.Clone(items)
	if r%2 == 1 {
		slices.Reverse(seq)
	}
	return seq
}

// contenderKey is repeatAlternating's key for contender names.
func contenderKey(name string) string { return name }

// repeatAlternating runs once for every item, count times over, in the
// order alternate gives; heading(r) starts repetition r (a log line). A
// failed item is not run again: its failure goes to failures under
// key(item) as "repetition N: <err>" and to the log (key padded to width),
// and the others run on. A failure once ctx has ended ends the whole with
// that error.
func repeatAlternating[T any](ctx context.Context, count int, items []T, key func(T) string, width int, failures map[string]string,
	heading func(r int), once func(r int, item T) error) error {
	for r := 0; r < count; r++ {
		heading(r)
		for _, it := range alternate(items, r) {
			k := key(it)
			if _, failed := failures[k]; failed {
				continue
			}
			if err := once(r, it); err != nil {
				if ctx.Err() != nil {
					return err
				}
				failures[k] = fmt.Sprintf("repetition %d: %v", r+1, err)
				logf("  %-*s FAILED: %v", width, k, err)
			}
		}
	}
	return nil
}
