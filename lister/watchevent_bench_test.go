package lister_test

// BenchmarkPlainWatchEvent: per event of a plain watch (client-go's
// reflector after its list), MODIFIED events for the objects of the list,
// each newer than the last.
//
//	go test -run '^$' -bench BenchmarkPlainWatchEvent -benchmem -count 6 ./lister
//
//   impl=clientgo     the client's raw watch channel
//   impl=steadywatch  ListerWatcher.WatchWithContext after its list: the
//                     relay plus the per-object stale-event check

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/lister"
)

// plainEvents builds n MODIFIED events for the first page's objects
// (cm-0-0 .. cm-0-499, listed at resourceVersion 100), from 101 upwards.
func plainEvents(n int) []watch.Event {
	evs := make([]watch.Event, 0, n)
	for i := 0; i < n; i++ {
		evs = append(evs, watch.Event{Type: watch.Modified, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "cm-0-" + strconv.Itoa(i%prebuiltPerPage), Namespace: "bench", ResourceVersion: strconv.Itoa(101 + i),
		}}})
	}
	return evs
}

func BenchmarkPlainWatchEvent(b *testing.B) {
	ctx := context.Background()
	opts := metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true}
	b.Run("impl=clientgo", func(b *testing.B) {
		c := newPrebuiltClient()
		c.evs = plainEvents(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		w, err := c.Watch(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		drainEvents(b, w, b.N)
	})
	b.Run("impl=steadywatch", func(b *testing.B) {
		c := newPrebuiltClient()
		c.evs = plainEvents(b.N)
		lw := lister.NewListerWatcher(c, lister.Options{Server: modernServer()})
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
