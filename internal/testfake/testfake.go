// Package testfake holds the small fakes and fixtures the SDK's own tests,
// benchmarks and e2e suites share: a watch that replays pre-built events, a
// scripted client, lists that block until released, an HTTP server that
// counts the requests on the wire, objects (ConfigMap; Widget, a JSON-only
// custom resource type, with its generated-style client), the apiserver's
// 410 and 504 answers (Gone, TooLarge), a poll with a deadline (WaitFor),
// a runner that stops a reflector or an informer when the test ends
// (Start, RunInformer), and a metrics.Recorder that keeps every report in
// order (Recorder). For a fake apiserver with real resourceVersion
// semantics, use package steadywatchtest.
package testfake

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// Watch delivers pre-built events in order; then it closes its channel
// (CloseAfter) or stays open until stopped. Like client-go's StreamWatcher,
// it closes its channel once stopped.
type Watch struct {
	ch   chan watch.Event
	stop chan struct{}
	once sync.Once
}

// NewWatch returns a Watch replaying evs; closeAfter closes the result
// channel after the last event instead of waiting for Stop.
func NewWatch(evs []watch.Event, closeAfter bool) *Watch {
	w := &Watch{ch: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.ch) // the only sender
		for _, ev := range evs {
			select {
			case w.ch <- ev:
			case <-w.stop:
				return
			}
		}
		if !closeAfter {
			<-w.stop
		}
	}()
	return w
}

// Stop implements watch.Interface.
func (w *Watch) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan implements watch.Interface.
func (w *Watch) ResultChan() <-chan watch.Event { return w.ch }
