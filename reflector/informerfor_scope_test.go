package reflector

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// tooLargeAtRV answers every list at a resourceVersion 504 "too large
// resource version", as a watch cache that never catches up does, and
// records the lists asked of it.
type tooLargeAtRV struct {
	clients.Lister
	mu    sync.Mutex
	lists []metav1.ListOptions
}

func (c *tooLargeAtRV) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	c.lists = append(c.lists, o)
	c.mu.Unlock()
	if o.ResourceVersion != "" && o.ResourceVersion != "0" {
		return nil, testfake.TooLarge(1)
	}
	return c.Lister.List(ctx, o)
}

func (c *tooLargeAtRV) asked() []metav1.ListOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]metav1.ListOptions(nil), c.lists...)
}

// When NewInformerFor's scope check cannot settle (every read at the hook's
// resourceVersion is answered 504 "too large resource version", and
// something is written between every two reads), its lists go through the
// hook's ListerWatcher, whose client-go client retries such a 504 on its
// own up to 10 times: the first list is the newest, in pages, and no list
// at a resourceVersion goes through it.
func TestInformerForListsTheNewestInPagesThroughTheHookWhileTheScopeIsUnsettled(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	t.Cleanup(srv.Close)
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "b"}})
	var writes sync.Mutex
	n := 0
	hook := &tooLargeAtRV{Lister: listerFunc(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		// Something is written before every read of the hook's: the
		// check's reads are of other snapshots, and its reads at the
		// hook's resourceVersion are all answered 504.
		writes.Lock()
		n++
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: fmt.Sprintf("w%d", n)}})
		writes.Unlock()
		return srv.InNamespace("ns").List(ctx, o)
	})}
	// A typed ListWatch, as controller-runtime hands the hook: not the
	// SDK's, so its client may retry on its own.
	lw := &cache.ListWatch{
		ListWithContextFunc: hook.List,
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return srv.InNamespace("ns").Watch(ctx, o)
		},
	}
	var decs sync.Map
	newDec := func(namespace string) (clients.Lister, error) {
		d, _ := decs.LoadOrStore(namespace, &tooLargeAtRV{Lister: srv.InNamespace(namespace)})
		return d.(*tooLargeAtRV), nil
	}
	inf := informerFor(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, lister.Options{Metrics: &testfake.Recorder{}}, newDec)
	defer runInformer(t, inf)()

	if keys := inf.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "ns/a" {
		t.Errorf("store %v; want ns/a", keys)
	}
	var first *metav1.ListOptions
	for _, o := range hook.asked() {
		if o.ResourceVersion != "" && o.ResourceVersion != "0" {
			t.Errorf("the hook's ListerWatcher was asked for a list at resourceVersion %q (%+v)", o.ResourceVersion, o)
		}
		if first == nil && o.Limit != 1 {
			first = &o
		}
	}
	pageSize := lister.Options{}.Resolve(nil).PageSize
	if first == nil || first.ResourceVersion != "" || first.Limit != pageSize {
		t.Errorf("the first list through the hook's ListerWatcher: %+v; want the newest (no resourceVersion) in pages of %d", first, pageSize)
	}
	decs.Range(func(ns, d any) bool {
		for _, o := range d.(*tooLargeAtRV).asked() {
			if o.Limit != 1 {
				t.Errorf("steadywatch's client of namespace %q sent a list (%+v) though the scope was never confirmed", ns, o)
			}
		}
		return true
	})
}

// listerFunc is a clients.Lister that only lists.
type listerFunc func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)

func (f listerFunc) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return f(ctx, o)
}

func (listerFunc) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("listerFunc does not watch")
}
