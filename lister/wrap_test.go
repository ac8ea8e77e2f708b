package lister_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

type ctxKey struct{}

// Wrap puts the lister under any cache.ListerWatcher: the list comes back
// through it with the caller's context, and the inner declaration that it
// cannot stream lists (client-go's fake clientsets) is kept.
func TestWrapListsThroughTheInnerListerWatcherWithContext(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	var sawCtx bool
	inner := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			sawCtx = ctx.Value(ctxKey{}) == "v"
			return cs.CoreV1().ConfigMaps("ns").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().ConfigMaps("ns").Watch(ctx, o)
		},
	}
	lw := lister.Wrap(inner, lister.Options{})
	if lw.IsWatchListSemanticsUnSupported() {
		t.Error("a plain ListWatch declared as unable to stream")
	}
	obj, err := lw.ListWithContext(context.WithValue(context.Background(), ctxKey{}, "v"), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := meta.LenList(obj); n != 1 || !sawCtx {
		t.Fatalf("listed %d items (context reached the inner ListerWatcher: %v); want 1, true", n, sawCtx)
	}
	declared := lister.Wrap(cache.ToListWatcherWithWatchListSemantics(inner, cs), lister.Options{})
	if !declared.IsWatchListSemanticsUnSupported() {
		t.Error("the fake clientset's declaration was lost")
	}
}
