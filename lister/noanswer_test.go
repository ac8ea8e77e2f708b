package lister_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// A server (or a proxy) that accepts a request and then says nothing: every
// request the SDK's own clients send is bounded by Policy.ResponseTimeout,
// for the headers and, while a list body is read, for its next bytes. Each
// test's context allows 20s: without the bound, a request waits for it.

const bound = 300 * time.Millisecond

// noAnswerOptions bounds responses to 300ms and retries once, at once.
func noAnswerOptions(retries int) lister.Options {
	return knobs.WithLister(lister.Options{}, knobs.Lister{Policy: policy.Policy{
		ResponseTimeout: bound,
		Backoff:         policy.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Jitter: -1, MaxRetries: retries},
	}})
}

func withDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkNoAnswer: err is a *fallback.NoAnswerError waiting for what, after
// want requests on the wire and in the Record, within a few bounds.
func checkNoAnswer(t *testing.T, err error, rec *lister.Record, wire int32, want int, waiting string, took time.Duration) {
	t.Helper()
	var na *fallback.NoAnswerError
	if !errors.As(err, &na) || !errors.Is(err, fallback.ErrNoAnswer) {
		t.Fatalf("err = %v; want a *fallback.NoAnswerError", err)
	}
	if na.Waiting != waiting || na.After != bound || !strings.HasPrefix(na.Path, "/api") || strings.Contains(na.Error(), "?") {
		t.Errorf("NoAnswerError %+v (%q); want waiting for %q after %s, the path without the query", na, na.Error(), waiting, bound)
	}
	if fallback.Classify(err) != fallback.NoAnswer {
		t.Errorf("Classify = %v; want %v", fallback.Classify(err), fallback.NoAnswer)
	}
	if int(wire) != want || rec == nil || len(rec.Requests) != want {
		n := -1
		if rec != nil {
			n = len(rec.Requests)
		}
		t.Errorf("%d requests on the wire, %d in the Record; want %d", wire, n, want)
	}
	if took > time.Duration(want)*bound+5*time.Second {
		t.Errorf("took %s; want about %d x %s", took, want, bound)
	}
}

func TestListWithoutHeadersEndsWithNoAnswer(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		cfg, n := testfake.WireServer(t, h2, testfake.Hold)
		for name, c := range adapters(t, cfg) {
			t.Run(name, func(t *testing.T) {
				n.Store(0)
				begin := time.Now()
				_, rec, err := lister.New(c, noAnswerOptions(-1)).List(withDeadline(t), fallback.MostRecentQuery())
				checkNoAnswer(t, err, rec, n.Load(), 1, "response headers", time.Since(begin))
				if len(rec.Fallbacks) == 0 || rec.Fallbacks[len(rec.Fallbacks)-1].Reason != "retries-exhausted" {
					t.Errorf("fallbacks %v; want the retries exhausted", rec.Fallbacks)
				}
			})
		}
	}
}

// The failure goes through Policy.Backoff: retried, and counted.
func TestNoAnswerIsRetriedAfterBackoff(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.Hold)
	c := adapters(t, cfg)["FromClientset"]
	begin := time.Now()
	_, rec, err := lister.New(c, noAnswerOptions(1)).List(withDeadline(t), fallback.MostRecentQuery())
	checkNoAnswer(t, err, rec, n.Load(), 2, "response headers", time.Since(begin))
	if len(rec.Fallbacks) == 0 || rec.Fallbacks[0].Reason != "no-answer-backoff" {
		t.Errorf("fallbacks %v; want %s first", rec.Fallbacks, "no-answer-backoff")
	}
}

func TestListBodyThatStopsEndsWithNoAnswer(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.StopMidBody(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"5"}},`))
	for name, c := range adapters(t, cfg) {
		t.Run(name, func(t *testing.T) {
			n.Store(0)
			begin := time.Now()
			_, rec, err := lister.New(c, noAnswerOptions(-1)).List(withDeadline(t), fallback.MostRecentQuery())
			checkNoAnswer(t, err, rec, n.Load(), 1, "more of the response body", time.Since(begin))
		})
	}
}

// A body that keeps delivering bytes is not cut, however long it takes in
// all: only silence is bounded.
func TestSlowListBodyIsNotCut(t *testing.T) {
	// A bound of its own, 4 gaps per bound: a gap stretched by a loaded
	// machine stays well inside it, and the whole body (6 gaps) still
	// takes longer than the bound.
	const items, slowBound = 7, 1200 * time.Millisecond
	cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[`))
		for i := range items {
			if i > 0 {
				_, _ = w.Write([]byte(","))
			}
			_, _ = w.Write([]byte(`{"metadata":{"name":"cm-` + string(rune('a'+i)) + `","namespace":"default","resourceVersion":"5"}}`))
			w.(http.Flusher).Flush()
			select { // each item well under the bound apart: the whole body takes longer than the bound
			case <-time.After(slowBound / 4):
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte(`]}`))
	})
	c := adapters(t, cfg)["FromClientset"]
	o := noAnswerOptions(-1)
	o.ResponseTimeout = slowBound
	obj, _, err := lister.New(c, o).List(withDeadline(t), fallback.MostRecentQuery())
	if err != nil {
		t.Fatalf("List: %v; want the whole list", err)
	}
	if got := len(obj.(*corev1.ConfigMapList).Items); got != items {
		t.Fatalf("%d items; want %d", got, items)
	}
}

// A watch whose headers never come, through the drop-in ListerWatcher.
func TestWatchWithoutHeadersEndsWithNoAnswer(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.Hold)
	for name, c := range adapters(t, cfg) {
		t.Run(name, func(t *testing.T) {
			n.Store(0)
			lw := lister.NewListerWatcher(c, noAnswerOptions(-1))
			begin := time.Now()
			_, err := lw.WatchWithContext(withDeadline(t), metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
			if !errors.Is(err, fallback.ErrNoAnswer) || n.Load() != 1 || time.Since(begin) > 5*time.Second {
				t.Fatalf("WatchWithContext: %v after %d requests in %s; want a *fallback.NoAnswerError after 1", err, n.Load(), time.Since(begin))
			}
		})
	}
}

// A user's own clientset given to FromFuncs: bounded by the lister's
// Policy when it is built from fallback.NoHiddenRetries (its transport),
// not otherwise (client-go's behaviour: the caller's context).
func TestUsersClientBoundThroughNoHiddenRetries(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.Hold)
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	begin := time.Now()
	_, rec, err := lister.New(lister.FromFuncs(cms.List, cms.Watch), noAnswerOptions(-1)).List(withDeadline(t), fallback.MostRecentQuery())
	checkNoAnswer(t, err, rec, n.Load(), 1, "response headers", time.Since(begin))

	n.Store(0)
	plain := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")
	ctx, cancel := context.WithTimeout(context.Background(), 4*bound)
	defer cancel()
	_, _, err = lister.New(lister.FromFuncs(plain.List, plain.Watch), noAnswerOptions(-1)).List(ctx, fallback.MostRecentQuery())
	if errors.Is(err, fallback.ErrNoAnswer) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a plain clientset: %v; want the caller's deadline (client-go's behaviour)", err)
	}
}
