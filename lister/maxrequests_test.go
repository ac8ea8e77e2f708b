package lister

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// pagedClient serves n pages of one ConfigMap each at resourceVersion "7".
type pagedClient struct{ n, sent int }

func (c *pagedClient) List(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.sent++
	i := 0
	if o.Continue != "" {
		if _, err := fmt.Sscanf(o.Continue, "page-%d", &i); err != nil {
			return nil, err
		}
	}
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	l.Items = []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}}
	if i+1 < c.n {
		l.Continue = fmt.Sprintf("page-%d", i+1)
	}
	return l, nil
}

func (c *pagedClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("not used")
}

// A paginated list longer than MaxRequests pages completes: MaxRequests bounds
// retries and fallbacks, not pages (found by the 50k-object benchmark: 100
// pages of 500 failed with "max-requests" and the reflector never synced).
func TestMaxRequestsDoesNotCountPages(t *testing.T) {
	c := &pagedClient{n: 150}
	obj, rec, err := New(c, Options{MaxRequests: 4}).List(context.Background(), MostRecent().WithLimit(1))
	if err != nil {
		t.Fatalf("List over 150 pages with MaxRequests 4: %v", err)
	}
	if got := len(obj.(*corev1.ConfigMapList).Items); got != 150 || rec.Pages != 150 || c.sent != 150 {
		t.Fatalf("items %d, pages %d, requests %d; want 150 each", got, rec.Pages, c.sent)
	}
}
