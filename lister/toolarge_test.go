package lister_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// An Exact list at a resourceVersion far beyond the server's: after the
// too-large budget, the error says in the caller's terms that the version is
// newer than the server's newest (typed, with both versions), and still
// matches ErrExactUnavailable for callers that test that.
func TestExactFarFutureIsTypedTooLarge(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	defer srv.Close()
	for _, name := range []string{"a", "b"} {
		if _, err := srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	policy := policy.Policy{MaxRetryAfter: time.Millisecond}
	_, rec, err := lister.New(srv.InNamespace("default"), knobs.WithLister(lister.Options{}, knobs.Lister{Policy: policy})).List(context.Background(), lister.Exact("999999999"))
	var tl *lister.ResourceVersionTooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("err = %v; want a *lister.ResourceVersionTooLargeError", err)
	}
	if tl.Requested != "999999999" || tl.Current == "" || tl.Requests != len(rec.Requests) {
		t.Fatalf("error fields %+v; want requested 999999999, the server's current version, %d requests", tl, len(rec.Requests))
	}
	if !errors.Is(err, lister.ErrTooLargeResourceVersion) || !errors.Is(err, lister.ErrExactUnavailable) {
		t.Fatalf("err %v must match ErrTooLargeResourceVersion and ErrExactUnavailable", err)
	}
	if n := srv.Count("list"); n > 5 || n != len(rec.Requests) {
		t.Fatalf("%d lists on the server, %d in the record; want the same, at most 5", n, len(rec.Requests))
	}
}
