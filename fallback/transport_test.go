package fallback_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

const tooLargeStatus = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 999999999, current: 42","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":%s},"code":504}`

// server answers every request with code, the Retry-After header ra and
// body, and counts the requests.
func server(t *testing.T, code int, ra, contentType, body string) (*rest.Config, *atomic.Int32) {
	t.Helper()
	return testfake.WireServer(t, false, func(w http.ResponseWriter, _ *http.Request) {
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	})
}

func list(t *testing.T, cfg *rest.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err == nil {
		t.Fatal("list succeeded; want the server's error")
	}
	return err
}

// client-go retries a 504 with Retry-After 10 times inside one call; a
// client built from NoHiddenRetries sends exactly one request and hands the
// delay to the caller.
func TestNoHiddenRetries(t *testing.T) {
	cfg, n := server(t, 504, "0", "application/json", fmt.Sprintf(tooLargeStatus, "0"))
	list(t, cfg)
	if got := n.Load(); got != 11 {
		t.Fatalf("stock client: %d requests; want client-go's 1 + 10 hidden retries (the premise)", got)
	}
	n.Store(0)
	err := list(t, fallback.NoHiddenRetries(cfg))
	if got := n.Load(); got != 1 {
		t.Fatalf("NoHiddenRetries: %d requests on the wire; want 1", got)
	}
	if engine.Classify(err) != vocab.TooLargeRV {
		t.Fatalf("class %v of %v; want too-large", engine.Classify(err), err)
	}
}

func TestNoHiddenRetriesKeepsTheDelay(t *testing.T) {
	cases := []struct {
		name, contentType, body string
		code                    int
		check                   func(error) bool
	}{
		{"apiserver Status with details", "application/json", fmt.Sprintf(tooLargeStatus, "3"), 504, func(err error) bool { return engine.Classify(err) == vocab.TooLargeRV }},
		{"Status without details", "application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"busy","reason":"ServiceUnavailable","code":503}`, 503, apierrors.IsServiceUnavailable},
		{"priority and fairness 429 (plain text)", "text/plain; charset=utf-8", "Too many requests, please try again later.\n", 429, apierrors.IsTooManyRequests},
		{"a proxy's HTML page", "text/html", "<html>502 Bad Gateway</html>", 502, func(err error) bool { return engine.Classify(err) == vocab.ServerError }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, n := server(t, c.code, "3", c.contentType, c.body)
			begin := time.Now()
			err := list(t, fallback.NoHiddenRetries(cfg))
			if got := n.Load(); got != 1 {
				t.Fatalf("%d requests; want 1", got)
			}
			if d := time.Since(begin); d > 2*time.Second {
				t.Fatalf("took %v: the REST client waited the Retry-After itself", d)
			}
			if !c.check(err) {
				t.Fatalf("error %v lost its kind", err)
			}
			if ra, ok := engine.RetryAfter(err); !ok || ra != 3*time.Second {
				t.Fatalf("RetryAfter(%v) = %v, %v; want 3s", err, ra, ok)
			}
		})
	}
}

// Answers without Retry-After, and 4xx other than 429, pass unchanged.
func TestNoHiddenRetriesLeavesOtherAnswers(t *testing.T) {
	cfg, n := server(t, 410, "", "application/json", `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}`)
	err := list(t, fallback.NoHiddenRetries(cfg))
	if n.Load() != 1 || !apierrors.IsResourceExpired(err) || err.Error() != "too old resource version: 1 (5)" {
		t.Fatalf("410 changed: %v (%d requests)", err, n.Load())
	}
	if fallback.NoHiddenRetries(nil) != nil {
		t.Fatal("NoHiddenRetries(nil) != nil")
	}
}

// A Retry-After past int32 (untrusted input) is clamped, not wrapped into a
// negative or tiny delay.
func TestNoHiddenRetriesClampsAHugeRetryAfter(t *testing.T) {
	cfg, n := server(t, 429, "2147483648", "text/plain", "slow down\n") // 2^31: int32 would wrap negative
	err := list(t, fallback.NoHiddenRetries(cfg))
	if got := n.Load(); got != 1 {
		t.Fatalf("%d requests; want 1", got)
	}
	if ra, ok := engine.RetryAfter(err); !ok || ra < time.Hour {
		t.Fatalf("RetryAfter(%v) = %v, %v; want the clamped (huge) delay for the caller to cap", err, ra, ok)
	}
}
