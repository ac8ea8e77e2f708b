package canonical

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// fakeLW returns a fixed list and a fake watch. It is a fake for pure logic:
// the decorator's mapping of lists and events. Real servers are in e2e/canonical.
type fakeLW struct {
	list runtime.Object
	w    *watch.FakeWatcher
}

func (f *fakeLW) List(metav1.ListOptions) (runtime.Object, error)   { return f.list, nil }
func (f *fakeLW) Watch(metav1.ListOptions) (watch.Interface, error) { return f.w, nil }

type noWatchListLW struct{ *fakeLW }

func (noWatchListLW) IsWatchListSemanticsUnSupported() bool { return true }

type recorder struct {
	metricsnop.Nop
	mu  sync.Mutex
	got []string
}

func (r *recorder) Fallback(name, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, name+" "+reason)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// logSink captures log lines at every verbosity.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, args)
	}, funcr.Options{Verbosity: 2})
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func listOf(t *testing.T, items ...string) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]any{
		"apiVersion": "gateway.example.io/v1alpha2", "kind": "BackendTLSPolicyList",
		"metadata": map[string]any{"resourceVersion": "99", "continue": "tok"},
	}}
	for _, js := range items {
		l.Items = append(l.Items, *obj(t, js))
	}
	return l
}

func TestWrapList(t *testing.T) {
	for _, policy := range []bool{false, true} {
		t.Run(fmt.Sprintf("PassThrough=%v", policy), func(t *testing.T) {
			in := listOf(t, v1alpha1Obj, v1alpha2Obj, v1beta1Obj, unknownObj)
			before := make([]string, len(in.Items))
			for i := range in.Items {
				before[i] = mustJSON(t, &in.Items[i])
			}
			rec := &recorder{}
			logs := &logSink{}
			var rejections []Rejection
			lg := logs.logger()
			lw := wrap(&fakeLW{list: in}, btlsChain(t), Options{
				PassThrough: policy, Name: "btls", Metrics: rec,
				OnReject: func(_ context.Context, r Rejection) { rejections = append(rejections, r) },
			})
			got, err := lw.ListWithContext(klog.NewContext(context.Background(), lg), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out := got.(*unstructured.UnstructuredList)
			if out.GetResourceVersion() != "99" || out.GetContinue() != "tok" {
				t.Fatalf("list metadata lost: rv=%q continue=%q", out.GetResourceVersion(), out.GetContinue())
			}
			names := []string{}
			for i := range out.Items {
				names = append(names, out.Items[i].GetName())
			}
			want := map[bool]string{false: "a b", true: "a b c d"}[policy]
			if strings.Join(names, " ") != want {
				t.Fatalf("items %v, want %s", names, want)
			}
			if HasField("spec", "tls")(&out.Items[0]) || !HasField("spec", "validation")(&out.Items[0]) {
				t.Fatalf("item a not converted: %s", mustJSON(t, &out.Items[0]))
			}
			if policy && mustJSON(t, &out.Items[2]) != before[2] {
				t.Fatal("PassThrough changed a rejected item")
			}
			for i := range in.Items {
				if mustJSON(t, &in.Items[i]) != before[i] {
					t.Fatalf("input item %d modified", i)
				}
			}
			action := map[bool]string{false: "skip", true: "pass"}[policy]
			wantMetrics := []string{"btls canonical:" + action + ":newer-shape", "btls canonical:" + action + ":unrecognized"}
			if fmt.Sprint(rec.all()) != fmt.Sprint(wantMetrics) {
				t.Fatalf("metrics %v, want %v", rec.all(), wantMetrics)
			}
			if len(rejections) != 2 || rejections[0].Err.Name != "c" || rejections[0].Event != "" || rejections[0].Action != action {
				t.Fatalf("OnReject calls %+v", rejections)
			}
			text := logs.text()
			for _, want := range []string{`"namespace"="ns" "name"="c" "reason"="newer-shape"`, `"shape"="v1beta1"`, `"name"="d" "reason"="unrecognized"`} {
				if !strings.Contains(text, want) {
					t.Errorf("logs lack %s:\n%s", want, text)
				}
			}
			if strings.Contains(text, "example") || strings.Contains(text, "cookie") {
				t.Errorf("logs leak object content:\n%s", text)
			}
		})
	}
}

func TestWrapListNotUnstructured(t *testing.T) {
	lw := wrap(&fakeLW{list: &metav1.List{}}, btlsChain(t), Options{})
	_, err := lw.List(metav1.ListOptions{})
	if !errors.Is(err, errNotUnstructured) {
		t.Fatalf("err = %v", err)
	}
}

// collect reads w until it closes, failing after a deadline.
func collect(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	return testfake.Drain(t, w, 5*time.Second)
}

func describe(t *testing.T, evs []watch.Event) []string {
	var out []string
	for _, ev := range evs {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			out = append(out, fmt.Sprintf("%s %T", ev.Type, ev.Object))
			continue
		}
		s := fmt.Sprintf("%s %s rv=%s", ev.Type, u.GetName(), u.GetResourceVersion())
		if r := u.GetAnnotations()[RejectedAnnotation]; r != "" {
			s += " rejected=" + r
		}
		if HasField("spec", "validation")(u) {
			s += " validation"
		}
		if HasField("spec", "tls")(u) {
			s += " tls"
		}
		out = append(out, s)
	}
	return out
}

