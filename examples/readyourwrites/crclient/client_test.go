package crclient_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/steadywatch/steadywatch/examples/readyourwrites/crclient"
	"github.com/steadywatch/steadywatch/metrics"
)

// informer is controllertest's FakeInformer made safe for a handler added
// while events are fired.
type informer struct {
	*controllertest.FakeInformer
	mu sync.Mutex
}

func (i *informer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.FakeInformer.AddEventHandler(h)
}

// stale is a cache of ConfigMaps the test feeds by hand: it lags the
// server until the test says otherwise.
type stale struct {
	mu   sync.Mutex
	objs map[client.ObjectKey]*corev1.ConfigMap
	inf  *informer
	read chan struct{} // a read happened (buffered, never blocks)
}

func (s *stale) signal() {
	select {
	case s.read <- struct{}{}:
	default:
	}
}

func newStale() *stale {
	return &stale{objs: map[client.ObjectKey]*corev1.ConfigMap{}, inf: &informer{FakeInformer: &controllertest.FakeInformer{}}, read: make(chan struct{}, 1)}
}

func (s *stale) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	defer s.signal()
	s.mu.Lock()
	defer s.mu.Unlock()
	cm, ok := s.objs[key]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	*obj.(*corev1.ConfigMap) = *cm.DeepCopy()
	return nil
}

func (s *stale) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	defer s.signal()
	s.mu.Lock()
	defer s.mu.Unlock()
	l := list.(*corev1.ConfigMapList)
	l.Items = nil
	for _, cm := range s.objs {
		l.Items = append(l.Items, *cm.DeepCopy())
	}
	return nil
}

func (s *stale) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return s.inf, nil
}

// set makes the cache hold cm (marked as the cache's copy) and fires the
// informer's event.
func (s *stale) set(cm *corev1.ConfigMap) {
	cm = cm.DeepCopy()
	cm.Labels = map[string]string{"from": "cache"}
	s.mu.Lock()
	s.objs[client.ObjectKeyFromObject(cm)] = cm
	s.mu.Unlock()
	s.inf.mu.Lock()
	defer s.inf.mu.Unlock()
	s.inf.Add(cm)
}

func (s *stale) del(cm *corev1.ConfigMap) {
	s.mu.Lock()
	delete(s.objs, client.ObjectKeyFromObject(cm))
	s.mu.Unlock()
	s.inf.mu.Lock()
	defer s.inf.mu.Unlock()
	s.inf.Delete(cm)
}

type fallbacks struct {
	metrics.Recorder
	mu      sync.Mutex
	reasons []string
}

func (f *fallbacks) ReadFallback(_, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reasons = append(f.reasons, reason)
}

// setup returns the Client, the stale cache and the server's copy of a
// ConfigMap the Client created and then updated (the cache holds the
// created version only).
func setup(t *testing.T, o crclient.Options) (*crclient.Client, *stale, *corev1.ConfigMap) {
	t.Helper()
	server := fake.NewClientBuilder().Build()
	cached := newStale()
	c := crclient.NewFrom(server, cached, server, o)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cached.set(cm)
	cm.Data = map[string]string{"k": "v"}
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return c, cached, cm
}

func TestGetWaitsForTheCacheToHoldItsOwnUpdate(t *testing.T) {
	c, cached, written := setup(t, crclient.Options{Bound: time.Minute})
	got := make(chan *corev1.ConfigMap, 1)
	errc := make(chan error, 1)
	go func() {
		var cm corev1.ConfigMap
		errc <- c.Get(t.Context(), client.ObjectKeyFromObject(written), &cm)
		got <- &cm
	}()
	<-cached.read // Get saw the stale copy: only now does the cache catch up
	cached.set(written)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	cm := <-got
	if cm.ResourceVersion != written.ResourceVersion || cm.Labels["from"] != "cache" {
		t.Fatalf("Get = resourceVersion %s labels %v, want %s from the cache", cm.ResourceVersion, cm.Labels, written.ResourceVersion)
	}
}

func TestGetPastTheBoundReadsTheServer(t *testing.T) {
	rec := &fallbacks{Recorder: metrics.Nop()}
	c, _, written := setup(t, crclient.Options{Bound: 10 * time.Millisecond, Metrics: rec})
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(written), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion != written.ResourceVersion || cm.Labels["from"] == "cache" {
		t.Fatalf("Get = resourceVersion %s labels %v, want %s from the server", cm.ResourceVersion, cm.Labels, written.ResourceVersion)
	}
	if len(rec.reasons) != 1 || rec.reasons[0] != "bound" {
		t.Fatalf("fallbacks = %v, want [bound]", rec.reasons)
	}
}

func TestGetOfAnObjectItDidNotWriteReadsTheCacheAtOnce(t *testing.T) {
	c, cached, written := setup(t, crclient.Options{Bound: time.Minute})
	other := written.DeepCopy()
	other.Name, other.ResourceVersion = "b", "1"
	cached.set(other)
	var cm corev1.ConfigMap
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(other), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Labels["from"] != "cache" {
		t.Fatalf("Get = %v, want the cache's copy", cm.Labels)
	}
}

func TestListWaitsUntilItsOwnDeleteLeftTheCache(t *testing.T) {
	c, cached, written := setup(t, crclient.Options{Bound: time.Minute})
	cached.set(written)
	if err := c.Delete(t.Context(), written); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	var l corev1.ConfigMapList
	go func() { errc <- c.List(t.Context(), &l) }()
	<-cached.read // List saw the deleted object: only now does it leave the cache
	cached.del(written)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 0 {
		t.Fatalf("List = %d items, want the deleted object gone", len(l.Items))
	}
}
