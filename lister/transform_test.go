package lister

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// countingBody counts the bytes read from a list body.
type countingBody struct {
	r io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

// The transform runs on each item as soon as it is decoded, while most of
// the body is still unread, on every decode path (typed protobuf and JSON,
// unstructured, metadata), and every item comes out transformed.
func TestTransformRunsWhileDecoding(t *testing.T) {
	src := testfake.RichConfigMaps(400)
	metaList := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: src.ListMeta}
	for _, cm := range src.Items {
		metaList.Items = append(metaList.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: cm.ObjectMeta})
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		decode func(io.Reader, *transformer) (runtime.Object, error)
	}{
		{"typed protobuf", testfake.EncodeList(t, src, true), func(r io.Reader, tf *transformer) (runtime.Object, error) {
			return decode.List(r, mustShape(t, &corev1.ConfigMapList{}), &decode.Each{Transform: tf.each()})
		}},
		{"typed json", testfake.EncodeList(t, src, false), func(r io.Reader, tf *transformer) (runtime.Object, error) {
			return decode.List(r, mustShape(t, &corev1.ConfigMapList{}), &decode.Each{Transform: tf.each()})
		}},
		{"unstructured json", testfake.EncodeList(t, src, false), func(r io.Reader, tf *transformer) (runtime.Object, error) {
			return decode.Unstructured(r, &decode.Each{Transform: tf.each()})
		}},
		{"metadata protobuf", testfake.EncodeList(t, metaList, true), func(r io.Reader, tf *transformer) (runtime.Object, error) {
			return decode.List(r, decode.MetadataList, &decode.Each{Transform: tf.each()})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &countingBody{r: bytes.NewReader(tc.body)}
			var readAtCall []int
			var kinds []string
			tf := &transformer{fn: func(obj any) (any, error) {
				readAtCall = append(readAtCall, body.n)
				if u, ok := obj.(*unstructured.Unstructured); ok {
					kinds = append(kinds, u.GetKind())
				}
				return StripManagedFields(obj)
			}}
			got, err := tc.decode(body, tf)
			if err != nil {
				t.Fatal(err)
			}
			items, err := meta.ExtractList(got)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != len(src.Items) || len(readAtCall) != len(src.Items) {
				t.Fatalf("%d items, transform called %d times; want %d", len(items), len(readAtCall), len(src.Items))
			}
			for i, it := range items {
				m, _ := meta.Accessor(it)
				if m.GetName() != src.Items[i].Name || m.GetResourceVersion() != src.Items[i].ResourceVersion {
					t.Fatalf("item %d is %s at %s; want %s at %s", i, m.GetName(), m.GetResourceVersion(), src.Items[i].Name, src.Items[i].ResourceVersion)
				}
				if m.GetManagedFields() != nil {
					t.Fatalf("item %d kept its managedFields", i)
				}
			}
			if readAtCall[0] >= len(tc.body)/2 {
				t.Errorf("the first item was transformed after %d of %d bytes were read: not while decoding", readAtCall[0], len(tc.body))
			}
			if kinds != nil && slices.ContainsFunc(kinds, func(k string) bool { return k != "ConfigMap" }) {
				t.Errorf("unstructured items reached the transform without the list's kind: %v", slices.Compact(kinds))
			}
		})
	}
}

// A transform that fails, returns nothing usable or changes an object's
// identity is a *TransformError; one that clears the identity gets it back.
func TestTransformChecksWhatItReturns(t *testing.T) {
	cm := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u-1", ResourceVersion: "7"}}
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		fn     func(any) (any, error)
		reason string // "" for success
	}{
		{"error", func(any) (any, error) { return nil, boom }, "returned an error"},
		{"nil", func(any) (any, error) { return nil, nil }, "not an object"},
		{"typed nil", func(any) (any, error) { return (*corev1.ConfigMap)(nil), nil }, "not an object"},
		{"another type", func(any) (any, error) { return &corev1.Secret{}, nil }, "must return the type it is given"},
		{"renamed", func(o any) (any, error) { o.(*corev1.ConfigMap).Name = "b"; return o, nil }, `metadata.name from "a" to "b"`},
		{"newer resourceVersion", func(o any) (any, error) { o.(*corev1.ConfigMap).ResourceVersion = "9"; return o, nil }, "metadata.resourceVersion"},
		{"cleared metadata", func(any) (any, error) { return &corev1.ConfigMap{Data: map[string]string{"k": "v"}}, nil }, ""},
		{"another kind", func(o any) (any, error) { o.(*corev1.ConfigMap).Kind = "Secret"; return o, nil }, "apiVersion/kind"},
		{"cleared kind", func(o any) (any, error) {
			cm := o.(*corev1.ConfigMap)
			cm.TypeMeta = metav1.TypeMeta{}
			return cm, nil
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := (&transformer{fn: tc.fn}).apply(cm())
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				m, _ := meta.Accessor(out)
				if m.GetNamespace() != "ns" || m.GetName() != "a" || m.GetUID() != "u-1" || m.GetResourceVersion() != "7" || out.GetObjectKind().GroupVersionKind().Kind != "ConfigMap" {
					t.Errorf("identity not restored: %s/%s uid %s rv %s kind %v", m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion(), out.GetObjectKind().GroupVersionKind())
				}
				return
			}
			var te *TransformError
			if !errors.As(err, &te) || !errors.Is(err, ErrTransform) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v; want a *TransformError saying %q", err, tc.reason)
			}
			if te.Name != "a" || te.Namespace != "ns" || te.ResourceVersion != "7" {
				t.Errorf("error names %s/%s at %s", te.Namespace, te.Name, te.ResourceVersion)
			}
			if tc.name == "error" && !errors.Is(err, boom) {
				t.Errorf("the transform's own error is not wrapped: %v", err)
			}
		})
	}
	// A typed object decoded without apiVersion and kind may be given them.
	bare := cm()
	bare.TypeMeta = metav1.TypeMeta{}
	out, err := (&transformer{fn: func(o any) (any, error) {
		o.(*corev1.ConfigMap).TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		return o, nil
	}}).apply(bare)
	if err != nil {
		t.Fatalf("setting the kind of an object without one: %v", err)
	}
	if k := out.GetObjectKind().GroupVersionKind().Kind; k != "ConfigMap" {
		t.Errorf("kind %q after the transform set it; want ConfigMap", k)
	}
}

