// Command requestpath is the traced request of lister's
// TestRequestPathIsShort: a NotOlderThan(10) list with limit 500 through
// FromClientset, over HTTP, to a server that ignores resourceVersionMatch
// and answers 410 Gone (KEP-2523 rule 1), then the limit=1 read of the
// newest resourceVersion (40), then the page at 40. Built with
// -covermode=atomic, it clears the coverage counters once the Lister and
// its client are built and writes them to the directory named by its
// argument when List returns: they count what the call ran, both sides of
// the wire.
package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/coverage"
	"sync/atomic"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string) error {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("resourceVersion") == "10" {
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version: 10 (40)"}`)
			return
		}
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"40"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"40"}}]}`)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		return err
	}
	c, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "default")
	if err != nil {
		return err
	}
	l := lister.New(c, knobs.WithLister(lister.Options{}, knobs.Lister{Policy: policy.Policy{Backoff: policy.Backoff{Initial: time.Millisecond, Max: time.Millisecond}}}))
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("build with -covermode=atomic: %w", err)
	}
	_, rec, lerr := l.List(context.Background(), fallback.NotOlderThanQuery("10").WithLimit(500))
	if err := coverage.WriteCountersDir(dir); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return err
	}
	if lerr != nil || requests.Load() != 3 || len(rec.Fallbacks) != 1 || rec.Fallbacks[0].Reason != "rule1-gone-retry-newer-rv" {
		return fmt.Errorf("the traced list: err %v, %d requests, fallbacks %v; want 3 requests and one %s", lerr, requests.Load(), rec.Fallbacks, "rule1-gone-retry-newer-rv")
	}
	return nil
}
