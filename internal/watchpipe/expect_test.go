package watchpipe

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/capability"
)

// countingLists answers every list with 3 ConfigMaps and counts the calls.
type countingLists struct{ calls atomic.Int32 }

func (c *countingLists) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	c.calls.Add(1)
	return &corev1.ConfigMapList{Items: make([]corev1.ConfigMap, 3)}, nil
}

// The limit=1 count beside a streaming list is read until the server was
// seen ending a streaming list with its initial-events-end bookmark; a
// belief from the server's version alone does not skip it.
func TestExpectInitialEventsUntilTheServerWasSeenStreaming(t *testing.T) {
	ctx := context.Background()
	srv := capability.Static(capability.Capabilities{
		Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes},
		Basis:   map[capability.Capability]capability.Basis{capability.StreamingList: capability.BasisGateDefault},
	})
	c := &countingLists{}
	for _, tc := range []struct {
		name  string
		srv   capability.Server
		base  metav1.ListOptions
		count bool
	}{
		{"no server", nil, metav1.ListOptions{}, true},
		{"believed from the feature-gate default", srv, metav1.ListOptions{}, true},
		{"label selector", srv, metav1.ListOptions{LabelSelector: "a=b"}, false},
	} {
		before := c.calls.Load()
		n, ok := <-ExpectInitialEvents(ctx, c, tc.base, tc.srv)
		if sent := c.calls.Load() > before; sent != tc.count || ok != tc.count || (ok && n != 3) {
			t.Errorf("%s: count read sent %v, delivered %d %v; want sent and delivered %v", tc.name, sent, n, ok, tc.count)
		}
	}
	// As AwaitInitialEvents records it on an initial-events-end bookmark.
	observe(srv, capability.Yes, "initial-events-end bookmark received")
	before := c.calls.Load()
	if n, ok := <-ExpectInitialEvents(ctx, c, metav1.ListOptions{}, srv); ok || c.calls.Load() != before {
		t.Errorf("after a streaming list was seen ending with its bookmark: delivered %d %v, %d count reads; want none", n, ok, c.calls.Load()-before)
	}
	// Seen not streaming afterwards: the count is read again.
	observe(srv, capability.No, "no bookmark")
	if _, ok := <-ExpectInitialEvents(ctx, c, metav1.ListOptions{}, srv); !ok || c.calls.Load() != before+1 {
		t.Errorf("after the server was seen not streaming: delivered %v, %d count reads; want one", ok, c.calls.Load()-before)
	}
}
