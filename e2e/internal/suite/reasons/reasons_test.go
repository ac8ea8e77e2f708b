package reasons

import (
	"testing"

	"github.com/steadywatch/steadywatch/metrics"
)

var _ metrics.Recorder = (*Counter)(nil)

func TestCounter(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Counter
		want string
	}{
		{"New", New(), "b=1 c=2 relist:r=1 watch-restart:w=1"},
		{"NewFallbacks", NewFallbacks(), "b=1 c=2"},
	} {
		c := tc.c
		if got := c.String(); got != "" {
			t.Errorf("%s: empty counter %q", tc.name, got)
		}
		c.Fallback("v1/configmaps", "c")
		c.Relist("v1/configmaps", "r")
		c.Fallback("v1/configmaps", "b")
		c.WatchRestart("v1/configmaps", "w")
		c.Fallback("v1/configmaps", "c")
		c.Bookmark("v1/configmaps") // not counted
		if got := c.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if got := c.Get("c"); got != 2 {
			t.Errorf("%s: Get(c) = %d, want 2", tc.name, got)
		}
	}
}
