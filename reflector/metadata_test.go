package reflector

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// A metadata-only informer (objects *metav1.PartialObjectMetadata, as
// client-go's metadata client returns them) works on every path that can
// hold one: reflector.New, NewMetadataInformer and the drop-in
// NewSharedIndexInformer over a metadata ListerWatcher. Each syncs every
// object, applies watch events, and with lister.StripManagedFields keeps
// no managedFields.
func TestMetadataOnlyInformerOnEveryPath(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	pom := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": name},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}}},
		}
	}
	lo := lister.Options{Transform: lister.StripManagedFields}
	type run func(t *testing.T, srv *steadywatchtest.Server[*metav1.PartialObjectMetadata]) (cache.Store, func() bool, func())
	paths := map[string]run{
		"reflector.New": func(t *testing.T, srv *steadywatchtest.Server[*metav1.PartialObjectMetadata]) (cache.Store, func() bool, func()) {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := New(srv.InNamespace("ns"), &metav1.PartialObjectMetadata{}, store, Options{Lister: lo})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); r.Run(ctx) }()
			return store, r.HasSynced, func() { cancel(); <-done }
		},
		"NewMetadataInformer": func(t *testing.T, srv *steadywatchtest.Server[*metav1.PartialObjectMetadata]) (cache.Store, func() bool, func()) {
			inf := NewMetadataInformer(srv.InNamespace("ns"), gvr, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, lo)
			if a, ok := AdoptionOf(inf); !ok || a.Path != pathMetadataInformer || a.Name != "apps/v1/deployments" {
				t.Errorf("AdoptionOf = %+v, %v; want %s named apps/v1/deployments", a, ok, pathMetadataInformer)
			}
			return inf.GetStore(), inf.HasSynced, runInformer(t, inf)
		},
		"NewSharedIndexInformer over a metadata ListerWatcher": func(t *testing.T, srv *steadywatchtest.Server[*metav1.PartialObjectMetadata]) (cache.Store, func() bool, func()) {
			example := &metav1.PartialObjectMetadata{}
			example.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
			inf := NewSharedIndexInformerWithOptions(srv.InNamespace("ns").ListerWatcher(), example, cache.SharedIndexInformerOptions{}, lo)
			return inf.GetStore(), inf.HasSynced, runInformer(t, inf)
		},
	}
	for name, start := range paths {
		t.Run(name, func(t *testing.T) {
			srv := steadywatchtest.New[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList](steadywatchtest.Options{GroupResource: gvr.GroupResource()})
			t.Cleanup(srv.Close)
			for i := range 20 {
				srv.MustCreate(pom(fmt.Sprintf("d-%02d", i)))
			}
			store, synced, stop := start(t, srv)
			defer stop()
			waitUntil(t, synced, "synced")
			srv.MustCreate(pom("added"))
			if err := srv.Delete("ns", "d-00"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, func() bool {
				_, added, _ := store.GetByKey("ns/added")
				_, deleted, _ := store.GetByKey("ns/d-00")
				return added && !deleted
			}, "the watch's ADDED and DELETED applied")
			objs := store.List()
			if len(objs) != 20 {
				t.Errorf("store holds %d objects, want 20", len(objs))
			}
			for _, o := range objs {
				m, ok := o.(*metav1.PartialObjectMetadata)
				if !ok {
					t.Fatalf("store holds a %T, want *metav1.PartialObjectMetadata", o)
				}
				if m.ManagedFields != nil || m.Labels["app"] != m.Name || m.ResourceVersion == "" {
					t.Errorf("%s: managedFields %v, labels %v, resourceVersion %q; want stripped, kept, kept", m.Name, m.ManagedFields, m.Labels, m.ResourceVersion)
				}
			}
		})
	}
}

// waitUntil polls cond (bounded) and fails the test if it never holds.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 10s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
