package reflector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// waitAsync starts r.WaitForResourceVersion(rv) and returns its result channel.
func waitAsync(r *Reflector, rv string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- r.WaitForResourceVersion(ctx, rv)
	}()
	return done
}

func TestWaitForResourceVersionReturnsOnceTheStoreHoldsTheObject(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, w := startWatching(t, &fakeClient{ListFn: emptyAt("10")}, store, fastOptions(&testfake.Recorder{}))
	if err := waitAsyncResult(r, "10"); err != nil {
		t.Fatalf("the listed version: %v", err)
	}
	done := waitAsync(r, "11")
	w.Add(testfake.ConfigMap("a", "11"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	obj, ok, _ := store.GetByKey("ns/a")
	if !ok || obj.(*corev1.ConfigMap).ResourceVersion != "11" {
		t.Fatalf("the wait for 11 returned before the store held the object at 11: %v %v", ok, obj)
	}
	done = waitAsync(r, "12")
	w.Delete(testfake.ConfigMap("a", "12"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := store.GetByKey("ns/a"); ok {
		t.Fatal("the wait for the deletion's version returned while the store still held the object")
	}
}

func TestWaitForResourceVersionIsSatisfiedByABookmarkNewerThanEveryObject(t *testing.T) {
	r, w := startWatching(t, &fakeClient{ListFn: emptyAt("10")}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
	done := waitAsync(r, "15") // a write of another resource at 15: no object event here
	w.Add(testfake.ConfigMap("a", "11"))
	select {
	case err := <-done:
		t.Fatalf("the wait for 15 returned with the store at 11: %v", err)
	case <-time.After(20 * time.Millisecond): // a negative check: it must not return
	}
	w.Action("BOOKMARK", bookmark("20", false))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitForResourceVersionEndsWithItsContext(t *testing.T) {
	r, _ := startWatching(t, &fakeClient{ListFn: emptyAt("10")}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := r.WaitForResourceVersion(ctx, "11"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait nothing satisfies = %v, want its context's deadline", err)
	}
}

// An aggregated API with opaque resourceVersions: learnt from the list's
// version, every wait fails at once.
func TestWaitForResourceVersionFailsAtOnceOnAServerWithOpaqueVersions(t *testing.T) {
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) { return cmList("opaque-b7f3"), nil }}
	r, _ := startWatching(t, fc, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.WaitForResourceVersion(ctx, "5"); !errors.Is(err, ErrIncomparableResourceVersion) {
		t.Fatalf("wait on an opaque server = %v, want ErrIncomparableResourceVersion", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the wait used up its context instead of failing at once")
	}
}

func TestTheStoresResourceVersionIsReportedAtEveryAdvance(t *testing.T) {
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	r, w := startWatching(t, &fakeClient{ListFn: emptyAt("10")}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	w.Add(testfake.ConfigMap("a", "11"))
	if err := waitAsyncResult(r, "11"); err != nil {
		t.Fatal(err)
	}
	// The wait ends when the store reflects 11; the report follows it.
	testfake.WaitFor(t, "the report of 11", func() bool { return len(rec.Labels(testfake.StoreResourceVersion)) >= 2 })
	if rvs := rec.Labels(testfake.StoreResourceVersion); len(rvs) != 2 || rvs[0] != "10" || rvs[1] != "11" {
		t.Fatalf("reported store resourceVersions %v, want [10 11]", rvs)
	}
}

func waitAsyncResult(r *Reflector, rv string) error { return <-waitAsync(r, rv) }

func TestWaitForResourceVersionOfClientGosInformerSaysItCannot(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, nil)
	if err := WaitForResourceVersion(context.Background(), inf, "1"); !errors.Is(err, ErrNoResourceVersionWait) {
		t.Fatalf("client-go's informer: %v, want ErrNoResourceVersionWait", err)
	}
}
