package lister

import (
	"context"
	"fmt"
	"testing"

	"github.com/steadywatch/steadywatch/internal/knobs"

	corev1 "k8s.io/api/core/v1"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// A paginated list longer than MaxRequests pages completes: MaxRequests bounds
// retries and fallbacks, not pages (found by the 50k-object benchmark: 100
// pages of 500 failed with "max-requests" and the reflector never synced).
func TestMaxRequestsDoesNotCountPages(t *testing.T) {
	objs := make([]*corev1.ConfigMap, 150)
	for i := range objs {
		objs[i] = testfake.ConfigMap(fmt.Sprintf("cm-%03d", i), "")
	}
	c := newServer(t, steadywatchtest.Faults{}, objs...)
	obj, rec, err := New(c, knobs.WithLister(Options{}, knobs.Lister{MaxRequests: 4})).List(context.Background(), MostRecent().WithLimit(1))
	if err != nil {
		t.Fatalf("List over 150 pages with MaxRequests 4: %v", err)
	}
	if got, sent := len(obj.(*corev1.ConfigMapList).Items), c.Count("list"); got != 150 || rec.Pages != 150 || sent != 150 {
		t.Fatalf("items %d, pages %d, requests %d; want 150 each", got, rec.Pages, sent)
	}
}
