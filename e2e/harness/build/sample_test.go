package build

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestEnsureSampleAPIServerRejectsOtherMinors(t *testing.T) {
	for _, v := range []string{"v0.19.0", "v1.18.19", "0.18.19", ""} {
		if _, err := EnsureSampleAPIServer(context.Background(), v, nil); !errors.Is(err, ErrInvalidVersion) {
			t.Errorf("%q: want ErrInvalidVersion, got %v", v, err)
		}
	}
}

func TestSampleAPIServerPath(t *testing.T) {
	if got, want := SampleAPIServerPath("/c", "v0.18.19"), filepath.Join("/c", "bin", "sample-apiserver-v0.18.19", "sample-apiserver"); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
