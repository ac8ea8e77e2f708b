package watchpipe

import (
	"testing"
	"time"
)

func TestStallCheckInterval(t *testing.T) {
	for _, tc := range []struct{ stall, want time.Duration }{
		{0, time.Second},
		{-1, time.Second},
		{time.Nanosecond, time.Millisecond},
		{2 * time.Millisecond, time.Millisecond},
		{400 * time.Millisecond, 100 * time.Millisecond},
		{4 * time.Second, time.Second},
		{5 * time.Minute, time.Second},
	} {
		if got := StallCheckInterval(tc.stall); got != tc.want {
			t.Errorf("StallCheckInterval(%v) = %v, want %v", tc.stall, got, tc.want)
		}
	}
}

// The detector: a check that sees new deliveries is Advanced; quiet adds up
// one interval per check, and Stalled comes once it reaches the timeout.
func TestStallCheck(t *testing.T) {
	s := NewStall(400 * time.Millisecond) // interval 100ms
	if v := s.Check(1); v != Advanced {
		t.Fatalf("first delivery: %v", v)
	}
	for i := range 3 {
		if v := s.Check(1); v != Quiet {
			t.Fatalf("quiet check %d: %v", i, v)
		}
	}
	if v := s.Check(1); v != Stalled {
		t.Fatalf("fourth quiet check (400ms): %v, want stalled", v)
	}
	if v := s.Check(2); v != Advanced {
		t.Fatalf("after a delivery: %v", v)
	}
	off := NewStall(-1)
	for range 10 {
		if v := off.Check(0); v == Stalled {
			t.Fatal("a disabled detector stalled")
		}
	}
}
