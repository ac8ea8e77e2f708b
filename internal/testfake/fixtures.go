package testfake

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// ConfigMap returns a ConfigMap named name in namespace "ns" at
// resourceVersion rv, changed by each of opts in turn.
func ConfigMap(name, rv string, opts ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// InNamespace puts a ConfigMap in namespace ns.
func InNamespace(ns string) func(*corev1.ConfigMap) {
	return func(c *corev1.ConfigMap) { c.Namespace = ns }
}

// Labels sets a ConfigMap's labels from key, value pairs.
func Labels(kv ...string) func(*corev1.ConfigMap) {
	return func(c *corev1.ConfigMap) {
		for i := 0; i+1 < len(kv); i += 2 {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[kv[i]] = kv[i+1]
		}
	}
}

// Gone is the apiserver's answer to a resourceVersion it has compacted:
// 410 Expired, "too old resource version: 10 (40)".
func Gone() *apierrors.StatusError {
	return apierrors.NewResourceExpired("too old resource version: 10 (40)")
}

// TooLarge is the watch cache's answer to a resourceVersion newer than it
// holds (k8s.io/apiserver's cacher): 504 Timeout with the
// ResourceVersionTooLarge cause, "Too large resource version: 90, current:
// 40", and Retry-After retryAfter seconds.
func TooLarge(retryAfter int) *apierrors.StatusError {
	err := apierrors.NewTimeoutError("Too large resource version: 90, current: 40", retryAfter)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// ListRV returns a list's resourceVersion, continue token and
// remainingItemCount; it fails the test when obj is not a list.
func ListRV(tb testing.TB, obj runtime.Object) (rv, cont string, remaining *int64) {
	tb.Helper()
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
}

// Start runs run (a reflector's or an informer's Run) in a goroutine, with
// a context derived from ctx, until the test ends: at cleanup it cancels
// run's context and waits for run to return, and fails the test when run
// has not returned 30 seconds later. The stop it returns does the same
// earlier; calling it again is a no-op.
func Start(tb testing.TB, ctx context.Context, run func(ctx context.Context)) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			tb.Errorf("still running 30s after its context ended")
		}
	}
	tb.Cleanup(stop)
	return stop
}

// RunInformer runs inf until the test ends (see Start).
func RunInformer(tb testing.TB, inf cache.SharedIndexInformer) (stop func()) {
	tb.Helper()
	return Start(tb, context.Background(), inf.RunWithContext)
}

// Factory is what StartFactory needs of an informer factory: client-go's
// SharedInformerFactory and steadywatch's have it.
type Factory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// StartFactory starts f's informers until the test ends (then stops and
// shuts them down) and waits until each has synced; it fails the test if
// one did not.
func StartFactory(tb testing.TB, f Factory) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			tb.Fatalf("%v not synced", typ)
		}
	}
}
