package harness

import (
	"errors"
	"slices"
	"testing"
)

// TestVersionFlags checks the per-minor flag table (pure logic; the flags'
// effect on real servers is proven by the Ginkgo suite).
func TestVersionFlags(t *testing.T) {
	for _, tc := range []struct {
		version      string
		insecurePort bool
		err          bool
	}{
		{"v1.18.19", true, false},
		{"v1.23.0", true, false},
		{"v1.24.0", false, false},
		{"v1.36.3", false, false},
		{"v1.37.2", false, false},
		{"1.37.2", false, false},
		{"v1.17.17", true, false},
		{"v1.16.15", true, false},
		{"v1.15.12", false, true},
		{"v2.0.0", false, true},
		{"latest", false, true},
		{"v1.x.0", false, true},
	} {
		flags, err := versionFlags(tc.version)
		if tc.err {
			if !errors.Is(err, ErrUnsupportedVersion) {
				t.Errorf("%s: err = %v, want ErrUnsupportedVersion", tc.version, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.version, err)
			continue
		}
		if got := slices.Contains(flags, "--insecure-port=0"); got != tc.insecurePort {
			t.Errorf("%s: --insecure-port=0 present = %v, want %v (flags %v)", tc.version, got, tc.insecurePort, flags)
		}
	}
}

func TestAPIServerArgsExtrasComeLast(t *testing.T) {
	args, err := apiServerArgs("v1.18.19", apiServerFlags{etcd: "http://127.0.0.1:1", port: 6443, disableWatchCache: true, extra: []string{"--v=4"}})
	if err != nil {
		t.Fatal(err)
	}
	if args[len(args)-1] != "--v=4" {
		t.Errorf("extra args must come last: %v", args)
	}
	for _, want := range []string{"--watch-cache=false", "--insecure-port=0", "--bind-address=127.0.0.1", "--secure-port=6443"} {
		if !slices.Contains(args, want) {
			t.Errorf("missing %s in %v", want, args)
		}
	}
}
