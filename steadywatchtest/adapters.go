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

// Namespace is a view of a Server restricted to one namespace, like
// /api/v1/namespaces/<ns>/<resource>. It has the same List and Watch methods.
type Namespace[T runtime.Object] struct {
	s  *Server[T]
	ns string
}

// InNamespace returns the view of namespace ns ("" is all namespaces).
func (s *Server[T]) InNamespace(ns string) Namespace[T] { return Namespace[T]{s: s, ns: ns} }

// List serves a list in the view's namespace.
func (n Namespace[T]) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return n.s.list(ctx, n.ns, o)
}

// Watch serves a watch in the view's namespace.
func (n Namespace[T]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return n.s.watch(ctx, n.ns, o)
}

// ListerWatcher returns the view as a client-go cache.ListerWatcher (with
// context), for cache.NewSharedIndexInformer or cache.NewReflector.
// client-go v0.35+ informers stream their initial list (sendInitialEvents)
// through it: the server answers as an apiserver with WatchList on does.
func (n Namespace[T]) ListerWatcher() *ListerWatcher {
	return &ListerWatcher{list: n.List, watch: n.Watch}
}

// ListerWatcher returns the server (all namespaces) as a client-go
// cache.ListerWatcher; see Namespace.ListerWatcher.
func (s *Server[T]) ListerWatcher() *ListerWatcher { return s.InNamespace("").ListerWatcher() }

// ListerWatcher implements cache.ListerWatcher and cache.ListerWatcherWithContext.
type ListerWatcher struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

var (
	_ cache.ListerWatcher            = (*ListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)
)

// List implements cache.Lister.
func (lw *ListerWatcher) List(o metav1.ListOptions) (runtime.Object, error) {
	return lw.list(context.Background(), o)
}

// Watch implements cache.Watcher. The watch ends when stopped.
func (lw *ListerWatcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return lw.watch(context.Background(), o)
}

// ListWithContext implements cache.ListerWithContext.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return lw.list(ctx, o)
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
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
