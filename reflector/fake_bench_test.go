package reflector_test

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/reflector"
)

// BenchmarkFakeClientsetSync is what every user's unit test pays per
// informer: start an informer over client-go's fake clientset (100
// ConfigMaps) and wait for it to sync, stock client-go beside the drop-in
// informer. The fake clientset declares it cannot stream lists; before the
// drop-in forwarded that declaration it waited its streaming-list guard
// (5.1s per informer, measured).
func BenchmarkFakeClientsetSync(b *testing.B) {
	objs := make([]runtime.Object, 100)
	for i := range objs {
		objs[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i), Namespace: "ns"}}
	}
	for _, impl := range []string{"clientgo", "steadywatch"} {
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cs := fake.NewClientset(objs...)
				cms := cs.CoreV1().ConfigMaps("ns")
				lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
					ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
					WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) },
				}, cs)
				var inf cache.SharedIndexInformer
				if impl == "clientgo" {
					inf = cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
				} else {
					inf = reflector.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); inf.RunWithContext(ctx) }()
				if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) || len(inf.GetStore().ListKeys()) != len(objs) {
					b.Fatal("not synced")
				}
				cancel()
				<-done
			}
		})
	}
}