func TestWrapWatchEvents(t *testing.T) {
	bookmark := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.example.io/v1alpha2", "kind": "BackendTLSPolicy",
		"metadata": map[string]any{"resourceVersion": "20", "annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}},
	}}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	in := []watch.Event{
		// Initial events of a streaming list, then its end bookmark.
		{Type: watch.Added, Object: obj(t, v1alpha1Obj)},
		{Type: watch.Added, Object: obj(t, v1beta1Obj)},
		{Type: watch.Added, Object: obj(t, v1alpha2Obj)},
		{Type: watch.Bookmark, Object: bookmark},
		// a: old -> still old; b: moves to the future shape; b deleted; d (unknown) deleted.
		{Type: watch.Modified, Object: obj(t, v1alpha1Obj)},
		{Type: watch.Modified, Object: obj(t, strings.Replace(v1beta1Obj, `"name":"c"`, `"name":"b"`, 1))},
		{Type: watch.Deleted, Object: obj(t, v1alpha1Obj)},
		{Type: watch.Deleted, Object: obj(t, unknownObj)},
		{Type: watch.Error, Object: status},
	}
	cases := map[bool][]string{
		false: {
			"ADDED a rv=10 validation",
			"ADDED b rv=11 validation",
			"BOOKMARK  rv=20",
			"MODIFIED a rv=10 validation",
			"DELETED b rv=12 rejected=newer-shape",
			"DELETED a rv=10 validation",
			"DELETED d rv=13 rejected=unrecognized",
			"ERROR *v1.Status",
		},
		true: {
			"ADDED a rv=10 validation",
			"ADDED c rv=12",
			"ADDED b rv=11 validation",
			"BOOKMARK  rv=20",
			"MODIFIED a rv=10 validation",
			"MODIFIED b rv=12",
			"DELETED a rv=10 validation",
			"DELETED d rv=13 validation",
			"ERROR *v1.Status",
		},
	}
	for policy, want := range cases {
		t.Run(fmt.Sprintf("PassThrough=%v", policy), func(t *testing.T) {
			before := make([]string, len(in))
			for i, ev := range in {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					before[i] = mustJSON(t, u)
				}
			}
			fw := watch.NewFakeWithChanSize(len(in), false)
			for _, ev := range in {
				fw.Action(ev.Type, ev.Object)
			}
			fw.Stop() // closes the channel after the buffered events
			rec := &recorder{}
			lw := wrap(&fakeLW{w: fw}, btlsChain(t), Options{PassThrough: policy, Metrics: rec})
			w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := collect(t, w)
			if fmt.Sprint(describe(t, got)) != fmt.Sprint(want) {
				t.Fatalf("events:\n got %q\nwant %q", describe(t, got), want)
			}
			// BOOKMARK and ERROR objects are passed through as the same objects.
			for _, ev := range got {
				if ev.Type == watch.Bookmark && ev.Object != bookmark || ev.Type == watch.Error && ev.Object != status {
					t.Fatalf("%s object replaced", ev.Type)
				}
			}
			for i, ev := range in {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && mustJSON(t, u) != before[i] {
					t.Fatalf("event %d's object modified", i)
				}
			}
			if !policy {
				want := []string{"canonical canonical:skip:newer-shape", "canonical canonical:delete:newer-shape", "canonical canonical:delete:unrecognized"}
				if fmt.Sprint(rec.all()) != fmt.Sprint(want) {
					t.Fatalf("metrics %v want %v", rec.all(), want)
				}
			}
		})
	}
}

func TestTombstoneKeepsMetadataOnly(t *testing.T) {
	u := obj(t, unknownObj)
	ts := tombstone(u, "unrecognized")
	if ts.GetName() != "d" || ts.GetNamespace() != "ns" || ts.GetResourceVersion() != "13" || ts.GetLabels()["x"] != "y" {
		t.Fatalf("tombstone lost metadata: %s", mustJSON(t, ts))
	}
	if _, ok := ts.Object["spec"]; ok {
		t.Fatal("tombstone carries spec")
	}
	key, err := cache.MetaNamespaceKeyFunc(ts)
	if err != nil || key != "ns/d" {
		t.Fatalf("store key %q, %v", key, err)
	}
	if u.GetAnnotations()[RejectedAnnotation] != "" {
		t.Fatal("tombstone annotation written into the original object")
	}
}

func TestWrapWatchStop(t *testing.T) {
	fw := watch.NewFake()
	w, err := wrap(&fakeLW{w: fw}, btlsChain(t), Options{}).Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w.Stop() // idempotent
	collect(t, w)
	if !fw.IsStopped() {
		t.Fatal("inner watch not stopped")
	}
}

func TestWrapWatchContextCancel(t *testing.T) {
	fw := watch.NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wrap(&fakeLW{w: fw}, btlsChain(t), Options{}).WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	collect(t, w)
	if !fw.IsStopped() {
		t.Fatal("inner watch not stopped after the context ended")
	}
}

func TestWrapForwardsWatchListSemantics(t *testing.T) {
	plain := wrap(&fakeLW{}, btlsChain(t), Options{})
	no := wrap(noWatchListLW{&fakeLW{}}, btlsChain(t), Options{})
	if watchlist.DoesClientNotSupportWatchListSemantics(plain) || !watchlist.DoesClientNotSupportWatchListSemantics(no) {
		t.Fatal("IsWatchListSemanticsUnSupported not forwarded")
	}
}

func TestWrapZeroOptions(t *testing.T) {
	lw := wrap(&fakeLW{list: listOf(t, unknownObj)}, btlsChain(t), Options{})
	got, err := lw.List(metav1.ListOptions{})
	if err != nil || len(got.(*unstructured.UnstructuredList).Items) != 0 {
		t.Fatalf("zero Options must leave rejected objects out: %v, %v", got, err)
	}
}

// wrap is Wrap, returning the decorator's own type.
func wrap(lw cache.ListerWatcher, chain *Chain, opts Options) *listerWatcher {
	return Wrap(lw, chain, opts).(*listerWatcher)
}
