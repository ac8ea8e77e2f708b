//go:build unix

package reflector_test

// Per-event CPU and allocations of steadywatch's informer against
// client-go's, from a watch event to the handler's call, on the same
// pre-built events (prebuiltEvents, over prebuiltWatchClient):
//
//	go test -run '^$' -bench '^BenchmarkInformerWatchEvent$' -benchmem -count 10 ./reflector | tee inf.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl inf.txt
//
// impl=clientgo:    cache.NewSharedIndexInformer (client-go's reflector,
//                   DeltaFIFO and processor)
// impl=steadywatch: reflector.NewSharedIndexInformer (steadywatch's own
//                   informer over reflector.New), over the same ListWatch
// Both index by namespace, as a typed Lister's informer does, and run one
// handler that counts its calls. cpu-ns/op is the process's CPU time (user
// and system, every goroutine and the collector) per event: the pipeline
// runs on several goroutines, so sec/op (wall) can hide CPU spent in
// parallel.

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/reflector"
)

func BenchmarkInformerWatchEvent(b *testing.B) {
	impls := []struct {
		name string
		new  func(cache.ListerWatcher) cache.SharedIndexInformer
	}{
		{"clientgo", func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}},
		{"steadywatch", func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return reflector.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}},
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			c := &prebuiltWatchClient{evs: prebuiltEvents(b.N)}
			inf := impl.new(&cache.ListWatch{ListWithContextFunc: c.List, WatchFuncWithContext: c.Watch})
			var calls atomic.Int64
			done := make(chan struct{})
			count := func() {
				if calls.Add(1) == int64(b.N) {
					close(done)
				}
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { count() },
				UpdateFunc: func(any, any) { count() },
			}); err != nil {
				b.Fatal(err)
			}
			// The informer's start line would land among the benchmark's
			// result lines.
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
			stopped := make(chan struct{})
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			go func() { defer close(stopped); inf.RunWithContext(ctx) }()
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("only %d of %d events reached the handler", calls.Load(), b.N)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			cancel()
			<-stopped
			if got := calls.Load(); got != int64(b.N) {
				b.Fatalf("handler saw %d calls, want %d", got, b.N)
			}
			if n := len(inf.GetIndexer().List()); n != min(b.N, prebuiltKeys) {
				b.Fatalf("informer holds %d objects, want %d", n, min(b.N, prebuiltKeys))
			}
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
