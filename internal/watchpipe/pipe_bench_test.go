package watchpipe

import (
	"strconv"
	"testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkWatchEvent: the pipeline's verdict on one MODIFIED event for an
// object of the list, each newer than the last, as the drop-in (lazy index,
// shared) and reflector.New (indexed, one goroutine) use it. It must not
// allocate.
//
//	go test -run '^$' -bench BenchmarkWatchEvent -benchmem ./internal/watchpipe
func BenchmarkWatchEvent(b *testing.B) {
	const objects = 500
	for _, cfg := range []struct {
		name string
		c    Config
	}{{"adopter=listerwatcher", Config{Shared: true}}, {"adopter=reflector", Config{Indexed: true}}} {
		b.Run(cfg.name, func(b *testing.B) {
			p := New(cfg.c)
			load := func() {
				ld := p.Load(objects)
				for i := range objects {
					ld.Add("bench", "cm-"+strconv.Itoa(i), "50")
				}
				p.Replace(ld, "100")
			}
			load()
			evs := make([]*corev1.ConfigMap, 0, 1<<16)
			for i := range cap(evs) {
				evs = append(evs, testfake.ConfigMap("cm-"+strconv.Itoa(i%objects), strconv.Itoa(101+i)))
				evs[i].Namespace = "bench"
			}
			w := p.Watch("100", false)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i == len(evs) {
					b.StopTimer()
					i = 0
					load()
					w = p.Watch("100", false)
					b.StartTimer()
				}
				if v, _ := w.Event(watch.Modified, evs[i]); v != Deliver {
					b.Fatalf("event %d: %s", i, v)
				}
			}
		})
	}
}