// Over a client whose lists are read whole, the transform runs on every
// item of every list and on every watch event's object, through the Lister
// and its ListerWatcher alike; a failure fails the list, ends the watch
// with an error event, and is counted.
func TestTransformOverAnyClient(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{})
	for _, name := range []string{"a", "b", "c"} {
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}}})
	}
	failOn := ""
	transform := func(obj any) (any, error) {
		if m, _ := meta.Accessor(obj); m.GetName() == failOn {
			return nil, errors.New("refused")
		}
		return StripManagedFields(obj)
	}
	rec := &countingRecorder{}
	lw := NewListerWatcher(srv.InNamespace("ns"), Options{Transform: transform, Metrics: rec})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	list, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.(*corev1.ConfigMapList).Items {
		if cm.ManagedFields != nil {
			t.Errorf("%s listed with managedFields", cm.Name)
		}
	}
	if stored, _ := srv.Get("ns", "a"); stored.ManagedFields == nil {
		t.Fatal("the transform changed the server's own object: the test server shares objects")
	}

	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: srv.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	failOn = "bad" // read by the watch's goroutine only after this write (the create below happens after it)
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}}})
	ev := <-w.ResultChan()
	if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || !ok || cm.Name != "d" || cm.ManagedFields != nil {
		t.Fatalf("first event %s %#v; want d ADDED without managedFields", ev.Type, ev.Object)
	}
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad"}})
	ev = <-w.ResultChan()
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st.Reason != statusReasonTransformFailed || !strings.Contains(st.Message, "ns/bad") {
		t.Fatalf("after a failed transform: %s %#v; want the TransformFailed error event naming ns/bad", ev.Type, ev.Object)
	}
	if _, open := <-w.ResultChan(); open {
		t.Error("the watch went on after its transform failed")
	}

	_, err = lw.ListWithContext(ctx, metav1.ListOptions{})
	if !errors.Is(err, ErrTransform) {
		t.Fatalf("list with an object the transform refuses: err %v; want ErrTransform", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := countOf(rec.fallbacks, "transform-failed"); n != 2 {
		t.Errorf("%d %s counted (%v); want 2 (the watch, the list)", n, "transform-failed", rec.fallbacks)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, s := range xs {
		if s == x {
			n++
		}
	}
	return n
}

// Through a typed clientset's client (FromClientset), Transform runs while
// the response is still arriving: the server sends half the body, then
// waits until the first item was transformed before it sends the rest.
func TestTransformRunsBeforeTheListArrived(t *testing.T) {
	body := testfake.EncodeList(t, testfake.RichConfigMaps(400), true)
	firstTransformed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-firstTransformed:
		case <-time.After(5 * time.Second):
			t.Error("the first item was not transformed before the whole list arrived")
		}
		_, _ = w.Write(body[len(body)/2:])
	}))
	defer srv.Close()
	c, err := FromClientset(kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL}), &corev1.ConfigMap{}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	l := New(c, Options{Transform: func(obj any) (any, error) {
		once.Do(func() { close(firstTransformed) })
		return StripManagedFields(obj)
	}})
	list, err := l.Client().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := list.(*corev1.ConfigMapList).Items
	if len(items) != 400 || slices.ContainsFunc(items, func(cm corev1.ConfigMap) bool { return cm.ManagedFields != nil }) {
		t.Fatalf("%d items, some with managedFields; want 400 without", len(items))
	}
}
