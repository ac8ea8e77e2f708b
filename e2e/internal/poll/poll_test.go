package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	if err := Until(context.Background(), time.Millisecond, func() bool { n++; return n == 3 }); err != nil || n != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, n)
	}
	if err := Within(context.Background(), 10*time.Millisecond, time.Millisecond, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Within: %v, want the deadline", err)
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := Sleep(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := Sleep(ctx, 0); err != nil {
		t.Fatalf("d=0 on a live context: %v", err)
	}
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context: %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("d=0 on an ended context: %v", err)
	}
}
