package lister

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/go-logr/logr"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// scripted is the package's form of the shared scripted fake
// (testfake.Client): each List call is answered by the function at its index
// (the last one repeats; answers may grow between calls), each Watch by
// watchFn, and every call's options are kept.
type scripted struct {
	t       *testing.T
	answers []func(o metav1.ListOptions) (runtime.Object, error)
	watchFn func(o metav1.ListOptions) (watch.Interface, error)
	fake    testfake.Lazy
}

func (s *scripted) build() *testfake.Client {
	answer := func(n int, o metav1.ListOptions) (runtime.Object, error) { return testfake.Answers(s.answers...)(n, o) }
	return &testfake.Client{T: s.t, ListFn: answer, WatchFn: func(_ int, o metav1.ListOptions) (watch.Interface, error) {
		if s.watchFn == nil {
			return nil, fmt.Errorf("no watch scripted")
		}
		return s.watchFn(o)
	}}
}

func (s *scripted) client() *testfake.Client { return s.fake.Get(s.build) }
func (s *scripted) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return s.client().List(ctx, o)
}
func (s *scripted) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return s.client().Watch(ctx, o)
}

// calls and watchCalls return the options of every list and watch so far.
func (s *scripted) calls() []metav1.ListOptions      { return s.client().Lists() }
func (s *scripted) watchCalls() []metav1.ListOptions { return s.client().Watches() }

// newServer returns a steadywatchtest apiserver of ConfigMaps with faults f
// holding objs, for tests that need real resourceVersion semantics rather
// than a script; its watches end at cleanup.
func newServer(t *testing.T, f steadywatchtest.Faults, objs ...*corev1.ConfigMap) *steadywatchtest.Server[*corev1.ConfigMap] {
	t.Helper()
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{Faults: f})
	t.Cleanup(srv.Close)
	for _, o := range objs {
		if _, err := srv.Create(o); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

func page(rv, cont string, names ...string) func(metav1.ListOptions) (runtime.Object, error) {
	return func(metav1.ListOptions) (runtime.Object, error) { return cmList(rv, cont, names...), nil }
}

func fail(err error) func(metav1.ListOptions) (runtime.Object, error) {
	return func(metav1.ListOptions) (runtime.Object, error) { return nil, err }
}

func cmList(rv, cont string, names ...string) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, n := range names {
		l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns", ResourceVersion: rv}})
	}
	if cont != "" {
		n := int64(7)
		l.RemainingItemCount = &n
	}
	return l
}

func names(obj runtime.Object) []string {
	var out []string
	for _, cm := range obj.(*corev1.ConfigMapList).Items {
		out = append(out, cm.Name)
	}
	return out
}

// fastPolicy keeps backoff delays tiny and jitter off for tests.
func fastPolicy() policy.Policy {
	return policy.Policy{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Jitter: -1, MaxRetries: 2}}
}

type countingRecorder struct {
	metricsnop.Nop
	mu        sync.Mutex
	lists     []string
	fallbacks []string
}

func (r *countingRecorder) List(name, sem, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, sem+"="+outcome)
}

func (r *countingRecorder) Fallback(name, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallbacks = append(r.fallbacks, reason)
}

func staticServer(match, streaming capability.Support) compat.Server {
	return capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{
		capability.ResourceVersionMatch: match, capability.StreamingList: streaming,
	}})
}

func reasons(rec *Record) []fallback.ReasonCode {
	var out []fallback.ReasonCode
	for _, e := range rec.Fallbacks {
		out = append(out, e.Reason)
	}
	return out
}

func discard() logr.Logger { return logr.Discard() }

func schemaGK() schema.GroupKind { return schema.GroupKind{Kind: "ListOptions"} }

func ptrTo[T any](v T) *T { return &v }

// mustShape is list's item-by-item shape.
func mustShape(t testing.TB, list runtime.Object) decode.Shape {
	t.Helper()
	sh, ok := decode.ShapeOf(reflect.TypeOf(list))
	if !ok {
		t.Fatalf("%T: no item-by-item shape", list)
	}
	return sh
}
