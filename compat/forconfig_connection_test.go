package compat_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/compat"
)

// ForConfig's GET /version whose connection ends without an answer is not
// retried behind the Detector's back: client-go's REST client would send it
// 11 times, 1s apart.
func TestForConfigVersionRequestNotRetriedOnEOF(t *testing.T) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = c.Close()
		}
	}))
	defer s.Close()
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	caps := srv.Capabilities(context.Background())
	if got := n.Load(); got != 1 {
		t.Fatalf("GET /version sent %d times; want 1 (no hidden retries)", got)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
	if caps.Get(compat.StreamingList) == compat.Yes {
		t.Fatalf("capabilities %s from a failed /version; want conservative", caps)
	}
}
