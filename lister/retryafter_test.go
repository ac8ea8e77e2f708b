package lister_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// The fault 2 inside client-go: a 429 with "Retry-After: 3600"
// makes client-go's REST client sleep the hour inside one request, before
// the SDK sees anything. Through CapRetryAfter the same list waits the cap
// (1s here), is counted, and succeeds on the retry.
func TestCapRetryAfterBoundsClientGoHiddenRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3600}}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`))
	}))
	defer srv.Close()
	rec := newReasonCounter()
	cfg := lister.CapRetryAfter(&rest.Config{Host: srv.URL}, fallback.Policy{MaxRetryAfter: time.Second}, rec, "cms")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := cs.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the list took %v: the 3600s Retry-After was not capped", d)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (the 429 and its retry)", n)
	}
	if n := rec.fallback(string(lister.ReasonRetryAfterCapped)); n != 1 {
		t.Errorf("%d capped waits counted, want 1", n)
	}
}
