package lister

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// widgetClient is what client-gen generates for widgets in example.com/v1
// (testfake.WidgetClient).
func widgetClient(t *testing.T, cfg *rest.Config, ns string) (rest.Interface, *gentype.ClientWithList[*testfake.Widget, *testfake.WidgetList]) {
	t.Helper()
	rc, typed, err := testfake.WidgetClient(cfg, schema.GroupVersion{Group: "example.com", Version: "v1"}, ns)
	if err != nil {
		t.Fatal(err)
	}
	return rc, typed
}

// FromRESTClient sends a generated typed client's requests (list and
// watch) and decodes the list it decodes, for a JSON-only custom resource
// type and, preferring protobuf, for a built-in one.
func TestFromRESTClientMatchesTheGeneratedClient(t *testing.T) {
	cfg, answer, last := answering(t)
	bodies := []string{
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"42","continue":"c","remainingItemCount":3},"items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","labels":{"x":"y"}},"spec":{"size":3,"ratio":0.5,"tags":["t","ü"],"extra":{"k":"v"},"raw":{"any":[1,2.5,{"n":null}]}}},{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b"},"spec":{"size":0},"unknown":{"x":1}}]}`,
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":null}`,
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":[]}`,
	}
	opts := metav1.ListOptions{LabelSelector: "a=b", FieldSelector: "metadata.name=a", ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 7, Continue: "c", TimeoutSeconds: ptrTo(int64(30)), AllowWatchBookmarks: true}
	for _, ns := range []string{"ns", ""} {
		rc, typed := widgetClient(t, cfg, ns)
		c, err := FromRESTClient(RESTResource{Client: rc, Resource: "widgets", Namespace: ns, List: &testfake.WidgetList{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bodies {
			sameList(t, answer, last, fmt.Sprintf("ns %q body %s", ns, b), b, opts, c, typed.List)
		}
		answer(http.StatusOK, "")
		w, err := c.Watch(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		oursReq := last()
		if w, err = typed.Watch(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		w.Stop()
		if theirsReq := last(); oursReq != theirsReq {
			t.Errorf("ns %q: watch request\n%s\nwant the generated client's\n%s", ns, oursReq, theirsReq)
		}
	}

	// A clientset generated preferring protobuf: client-go's own.
	cs := kubernetes.NewForConfigOrDie(cfg)
	c, err := FromRESTClient(RESTResource{Client: cs.CoreV1().RESTClient(), Resource: "configmaps", Namespace: "ns", List: &corev1.ConfigMapList{}, PrefersProtobuf: true})
	if err != nil {
		t.Fatal(err)
	}
	sameList(t, answer, last, "protobuf", string(testfake.EncodeList(t, testfake.RichConfigMaps(5), true)), opts, c, cs.CoreV1().ConfigMaps("ns").List)
}

func TestFromRESTClientErrors(t *testing.T) {
	cfg, answer, _ := answering(t)
	rc, _ := widgetClient(t, cfg, "ns")
	for name, r := range map[string]RESTResource{
		"no client":           {Resource: "widgets", List: &testfake.WidgetList{}},
		"no resource":         {Client: rc, List: &testfake.WidgetList{}},
		"invalid resource":    {Client: rc, Resource: "a/b", List: &testfake.WidgetList{}},
		"invalid namespace":   {Client: rc, Resource: "widgets", Namespace: "a/b", List: &testfake.WidgetList{}},
		"no protobuf code":    {Client: rc, Resource: "widgets", List: &testfake.WidgetList{}, PrefersProtobuf: true},
		"an item, not a list": {Client: rc, Resource: "widgets", List: &testfake.Widget{}},
	} {
		if _, err := FromRESTClient(r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := FromRESTClient(RESTResource{Client: rc, Resource: "widgets", List: &metav1.List{}}); !errors.Is(err, ErrNotAList) {
		t.Errorf("metav1.List: %v; want ErrNotAList", err)
	}
	c, err := FromRESTClient(RESTResource{Client: rc, Resource: "widgets", Namespace: "ns", List: &testfake.WidgetList{}})
	if err != nil {
		t.Fatal(err)
	}
	expectListErrors(t, answer, c, `{"kind":"WidgetList","items":[{"metadata":{"name":"a"}}`)
	// A protobuf answer for a type without protobuf code.
	answer(http.StatusOK, string(testfake.EncodeList(t, testfake.RichConfigMaps(1), true)))
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !errors.Is(err, ErrListBody) {
		t.Errorf("protobuf answer: %v; want an ErrListBody", err)
	}
}
