package steadywatchtest_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// TestUnstructured: lists are UnstructuredLists of kind <Kind>List and
// bookmarks carry apiVersion and kind (client-go's reflector drops events
// whose GVK is not the expected one).
func TestUnstructured(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	s := steadywatchtest.NewUnstructured(gvk, steadywatchtest.Options{})
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("ns")
	u.SetName("w")
	s.MustCreate(u)
	obj, err := s.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := obj.(*unstructured.UnstructuredList)
	if !ok || l.GetKind() != "WidgetList" || l.GetAPIVersion() != "example.com/v1" || len(l.Items) != 1 || l.GetResourceVersion() != "1" {
		t.Fatalf("list %T %s %s with %d items at %s, want one WidgetList item at 1", obj, l.GetAPIVersion(), l.GetKind(), len(l.Items), l.GetResourceVersion())
	}
	w, err := s.Watch(context.Background(), metav1.ListOptions{ResourceVersionMatch: nop, SendInitialEvents: ptr(true), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := range w.ResultChan() {
		if e.Type != watch.Bookmark {
			continue
		}
		b := e.Object.(*unstructured.Unstructured)
		if b.GroupVersionKind() != gvk || b.GetResourceVersion() != "1" || b.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			t.Errorf("bookmark %v, want %v at 1 with the end annotation", b.Object, gvk)
		}
		return
	}
	t.Fatal("stream ended without a bookmark")
}

func TestUpdateConflictsAndNotFound(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	a, _ := s.Get("ns", "a")
	a.ResourceVersion = "1"
	if _, err := s.Update(a); code(err) != 409 {
		t.Errorf("stale update: %v, want 409 Conflict", err)
	}
	if _, err := s.Update(testfake.ConfigMap("zz", "")); code(err) != 404 {
		t.Errorf("update of a missing object: %v, want 404", err)
	}
	if _, err := s.Create(testfake.ConfigMap("a", "")); code(err) != 409 {
		t.Errorf("duplicate create: %v, want 409 AlreadyExists", err)
	}
	if err := s.Delete("ns", "zz"); code(err) != 404 {
		t.Errorf("delete of a missing object: %v, want 404", err)
	}
	if got := s.ResourceVersion(); got != "5" {
		t.Errorf("failed writes moved the resourceVersion to %s", got)
	}
}
