package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/fallback"
)

func TestQueryFromFlags(t *testing.T) {
	for _, tc := range []struct {
		match, rv string
		limit     int64
		want      string // Query.String, or "" for a usage error
	}{
		{"", "", 0, "MostRecent"},
		{"", "42", 0, "NotOlderThan(42)"},
		{"exact", "42", 10, "Exact(42) limit=10"},
		{"Any", "", 0, "Any"},
		{"Any", "0", 0, "Any"},
		{"Exact", "", 0, ""},
		{"Exact", "0", 0, ""},
		{"MostRecent", "5", 0, ""},
		{"Any", "5", 0, ""},
		{"Sometimes", "", 0, ""},
		{"", "", -1, ""},
	} {
		q, err := queryFromFlags(tc.match, tc.rv, tc.limit)
		if tc.want == "" {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("%q %q %d: err %v, want a usage error", tc.match, tc.rv, tc.limit, err)
			}
			continue
		}
		if err != nil || q.String() != tc.want {
			t.Errorf("%q %q %d: %v %v, want %s", tc.match, tc.rv, tc.limit, q, err, tc.want)
		}
	}
	if _, err := queryFromFlags("Exact", "", 0); !errors.Is(err, fallback.ErrInvalidQuery) {
		t.Errorf("Exact without rv: %v, want ErrInvalidQuery", err)
	}
}

// Usage errors exit 2 with one line, before any connection is attempted
// (the kubeconfig points nowhere).
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"list", "--bogus"},
		{"list", "--match", "Sometimes"},
		{"list", "--limit", "x"},
		{"probe", "-o", "yaml"},
		{"probe", "--bookmark-timeout", "1s"},
		{"sync", "--timeout", "-1s"},
		{"sync", "extra-arg"},
		{"frobnicate"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, args...), &out, &errOut)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitUsage, errOut.String())
		}
		if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "kubectl-steadywatch: error: ") {
			t.Errorf("%v: stderr %q, want one error line", args, errOut.String())
		}
	}
}

func TestHelpExit0(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"probe", "--help"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "missing right") || !strings.Contains(out.String(), "--kubeconfig") {
		t.Errorf("help lacks rights or kubeconfig flags:\n%s", out.String())
	}
}
