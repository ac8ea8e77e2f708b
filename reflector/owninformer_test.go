package reflector

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// The informer's SetWatchErrorHandler is given the reflector's failed
// watches (here every watch answered 410 Gone), with a *cache.Reflector
// that carries the reflector's name; the informer still syncs and relists.
func TestInformerWatchErrorHandlerGetsTheReflectorsErrors(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	t.Cleanup(srv.Close)
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	srv.SetFaults(steadywatchtest.Faults{GoneOnEveryWatch: true})
	inf := NewSharedIndexInformerWithOptions(srv.ListerWatcher(), &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, lister.Options{Name: "handled"})
	var (
		mu    sync.Mutex
		errs  []error
		names []string
	)
	if err := inf.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
		if r != nil {
			names = append(names, r.Name())
		}
	}); err != nil {
		t.Fatal(err)
	}
	a, ok := inf.(*adoptedInformer)
	if !ok || a.reflector == nil {
		t.Fatalf("%T does not hold its reflector", inf)
	}
	// A short backoff: the default only makes the test slower.
	a.reflector.o.Reflector.Backoff.Initial, a.reflector.o.Reflector.Backoff.Max = time.Millisecond, 5*time.Millisecond
	a.reflector.backoff = a.reflector.o.Backoff.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(errs)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) < 2 {
		t.Fatalf("the handler got %d errors, want the reflector's failed watches", len(errs))
	}
	if !apierrors.IsGone(errs[0]) && !apierrors.IsResourceExpired(errs[0]) {
		t.Errorf("first error %v, want 410 Gone", errs[0])
	}
	if len(names) == 0 || names[0] != "handled" {
		t.Errorf("reflector names %v, want the reflector's name", names)
	}
	if !inf.HasSynced() || len(inf.GetStore().List()) != 1 {
		t.Errorf("synced %v with %d objects, want 1", inf.HasSynced(), len(inf.GetStore().List()))
	}
	if err := inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}); err == nil {
		t.Error("SetWatchErrorHandler after Run succeeded")
	}
}
