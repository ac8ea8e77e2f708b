package lister

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// widget is a custom resource's Go type as kubebuilder or client-gen users
// write it: JSON only, no protobuf code.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec,omitempty"`
}

type widgetSpec struct {
	Size  int                  `json:"size"`
	Ratio float64              `json:"ratio,omitempty"`
	Tags  []string             `json:"tags,omitempty"`
	Extra map[string]string    `json:"extra,omitempty"`
	Raw   runtime.RawExtension `json:"raw,omitempty"`
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func deepCopyJSON[T any](in *T) *T {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (w *widget) DeepCopyObject() runtime.Object     { return deepCopyJSON(w) }
func (w *widgetList) DeepCopyObject() runtime.Object { return deepCopyJSON(w) }

// widgetClient is what client-gen generates for widgets: the group's REST
// client (its setConfigDefaults) and a gentype client over it.
func widgetClient(t *testing.T, cfg *rest.Config, ns string) (rest.Interface, *gentype.ClientWithList[*widget, *widgetList]) {
	t.Helper()
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gv.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(gv.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(s, gv)
	config := rest.CopyConfig(cfg)
	config.GroupVersion = &gv
	config.APIPath = "/apis"
	config.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(s, serializer.NewCodecFactory(s)).WithoutConversion()
	rc, err := rest.RESTClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	return rc, gentype.NewClientWithList[*widget, *widgetList]("widgets", rc, runtime.NewParameterCodec(s), ns,
		func() *widget { return &widget{} }, func() *widgetList { return &widgetList{} })
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
		c, err := FromRESTClient(RESTResource{Client: rc, Resource: "widgets", Namespace: ns, List: &widgetList{}})
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
		"no client":           {Resource: "widgets", List: &widgetList{}},
		"no resource":         {Client: rc, List: &widgetList{}},
		"invalid resource":    {Client: rc, Resource: "a/b", List: &widgetList{}},
		"invalid namespace":   {Client: rc, Resource: "widgets", Namespace: "a/b", List: &widgetList{}},
		"no protobuf code":    {Client: rc, Resource: "widgets", List: &widgetList{}, PrefersProtobuf: true},
		"an item, not a list": {Client: rc, Resource: "widgets", List: &widget{}},
	} {
		if _, err := FromRESTClient(r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := FromRESTClient(RESTResource{Client: rc, Resource: "widgets", List: &metav1.List{}}); !errors.Is(err, ErrNotAList) {
		t.Errorf("metav1.List: %v; want ErrNotAList", err)
	}
	c, err := FromRESTClient(RESTResource{Client: rc, Resource: "widgets", Namespace: "ns", List: &widgetList{}})
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
