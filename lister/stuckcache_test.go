package lister_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"

	"github.com/steadywatch/steadywatch/internal/policy"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// stuckServer is a server whose watch cache stays at the last ConfigMap
// write while writes to other resources move the resourceVersion on, as on
// an apiserver without watch progress notifications (KEP-1904): the cache
// lags the store by exactly the revisions written elsewhere, for good.
func stuckServer(t *testing.T) (*steadywatchtest.Server[*corev1.ConfigMap], string) {
	t.Helper()
	const elsewhere = 2
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{Faults: steadywatchtest.Faults{Lagging: elsewhere}})
	t.Cleanup(srv.Close)
	for _, name := range []string{"a", "b"} {
		if _, err := srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	return srv, srv.Advance(elsewhere)
}

// On a server whose version says its watch cache cannot catch up (v1.18),
// a NotOlderThan list at a resourceVersion moved on by other resources'
// writes reads the newest state as soon as a consistent read shows the
// version exists: 3 requests and no Retry-After wait, with a log line and a
// metric for the fallback.
func TestNotOlderThanOnStuckWatchCacheFallsBackAtOnce(t *testing.T) {
	srv, rv := stuckServer(t)
	v, err := capability.ParseVersion("v1.18.19")
	if err != nil {
		t.Fatal(err)
	}
	rec := &testfake.Recorder{}
	var logMu sync.Mutex
	var logs []string
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logs = append(logs, args)
	}, funcr.Options{Verbosity: 2})
	ctx := klog.NewContext(context.Background(), logger)
	l := lister.New(srv.InNamespace("default"), lister.Options{Server: capability.Static(capability.FromVersion(v)), Metrics: rec})
	begin := time.Now()
	obj, r, err := l.List(ctx, lister.NotOlderThan(rv))
	took := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	want := []fallback.ReasonCode{"too-large-rv-check-exists", "too-large-rv-cache-stuck-most-recent"}
	if got := reasonsOf(r); !slices.Equal(got, want) {
		t.Fatalf("reasons %v, want %v", got, want)
	}
	if len(r.Requests) != 3 || srv.Count("list") != 3 {
		t.Fatalf("%d requests in the record, %d on the server; want 3 (too large, the consistent read, MostRecent)", len(r.Requests), srv.Count("list"))
	}
	if last := r.Requests[2]; last.Options.ResourceVersion != "" || last.Options.Limit != 0 {
		t.Fatalf("last request %+v, want a MostRecent list", last.Options)
	}
	if vocab.CompareRV(r.ServedResourceVersion, rv) == vocab.Older || r.Served.Semantic != fallback.MostRecent {
		t.Fatalf("served %s at %s, want MostRecent not older than %s", r.Served, r.ServedResourceVersion, rv)
	}
	if n := len(obj.(*corev1.ConfigMapList).Items); n != 2 {
		t.Fatalf("%d items, want 2", n)
	}
	if took >= time.Second {
		t.Fatalf("took %s: the 1 s Retry-After was waited", took)
	}
	if !slices.Contains(rec.Labels(testfake.Fallback), "too-large-rv-cache-stuck-most-recent") {
		t.Fatalf("metric reasons %v", rec.Labels(testfake.Fallback))
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !slices.ContainsFunc(logs, func(s string) bool {
		return strings.Contains(s, "too-large-rv-cache-stuck-most-recent") && strings.Contains(s, "KEP-1904")
	}) {
		t.Fatalf("no log line with the reason and its detail: %q", logs)
	}
}

// Without that belief (an unknown server) the answers show it: the second
// "too large" answer reports the same current resourceVersion as the first,
// so after one Retry-After wait the list reads the newest state instead of
// waiting again.
func TestNotOlderThanOnStuckWatchCacheUnknownServerSeesItInTheAnswers(t *testing.T) {
	srv, rv := stuckServer(t)
	p := policy.Policy{MaxRetryAfter: time.Millisecond}
	obj, r, err := lister.New(srv.InNamespace("default"), knobs.WithLister(lister.Options{}, knobs.Lister{Policy: p})).List(context.Background(), lister.NotOlderThan(rv))
	if err != nil {
		t.Fatal(err)
	}
	want := []fallback.ReasonCode{"too-large-rv-check-exists", "too-large-rv-wait-retry-after", "too-large-rv-cache-stuck-most-recent"}
	if got := reasonsOf(r); !slices.Equal(got, want) {
		t.Fatalf("reasons %v, want %v", got, want)
	}
	if !strings.Contains(r.Fallbacks[2].Detail, "in two answers") || len(r.Requests) != 4 {
		t.Fatalf("detail %q after %d requests; want the stalled cache named, 4 requests", r.Fallbacks[2].Detail, len(r.Requests))
	}
	if vocab.CompareRV(r.ServedResourceVersion, rv) == vocab.Older || len(obj.(*corev1.ConfigMapList).Items) != 2 {
		t.Fatalf("served at %s (floor %s)", r.ServedResourceVersion, rv)
	}
}

func reasonsOf(r *lister.Record) []fallback.ReasonCode {
	var out []fallback.ReasonCode
	for _, e := range r.Fallbacks {
		out = append(out, e.Reason)
	}
	return out
}
