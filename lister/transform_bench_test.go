package lister_test

// BenchmarkTransformWatchEvent: what Options.Transform costs per event of a
// plain watch through the drop-in ListerWatcher (the setting of
// BenchmarkPlainWatchEvent).
//
//	go test -run '^$' -bench BenchmarkTransformWatchEvent -benchmem -count 6 ./lister
//
//   transform=none                 ListerWatcher.WatchWithContext as it is
//   transform=StripManagedFields   with lister.StripManagedFields: one more
//                                  hand-over between goroutines per event

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

func BenchmarkTransformWatchEvent(b *testing.B) {
	ctx := context.Background()
	opts := metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true}
	for _, tc := range []struct {
		name string
		fn   cache.TransformFunc
	}{{"none", nil}, {"StripManagedFields", lister.StripManagedFields}} {
		b.Run("transform="+tc.name, func(b *testing.B) {
			c := newPrebuiltClient()
			c.evs = plainEvents(b.N)
			lw := lister.NewListerWatcher(c, lister.Options{Server: modernServer(), Transform: tc.fn})
			if _, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "100", Limit: prebuiltPerPage}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			w, err := lw.WatchWithContext(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			drainEvents(b, w, b.N)
		})
	}
}
