package informer_test

// client-go v0.37.2's tools/cache/shared_informer_test.go behaviour tests,
// ported to run against this informer over reflector.New (Copyright 2017
// The Kubernetes Authors, Apache License 2.0). They run in a
// testing/synctest bubble: time is the bubble's, synctest.Wait replaces
// client-go's polling, and no test sleeps to synchronise.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/steadywatch/steadywatch/internal/informer"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// newOurs is the informer under test over reflector.New on lw. A watch that
// closes at once without progress is followed by a relist, as client-go's
// reflector relists after a "very short watch".
func newOurs(lw cache.ListerWatcher, resync time.Duration, indexers cache.Indexers) *informer.Informer {
	return informer.New(informer.Config{
		ExampleObject: &v1.Pod{},
		Options:       cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers},
		NewSource: func(store cache.Store, _ func(context.Context, error)) informer.Source {
			return reflector.New(lister.FromListerWatcher(lw), &v1.Pod{}, store, knobs.WithReflector(reflector.Options{}, knobs.Reflector{MaxShortWatches: -1, Backoff: policy.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}}))
		},
	})
}

// testListener records the names of the objects it is given (adds and
// updates), as client-go's.
type testListener struct {
	mu       sync.Mutex
	name     string
	resync   time.Duration
	expected []string
	received []string
}

func newTestListener(name string, resync time.Duration, expected ...string) *testListener {
	return &testListener{name: name, resync: resync, expected: expected}
}

func (l *testListener) OnAdd(obj any, _ bool) { l.handle(obj) }
func (l *testListener) OnUpdate(_, obj any)   { l.handle(obj) }
func (l *testListener) OnDelete(any)          {}

func (l *testListener) handle(obj any) {
	m, _ := meta.Accessor(obj)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.received = append(l.received, m.GetName())
}

func (l *testListener) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	got, want := slices.Sorted(slices.Values(l.received)), slices.Sorted(slices.Values(l.expected))
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %v, want %v", l.name, got, want)
	}
}

func (l *testListener) reset(expected ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.received, l.expected = nil, expected
}

func pod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// newSource is client-go's fake apiserver endpoint holding the named pods
// (resourceVersion unset), shut down at the end of the test.
func newSource(t *testing.T, pods ...string) *fcache.FakeControllerSource {
	s := fcache.NewFakeControllerSource()
	t.Cleanup(s.Shutdown)
	for _, name := range pods {
		s.Add(pod(name, ""))
	}
	return s
}

// addListeners adds each listener to inf with its own resync period.
func addListeners(t *testing.T, inf cache.SharedInformer, ls ...*testListener) {
	t.Helper()
	for _, l := range ls {
		if _, err := inf.AddEventHandlerWithResyncPeriod(l, l.resync); err != nil {
			t.Fatal(err)
		}
	}
}

// run starts inf and stops it at the end of the bubble's test.
func run(t *testing.T, inf cache.SharedInformer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestListenerResyncPeriods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t, "pod1", "pod2")
		inf := newOurs(source, time.Second, nil)
		l1 := newTestListener("listener1", 0, "pod1", "pod2")
		l2 := newTestListener("listener2", 2*time.Second, "pod1", "pod2")
		l3 := newTestListener("listener3", 3*time.Second, "pod1", "pod2")
		addListeners(t, inf, l1, l2, l3)
		run(t, inf)
		synctest.Wait()
		for _, l := range []*testListener{l1, l2, l3} {
			l.check(t)
			l.reset()
		}
		l2.reset("pod1", "pod2")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for _, l := range []*testListener{l1, l2, l3} {
			l.check(t)
		}
		l2.reset()
		l3.reset("pod1", "pod2")
		time.Sleep(time.Second)
		synctest.Wait()
		for _, l := range []*testListener{l1, l2, l3} {
			l.check(t)
		}
	})
}

func TestResyncCheckPeriod(t *testing.T) {
	// A handler's period under the informer's check period lowers the
	// check period (before Run), and one under a second gets a second.
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t, "pod1")
		inf := newOurs(source, 12*time.Hour, nil)
		fast := newTestListener("fast", 100*time.Millisecond, "pod1")
		slow := newTestListener("slow", 0, "pod1")
		addListeners(t, inf, fast, slow)
		run(t, inf)
		synctest.Wait()
		fast.reset("pod1")
		slow.reset()
		time.Sleep(time.Second)
		synctest.Wait()
		fast.check(t)
		slow.check(t)
	})
}

func TestSharedInformerWatchDisruption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t, "pod1", "pod2")
		inf := newOurs(source, time.Second, nil)
		noResync := newTestListener("listenerNoResync", 0, "pod1", "pod2")
		resync := newTestListener("listenerResync", time.Second, "pod1", "pod2")
		addListeners(t, inf, noResync, resync)
		run(t, inf)
		synctest.Wait()
		noResync.check(t)
		resync.check(t)

		// Add pod3, bump pod2 but don't broadcast: seen only on relist.
		source.AddDropWatch(pod("pod3", ""))
		source.ModifyDropWatch(pod("pod2", ""))
		synctest.Wait()
		noResync.check(t)
		resync.check(t)
		noResync.reset("pod2", "pod3")
		resync.reset("pod1", "pod2", "pod3", "pod1", "pod2") // the relist, then the resync of pod1 and pod2 at 1s

		// The resync check at 1s marks listenerNoResync as not syncing:
		// the relist's unchanged pod1 (an update to the same
		// resourceVersion) reaches only listenerResync.
		time.Sleep(time.Second)
		synctest.Wait()
		source.ResetWatch() // a connection loss: the reflector relists
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		noResync.check(t)
		resync.check(t)
	})
}

func TestSharedInformerTransformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t, "pod1", "pod2")
		inf := newOurs(source, time.Second, nil)
		if err := inf.SetTransform(func(obj any) (any, error) {
			if p, ok := obj.(*v1.Pod); ok {
				p.SetName(strings.ToUpper(p.GetName()))
			}
			return obj, nil
		}); err != nil {
			t.Fatal(err)
		}
		l := newTestListener("listenerTransformer", 0, "POD1", "POD2")
		if _, err := inf.AddEventHandler(l); err != nil {
			t.Fatal(err)
		}
		run(t, inf)
		synctest.Wait()
		l.check(t)
		if err := inf.SetTransform(nil); err == nil {
			t.Error("SetTransform after Run succeeded")
		}
	})
}

func TestSharedInformerRemoveHandler(t *testing.T) {
	inf := newOurs(newSource(t), time.Second, nil)
	h1, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []cache.ResourceEventHandlerRegistration{h2, h1, h1} {
		if err := inf.RemoveEventHandler(h); err != nil {
			t.Errorf("removing a handler (again): %v", err)
		}
	}
}

func TestSharedInformerRemoveForeignHandler(t *testing.T) {
	inf := newOurs(newSource(t), time.Second, nil)
	other := cache.NewSharedInformer(fcache.NewFakeControllerSource(), &v1.Pod{}, time.Second)
	h, err := other.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveEventHandler(h); err == nil {
		t.Error("removing another informer's registration succeeded")
	}
}

func TestStateSharedInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t, "pod1")
		inf := newOurs(source, time.Second, nil)
		l := newTestListener("listener", 0, "pod1")
		addListeners(t, inf, l)
		if inf.IsStopped() {
			t.Error("stopped before Run")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		synctest.Wait()
		l.check(t)
		if !inf.HasStarted() || inf.IsStopped() {
			t.Errorf("running informer: started %v, stopped %v", inf.HasStarted(), inf.IsStopped())
		}
		if inf.LastSyncResourceVersion() != "1" {
			t.Errorf("LastSyncResourceVersion = %q, want 1", inf.LastSyncResourceVersion())
		}
		cancel()
		<-done
		if !inf.IsStopped() {
			t.Error("not stopped after Run returned")
		}
		if _, err := inf.AddEventHandler(newTestListener("late", 0)); err == nil {
			t.Error("AddEventHandler on a stopped informer succeeded")
		}
		if err := inf.AddIndexers(cache.Indexers{"x": cache.MetaNamespaceIndexFunc}); err == nil {
			t.Error("AddIndexers on a stopped informer succeeded")
		}
	})
}

func TestRemoveOnStoppedSharedInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newOurs(newSource(t), 0, nil)
		h, err := inf.AddEventHandler(newTestListener("l", 0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		synctest.Wait()
		cancel()
		<-done
		if err := inf.RemoveEventHandler(h); err != nil {
			t.Errorf("RemoveEventHandler on a stopped informer: %v", err)
		}
	})
}

func TestAddWhileActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t)
		inf := newOurs(source, 0, nil)
		l1 := newTestListener("originalListener", 0, "pod1")
		l2 := newTestListener("listener2", 0, "pod1", "pod2")
		h1, _ := inf.AddEventHandler(l1)
		if h1.HasSynced() {
			t.Error("synced before Run")
		}
		run(t, inf)
		source.Add(pod("pod1", ""))
		synctest.Wait()
		l1.check(t)
		if !h1.HasSynced() {
			t.Error("registration not synced after its events")
		}
		l2.mu.Lock() // observe it before it has synced
		h2, _ := inf.AddEventHandler(l2)
		if h2.HasSynced() {
			t.Error("synced before processing anything")
		}
		l2.mu.Unlock()
		source.Add(pod("pod2", ""))
		synctest.Wait()
		l2.check(t)
		if !h2.HasSynced() {
			t.Error("not synced after processing")
		}
		l1.expected = []string{"pod1", "pod2"}
		l1.check(t)
	})
}

func TestShutDownEventHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newOurs(newSource(t), 0, nil)
		h, _ := inf.AddEventHandler(newTestListener("l", 0))
		run(t, inf)
		synctest.Wait()
		if err := cache.ShutDownEventHandler(inf, h); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIndexer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		source := newSource(t)
		for i, labels := range []map[string]string{{"a": "a-val", "b": "b-val1"}, {"b": "b-val2"}, {"a": "a-val2"}} {
			p := pod(fmt.Sprintf("pod%d", i+1), "")
			p.Labels = labels
			source.Add(p)
		}
		byLabel := func(obj any) ([]string, error) {
			m, _ := meta.Accessor(obj)
			var out []string
			for k, v := range m.GetLabels() {
				out = append(out, k+"="+v)
			}
			return out, nil
		}
		inf := newOurs(source, 0, cache.Indexers{"label": byLabel})
		if err := inf.AddIndexers(cache.Indexers{"ns": cache.MetaNamespaceIndexFunc}); err != nil {
			t.Fatal(err)
		}
		run(t, inf)
		synctest.Wait()
		if !inf.HasSynced() {
			t.Fatal("not synced")
		}
		got, err := inf.GetIndexer().ByIndex("label", "b=b-val2")
		if err != nil || len(got) != 1 || got[0].(*v1.Pod).Name != "pod2" {
			t.Errorf("ByIndex(label, b=b-val2) = %v, %v", got, err)
		}
		keys, _ := inf.GetIndexer().IndexKeys("ns", "")
		if len(keys) != 3 {
			t.Errorf("IndexKeys(ns) = %v, want 3", keys)
		}
	})
}
