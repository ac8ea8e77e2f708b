package lister

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/vocab"
)

// everyTypedResource returns every typed client of kubernetes.Interface as
// a TypedResource, found back from its item type: no resource of the
// clientset is missing from client-go's scheme and no list type is listed
// by two clients (TestTypedClientRequestsMatch runs it).
func everyTypedResource(t *testing.T) []TypedResource {
	t.Helper()
	cs := reflect.TypeFor[kubernetes.Interface]()
	var out []TypedResource
	for i := range cs.NumMethod() {
		gm := cs.Method(i)
		if gm.Type.NumIn() != 0 || gm.Type.NumOut() != 1 || gm.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		for j := range gm.Type.Out(0).NumMethod() {
			rm := gm.Type.Out(0).Method(j)
			if rm.Type.NumOut() != 1 || rm.Type.Out(0).Kind() != reflect.Interface {
				continue
			}
			list, ok := rm.Type.Out(0).MethodByName("List")
			if !ok || list.Type.NumOut() != 2 || list.Type.Out(0).Kind() != reflect.Pointer {
				continue
			}
			items, ok := list.Type.Out(0).Elem().FieldByName("Items")
			if !ok || items.Type.Kind() != reflect.Slice {
				continue
			}
			obj, ok := reflect.New(items.Type.Elem()).Interface().(runtime.Object)
			if !ok {
				continue
			}
			tr, err := TypedResourceOf(obj)
			if err != nil {
				t.Errorf("%s.%s: %v", gm.Name, rm.Name, err)
				continue
			}
			if tr.String() != gm.Name+"."+rm.Name {
				t.Errorf("%T: found %s; want %s.%s", obj, tr, gm.Name, rm.Name)
			}
			out = append(out, tr)
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d typed clients found on kubernetes.Interface", len(out))
	}
	return out
}

// For every typed client of the clientset, namespaced or not, in a
// namespace and in all, FromClientset's list sends exactly the request the
// typed client's List sends (method, path, query, Accept header), and
// returns the same list: the resource name it derives is the one
// client-gen wrote.
func TestTypedClientRequestsMatch(t *testing.T) {
	cfg, answer, last := answering(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{
		LabelSelector: "a=b", FieldSelector: "metadata.name=x", ResourceVersion: "5",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 7, Continue: "c", TimeoutSeconds: ptrTo(int64(30)),
	}
	n := 0
	for _, tr := range everyTypedResource(t) {
		gvks, _, err := scheme.Scheme.ObjectKinds(reflect.New(tr.r.ListType().Elem()).Interface().(runtime.Object))
		if err != nil {
			t.Fatal(err)
		}
		// The right kind and apiVersion for each client.
		answer(http.StatusOK, fmt.Sprintf(`{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"42","continue":"next"},"items":[{"metadata":{"name":"a","resourceVersion":"7"}}]}`, gvks[0].Kind, gvks[0].GroupVersion()))
		for _, ns := range []string{"ns", ""} {
			c := typedOf(tr.Client(cs, ns))
			if !c.DecodesItems() {
				t.Errorf("%s: lists through the typed client; want item by item", tr)
				continue
			}
			ours, err := c.List(context.Background(), opts)
			if err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			oursReq := last()
			typed := c.Clientset()
			theirs, err := typed.List(context.Background(), opts)
			if err != nil {
				t.Fatalf("%s: typed: %v", tr, err)
			}
			if theirsReq := last(); oursReq != theirsReq {
				t.Errorf("%s ns %q: request\n%s\nwant the typed client's\n%s", tr, ns, oursReq, theirsReq)
			}
			if !reflect.DeepEqual(ours, theirs) || meta.LenList(ours) != 1 {
				t.Errorf("%s: decoded %#v; typed client %#v", tr, ours, theirs)
			}
			n++
		}
	}
	t.Logf("%d typed clients' requests compared", n)
}

// A fake clientset has no REST client: lists go through the typed client.
func TestFromClientsetOnAFakeClientset(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	c, err := FromClientset(cs, &corev1.ConfigMap{}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if typedOf(c).DecodesItems() {
		t.Fatal("a fake clientset's nil REST client was taken")
	}
	l, err := c.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := l.(*corev1.ConfigMapList).Items; len(items) != 1 || items[0].Name != "a" {
		t.Fatalf("listed %v", items)
	}
	if !typedOf(c).IsWatchListSemanticsUnSupported() {
		t.Error("the fake clientset's declaration that it cannot stream lists is lost")
	}
}

func TestFromClientsetRejectsTypesOutsideTheClientset(t *testing.T) {
	for _, obj := range []runtime.Object{nil, &unstructured.Unstructured{}, &metav1.PartialObjectMetadata{}} {
		_, err := FromClientset(fake.NewClientset(), obj, "")
		var ute *UnsupportedTypeError
		if !errors.As(err, &ute) || !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("%T: err %v; want an *UnsupportedTypeError", obj, err)
		}
	}
}

// An error answer (410 here) reaches the caller as the typed client's
// error would, and the body of a 200 that is cut short is an error.
func TestFromClientsetErrors(t *testing.T) {
	cfg, answer, _ := answering(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromClientset(cs, &corev1.ConfigMap{}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	answer(http.StatusGone, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version"}`)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("410: %v; want a 410 Expired", err)
	}
	answer(http.StatusOK, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}},`)
	_, err = c.List(context.Background(), metav1.ListOptions{})
	if !errors.Is(err, ErrListBody) {
		t.Errorf("cut body: %v; want an ErrListBody", err)
	}
	if be := (*ListBodyError)(nil); !errors.As(err, &be) || be.Encoding != "json" || be.Offset == 0 {
		t.Errorf("cut body: %#v; want a *ListBodyError of the json body with its offset", err)
	}
	// A body cut short is a transport failure (retried with backoff, not
	// evidence about the server), as client-go's own "unexpected EOF" is.
	if c := engine.Classify(err); c != vocab.Transport {
		t.Errorf("cut body classified %v; want transport", c)
	}
}

// answering starts a server that answers every request with the status
// and body last set through answer (Content-Type protobuf if the body
// starts with its magic, else JSON), and returns a client config for it
// and the last request it received ("GET <path and query> accept=<Accept>").
func answering(t *testing.T) (cfg *rest.Config, answer func(status int, body string), last func() string) {
	t.Helper()
	var mu sync.Mutex
	status, body := http.StatusOK, ""
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Method+" "+r.URL.String()+" accept="+r.Header.Get("Accept"))
		if strings.HasPrefix(body, "k8s\x00") {
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, QPS: -1}, func(s int, b string) {
			mu.Lock()
			defer mu.Unlock()
			status, body = s, b
		}, func() string {
			mu.Lock()
			defer mu.Unlock()
			return got[len(got)-1]
		}
}

// sameList answers the next requests with body, lists with ours and then
// with theirs (the client-go client ours sends the requests of), and fails
// the test unless both sent the same request and returned the same list.
// It returns ours.
func sameList[L runtime.Object](t *testing.T, answer func(int, string), last func() string, what, body string, o metav1.ListOptions, ours Client, theirs func(context.Context, metav1.ListOptions) (L, error)) runtime.Object {
	t.Helper()
	answer(http.StatusOK, body)
	got, err := ours.List(context.Background(), o)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	oursReq := last()
	want, err := theirs(context.Background(), o)
	if err != nil {
		t.Fatalf("%s: client-go: %v", what, err)
	}
	if theirsReq := last(); oursReq != theirsReq {
		t.Errorf("%s: request\n%s\nwant client-go's\n%s", what, oursReq, theirsReq)
	}
	if !reflect.DeepEqual(got, runtime.Object(want)) {
		t.Errorf("%s:\ndecoded   %#v\nclient-go %#v", what, got, want)
	}
	return got
}

// expectListErrors: an error answer is its API error, so is a failed Status
// in a 200, and a body cut short (cut) is an ErrListBody.
func expectListErrors(t *testing.T, answer func(int, string), c Client, cut string) {
	t.Helper()
	expired := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}`
	answer(http.StatusGone, expired)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("410: %v; want a 410 Expired", err)
	}
	answer(http.StatusOK, expired)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("a Status in a 200: %v; want its 410 Expired", err)
	}
	answer(http.StatusOK, cut)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !errors.Is(err, ErrListBody) {
		t.Errorf("cut body: %v; want an ErrListBody", err)
	}
}

// typedOf is the typed client behind c (FromClientset's, TypedResource.Client's).
func typedOf(c Client) clients.TypedClient { return c.(adapter).c.(clients.TypedClient) }
