package reflector

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

// A streaming list's initial events are transformed too, on reflector.New
// and on the drop-in ListerWatcher, before anything keeps them.
func TestTransformAppliesToStreamingLists(t *testing.T) {
	t.Run("reflector.New", func(t *testing.T) {
		e := newEnv(t, &probe{})
		o := Options{Lister: lister.Options{Server: streams()}}
		markTransformed(e, &o.Lister)
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := New(e.client, &corev1.ConfigMap{}, store, o)
		e.run(r, r.HasSynced, 5*time.Second)
		streamed := false
		for _, q := range e.srv.Requests() {
			streamed = streamed || (q.Options.SendInitialEvents != nil && *q.Options.SendInitialEvents)
		}
		var objs []runtime.Object
		for _, obj := range store.List() {
			objs = append(objs, obj.(runtime.Object))
		}
		if !streamed || len(objs) != 11 || transformedCount(objs) != 11 {
			t.Fatalf("streamed %v, store holds %d objects, %d transformed; want a streaming list of 11, all transformed", streamed, len(objs), transformedCount(objs))
		}
	})
	t.Run("drop-in ListerWatcher", func(t *testing.T) {
		e := newEnv(t, &probe{})
		lo := lister.Options{Server: streams()}
		markTransformed(e, &lo)
		lw := lister.NewListerWatcher(e.client, lo)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w, err := lw.WatchWithContext(ctx, streamingListOptions)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var added []runtime.Object
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				added = append(added, ev.Object)
			}
			if untilEndBookmark(ev) {
				break
			}
			if ev.Type == watch.Error {
				t.Fatalf("streaming list failed: %v", ev.Object)
			}
		}
		if len(added) != 11 || transformedCount(added) != 11 {
			t.Fatalf("%d initial events, %d transformed; want 11, all transformed", len(added), transformedCount(added))
		}
	})
}

// A transform that fails is never a silent drop: reflector.New keeps
// nothing of the list, counts the failure, and lists again after a
// growing backoff, never syncing an incomplete store.
func TestTransformFailureIsRetriedNotDropped(t *testing.T) {
	e := newEnv(t, &probe{})
	o := knobs.WithReflector(Options{Lister: lister.Options{Metrics: e.rec, Transform: func(obj any) (any, error) {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == "cm-03" {
			return nil, errors.New("cannot shrink cm-03")
		}
		return obj, nil
	}}}, knobs.Reflector{Backoff: policy.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}})
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := New(e.client, &corev1.ConfigMap{}, store, o)
	e.run(r, func() bool { return e.srv.Count("list") >= 3 }, 5*time.Second)
	if r.HasSynced() || len(store.List()) != 0 {
		t.Fatalf("synced %v with %d objects; want nothing kept while the transform fails", r.HasSynced(), len(store.List()))
	}
	if n := e.srv.Count("list"); n < 3 {
		t.Fatalf("%d lists; want the list retried", n)
	}
	if !slices.Contains(e.rec.lines(), "Fallback v1/configmaps "+"transform-failed") {
		t.Errorf("metrics %v; want %s counted", e.rec.lines(), "transform-failed")
	}
}
