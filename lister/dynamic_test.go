package lister

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// FromDynamicConfig sends the dynamic client's request and returns the
// list the dynamic client decodes from the same body: built-in items
// without kind (given the list's), custom resources with theirs, integers
// and floats, nested arrays, "items": null and [] and extra top-level keys.
func TestFromDynamicConfigMatchesTheDynamicClient(t *testing.T) {
	cfg, answer, last := answering(t)
	dyn := dynamic.NewForConfigOrDie(cfg)
	bodies := []string{
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"c","remainingItemCount":3},"items":[{"metadata":{"name":"a","resourceVersion":"7"},"data":{"k":"v"}},{"metadata":{"name":"b"}}]}`,
		`{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","generation":2},"spec":{"n":1,"f":1.5,"big":9007199254740993,"l":[1,"x",null,{"a":[]}],"t":true}}],"kind":"WidgetList","metadata":{"resourceVersion":"9"},"extra":{"x":1}}`,
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":null}`,
		`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":[]}`,
	}
	opts := metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 7, Continue: "c", TimeoutSeconds: ptrTo(int64(30))}
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Group: "example.com", Version: "v1", Resource: "widgets"}} {
		for _, ns := range []string{"ns", ""} {
			c, err := FromDynamicConfig(cfg, gvr, ns)
			if err != nil {
				t.Fatal(err)
			}
			ri := dyn.Resource(gvr).Namespace(ns)
			for _, b := range bodies {
				answer(http.StatusOK, b)
				ours, err := c.List(context.Background(), opts)
				if err != nil {
					t.Fatalf("%s %q: %v", gvr, b, err)
				}
				oursReq := last()
				theirs, err := ri.List(context.Background(), opts)
				if err != nil {
					t.Fatalf("%s: dynamic: %v", gvr, err)
				}
				if theirsReq := last(); oursReq != theirsReq {
					t.Errorf("%s ns %q: request\n%s\nwant the dynamic client's\n%s", gvr, ns, oursReq, theirsReq)
				}
				if !reflect.DeepEqual(ours, theirs) {
					t.Errorf("%s body %s:\ndecoded %#v\ndynamic %#v", gvr, b, ours, theirs)
				}
			}
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
	answer(http.StatusGone, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}`)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("410: %v; want a 410 Expired", err)
	}
	answer(http.StatusOK, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}`)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !apierrors.IsResourceExpired(err) {
		t.Errorf("a Status in a 200: %v; want its 410 Expired", err)
	}
	answer(http.StatusOK, `{"kind":"WidgetList","items":[{"metadata":{"name":"a"}}`)
	if _, err := c.List(context.Background(), metav1.ListOptions{}); !errors.Is(err, ErrListBody) {
		t.Errorf("cut body: %v; want an ErrListBody", err)
	}
}
