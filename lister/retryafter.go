package lister

import (
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/metrics"
)

const (
	// ReasonRetryAfterCapped: a response's Retry-After header asked for a
	// longer wait than Policy.MaxRetryAfter (a 429 or 5xx with "Retry-After:
	// 3600" from a server or proxy); the header was lowered to the cap before
	// client-go's REST client read it, so its own hidden retries (up to 10
	// inside one request) wait at most the cap each.
	ReasonRetryAfterCapped fallback.ReasonCode = "retry-after-capped"
)

// CapRetryAfter returns a copy of cfg whose transport lowers every
// Retry-After header longer than p.MaxRetryAfter (default 10s; whole
// seconds, at least 1) to that cap, counting (Fallback, reason
// ReasonRetryAfterCapped, under name) and logging each. Build the clientset,
// dynamic or metadata client that a Lister, ListerWatcher or reflector uses
// from it: the SDK's own waits are capped by the same Policy field, and
// client-go's REST client, which sleeps a Retry-After inside one request
// before the SDK sees an answer, is capped too.
func CapRetryAfter(cfg *rest.Config, p fallback.Policy, m metrics.Recorder, name string) *rest.Config {
	out := rest.CopyConfig(cfg)
	limit := max(int(p.WithDefaults().MaxRetryAfter/time.Second), 1)
	m = metrics.OrNop(m)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &retryAfterCap{next: rt, limit: limit, m: m, name: name}
	})
	return out
}

type retryAfterCap struct {
	next  http.RoundTripper
	limit int // seconds
	m     metrics.Recorder
	name  string
}

func (c *retryAfterCap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if resp == nil {
		return resp, err
	}
	h := resp.Header.Get("Retry-After")
	if h == "" {
		return resp, err
	}
	if s, perr := strconv.Atoi(h); perr == nil && s > c.limit {
		resp.Header.Set("Retry-After", strconv.Itoa(c.limit))
		c.m.Fallback(c.name, string(ReasonRetryAfterCapped))
		klog.FromContext(req.Context()).Info("Capping a server's Retry-After", "reason", string(ReasonRetryAfterCapped),
			"lister", c.name, "status", resp.StatusCode, "asked", h+"s", "waiting", strconv.Itoa(c.limit)+"s", "url", req.URL.Path)
	}
	return resp, err
}
