package steadywatchtest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// InNamespace returns a view of the server restricted to namespace ns
// ("" is all namespaces), like /api/v1/namespaces/<ns>/<resource>: its
// List, Watch and ListerWatcher serve that namespace. Everything else (the
// objects, writes, faults, the request log) is the one server's.
func (s *Server[T]) InNamespace(ns string) *Server[T] { return &Server[T]{store: s.store, ns: ns} }

// ListerWatcher returns the server (all namespaces, or the namespace of
// InNamespace) as a client-go cache.ListerWatcher, for
// cache.NewSharedIndexInformer or cache.NewReflector. It also implements
// cache.ListerWatcherWithContext. client-go v0.35+ informers stream their
// initial list (sendInitialEvents) through it: the server answers as an
// apiserver with WatchList on does.
func (s *Server[T]) ListerWatcher() cache.ListerWatcher {
	return &listerWatcher{list: s.List, watch: s.Watch}
}

// listerWatcher implements cache.ListerWatcher and cache.ListerWatcherWithContext.
type listerWatcher struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

var (
	_ cache.ListerWatcher            = (*listerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*listerWatcher)(nil)
)

// List implements cache.Lister.
func (lw *listerWatcher) List(o metav1.ListOptions) (runtime.Object, error) {
	return lw.list(context.Background(), o)
}

// Watch implements cache.Watcher. The watch ends when stopped.
func (lw *listerWatcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return lw.watch(context.Background(), o)
}

// ListWithContext implements cache.ListerWithContext.
func (lw *listerWatcher) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return lw.list(ctx, o)
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *listerWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return lw.watch(ctx, o)
}

// Install puts the server behind a client-go fake clientset for resource
// (e.g. "configmaps"): list and watch actions on it are answered by the
// server (in the action's namespace), every other verb still goes to the
// clientset's own tracker. Pass the clientset's embedded Fake:
//
//	cs := fake.NewClientset()
//	srv.Install(&cs.Fake, "configmaps")
//
// Two limits of client-go's fakes: a cluster-scoped (root) list action keeps
// only the selectors of its ListOptions (resourceVersion and limit are lost
// before the reactor sees them), and the fake clientset tells informers it
// does not support streaming lists (IsWatchListSemanticsUnSupported), so
// informers built on it list and watch. Use ListerWatcher to exercise
// streaming lists.
func (s *Server[T]) Install(f *clienttesting.Fake, resource string) {
	f.PrependReactor(verbList, resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		la, ok := a.(clienttesting.ListActionImpl)
		if !ok {
			return true, nil, fmt.Errorf("steadywatchtest: unexpected list action %T", a)
		}
		obj, err := s.list(context.Background(), la.GetNamespace(), la.ListOptions)
		return true, obj, err
	})
	f.PrependWatchReactor(resource, func(a clienttesting.Action) (bool, watch.Interface, error) {
		wa, ok := a.(clienttesting.WatchActionImpl)
		if !ok {
			return true, nil, fmt.Errorf("steadywatchtest: unexpected watch action %T", a)
		}
		w, err := s.watch(context.Background(), wa.GetNamespace(), wa.ListOptions)
		if err != nil {
			return true, nil, err
		}
		return true, w, nil
	})
}
