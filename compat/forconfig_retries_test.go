package compat_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// ForConfig's GET /version is not retried behind the Detector's back:
// client-go's REST client would send 11 requests for a 503 with
// Retry-After, and 11, 1s apart, for a connection that ends without an
// answer.
func TestForConfigSendsOneVersionRequest(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"503 with Retry-After": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("starting"))
		},
		"connection closed without an answer (EOF)": testfake.HangUp,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, n := testfake.WireServer(t, false, h)
			srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
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
			if caps.Get(capability.StreamingList) == capability.Yes {
				t.Fatalf("capabilities %s from a failed /version; want conservative", caps)
			}
		})
	}
}
