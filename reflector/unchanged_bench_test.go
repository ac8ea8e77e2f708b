package reflector

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// BenchmarkRelistUnchanged relists, into steadywatch's informer, n objects
// it already holds at the same resourceVersions, answered in one protobuf
// response by a loopback server: what one relist of an unchanged
// collection allocates (the response's bytes and whatever is decoded).
func BenchmarkRelistUnchanged(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			items := make([]*corev1.ConfigMap, n)
			for i := range items {
				items[i] = testfake.ConfigMap(fmt.Sprintf("cm-%05d", i), fmt.Sprint(i+1), func(c *corev1.ConfigMap) {
					c.Data = map[string]string{"key": fmt.Sprintf("value-%d", i), "other": "0123456789abcdef0123456789abcdef"}
					c.Labels = map[string]string{"app": "bench"}
				})
			}
			list := cmList(fmt.Sprint(n+1), items...)
			s := &oneResponseServer{t: &testing.T{}, proto: true, initial: list, relists: []relistAnswer{{list: list}}}
			cfg, _ := testfake.WireServer(b, false, s.serve)
			cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
			if err != nil {
				b.Fatal(err)
			}
			c, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "ns")
			if err != nil {
				b.Fatal(err)
			}
			o := fastOptions(&testfake.Recorder{})
			o.PaginateLists = false
			inf := newInformer(c, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, o, "bench")
			r := inf.reflector
			ctx := context.Background()
			relist := func() {
				snap, rv, err := r.listInto(ctx, fallback.Query{})
				if err == nil {
					err = snap.finish(ctx, rv)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			relist() // the first sync
			if got := len(inf.GetStore().ListKeys()); got != n {
				b.Fatalf("store holds %d objects; want %d", got, n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				relist()
			}
		})
	}
}
