package fallback_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/wirewait"
)

// A user's own clientset built from NoHiddenRetries: its transport bounds
// every request by the bound on the request's context (the lister's and
// the reflector's Policy.ResponseTimeout; DefaultResponseTimeout without
// one). Each test's context allows 20s: without the bound, a request waits
// for it.

const noAnswerBound = 300 * time.Millisecond

func boundedContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return wirewait.WithBound(ctx, noAnswerBound)
}

func wantNoAnswer(t *testing.T, err error, waiting string, requests int32) {
	t.Helper()
	var na *fallback.NoAnswerError
	if !errors.As(err, &na) || !errors.Is(err, fallback.ErrNoAnswer) || engine.Classify(err) != vocab.NoAnswer {
		t.Fatalf("err = %v; want a *fallback.NoAnswerError, class NoAnswer", err)
	}
	if na.Waiting != waiting || na.After != noAnswerBound || na.Path != "/api/v1/namespaces/default/configmaps" || strings.Contains(na.Error(), "?") {
		t.Errorf("%+v; want waiting for %q after %s, the path without the query", na, waiting, noAnswerBound)
	}
	if requests != 1 {
		t.Errorf("%d requests on the wire; want 1", requests)
	}
}

func TestNoHiddenRetriesBoundsAListWithoutHeaders(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.Hold)
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	_, err := cms.List(boundedContext(t), metav1.ListOptions{ResourceVersion: "0", LabelSelector: "secret=token"})
	wantNoAnswer(t, err, "response headers", n.Load())
}

func TestNoHiddenRetriesBoundsAListBodyThatStops(t *testing.T) {
	cfg, n := testfake.WireServer(t, true, testfake.StopMidBody(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[`))
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	_, err := cms.List(boundedContext(t), metav1.ListOptions{})
	wantNoAnswer(t, err, "more of the response body", n.Load())
}

func TestNoHiddenRetriesBoundsAWatchWithoutHeaders(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.Hold)
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	_, err := cms.Watch(boundedContext(t), metav1.ListOptions{ResourceVersion: "5"})
	wantNoAnswer(t, err, "response headers", n.Load())
}

// Once a watch's headers are in, silence is normal: the bound does not end
// it (the stall watchdog of the watch pipeline decides).
func TestNoHiddenRetriesLeavesAnAnsweredWatchOpen(t *testing.T) {
	cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	w, err := cms.Watch(boundedContext(t), metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		t.Fatalf("the watch ended or sent %v (open %v) while the server was silent; want it open", ev, ok)
	case <-time.After(4 * noAnswerBound): // waiting on the bound itself: four of them pass
	}
}

// A negative bound is none: the caller's context decides, as in client-go.
func TestNoHiddenRetriesWithoutBound(t *testing.T) {
	cfg, _ := testfake.WireServer(t, false, testfake.Hold)
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	ctx, cancel := context.WithTimeout(wirewait.WithBound(context.Background(), -1), 4*noAnswerBound)
	defer cancel()
	if _, err := cms.List(ctx, metav1.ListOptions{}); errors.Is(err, fallback.ErrNoAnswer) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the caller's deadline", err)
	}
}

// A 503 whose Status body stops half-way: the body NoHiddenRetries' transport reads to
// carry the Retry-After is bounded as well.
func TestNoHiddenRetriesBoundsAnErrorBodyThatStops(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1",`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	_, err := cms.List(boundedContext(t), metav1.ListOptions{})
	wantNoAnswer(t, err, "more of the response body", n.Load())
}
