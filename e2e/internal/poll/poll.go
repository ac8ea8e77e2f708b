// Package poll holds the two waits the e2e programs share (bench, soak,
// cmd/demo): polling a condition until it holds, and sleeping until a
// context ends. It needs no Ginkgo; a Ginkgo spec uses Eventually instead.
package poll

import (
	"context"
	"time"
)

// Until calls cond at once and then every interval until it holds (nil) or
// ctx ends (ctx.Err()).
func Until(ctx context.Context, interval time.Duration, cond func() bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Within is Until bounded to d.
func Within(ctx context.Context, d, interval time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return Until(ctx, interval, cond)
}

// Sleep waits d (nil), or until ctx ends (ctx.Err()); with d <= 0 it
// returns ctx.Err() at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
