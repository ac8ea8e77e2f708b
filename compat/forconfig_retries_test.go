package compat_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/compat"
)

// ForConfig's /version request is not retried behind the Detector's back:
// client-go's REST client would send 11 requests for a 503 with Retry-After.
func TestForConfigSendsOneVersionRequest(t *testing.T) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("starting"))
	}))
	defer s.Close()
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	caps := srv.Capabilities(context.Background())
	if got := n.Load(); got != 1 {
		t.Fatalf("GET /version sent %d times; want 1 (no hidden retries)", got)
	}
	if caps.Get(compat.StreamingList) == compat.Yes {
		t.Fatalf("capabilities %s from a failed /version; want conservative", caps)
	}
}
