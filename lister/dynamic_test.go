package lister

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// FromDynamicConfig sends the dynamic client's request and returns the
// list the dynamic client decodes from the same body: built-in items
// without kind (given the list's), custom resources with theirs, integers
// and floats, nested arrays, "items": null and [] and extra top-level keys.
func TestFromDynamicConfigMatchesTheDynamicClient(t *testing.T) {
	cfg, answer, last := answering(t)
	bodies := []string{
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"c","remainingItemCount":3},"items":[{"metadata":{"name":"a","resourceVersion":"7"},"data":{"k":"v"}},{"metadata":{"name":"b"}}]}`,
		`{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":2},"spec":{"n":1,"f":1.5,"big":9007199254740993,"l":[1,"x",null,{"a":[]}],"t":true}}],"kind":"WidgetList","metadata":{"resourceVersion":"9"},"extra":{"x":1}}`,
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":null}`,
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":[]}`,
	}
	opts := metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 7, Continue: "c", TimeoutSeconds: ptrTo(int64(30))}
	eachDynamicResource(t, cfg, func(what string, c Client, ri dynamic.ResourceInterface) {
		for _, b := range bodies {
			sameList(t, answer, last, fmt.Sprintf("%s body %s", what, b), b, opts, c, ri.List)
		}
	})
}

// eachDynamicResource calls f with FromDynamicConfig's Client and the
// dynamic client's ResourceInterface for a built-in and a custom resource,
// each namespaced and across namespaces.
func eachDynamicResource(t *testing.T, cfg *rest.Config, f func(what string, c Client, ri dynamic.ResourceInterface)) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Group: "example.com", Version: "v1", Resource: "widgets"}} {
		for _, ns := range []string{"ns", ""} {
			c, err := FromDynamicConfig(cfg, gvr, ns)
			if err != nil {
				t.Fatal(err)
			}
			f(fmt.Sprintf("%s ns %q", gvr, ns), c, dyn.Resource(gvr).Namespace(ns))
		}
	}
}

func TestFromDynamicConfigErrors(t *testing.T) {
	cfg, answer, _ := answering(t)
	if _, err := FromDynamicConfig(cfg, schema.GroupVersionResource{Resource: "x"}, ""); err == nil {
		t.Error("a resource without a version was accepted")
	}
	if _, err := FromDynamicConfig(cfg, schema.GroupVersionResource{Version: "v1", Resource: "x"}, "a/b"); err == nil {
		t.Error("an invalid namespace was accepted")
	}
	c, err := FromDynamicConfig(cfg, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	expectListErrors(t, answer, c, `{"kind":"WidgetList","items":[{"metadata":{"name":"a"}}`)
}
