package lister

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// ResourceOf returns the group/version/resource of an example object: one
// with apiVersion and kind set (an *unstructured.Unstructured, a
// metav1.PartialObjectMetadata), or a typed object registered in client-go's
// scheme (core, apps, ...). The resource name is
// the conventional plural of the kind (meta.UnsafeGuessKindToResource); it
// names logs and metrics and scopes capability evidence, so a wrong guess
// for an irregular plural costs nothing but a label. ok is false when the
// kind is not known.
func ResourceOf(example runtime.Object) (gvr schema.GroupVersionResource, ok bool) {
	var gvk schema.GroupVersionKind
	if u, isU := example.(*unstructured.Unstructured); isU {
		gvk = u.GroupVersionKind()
	} else if example != nil && !example.GetObjectKind().GroupVersionKind().Empty() {
		// apiVersion and kind set on the object itself (a
		// metav1.PartialObjectMetadata of a metadata informer, a typed
		// object of a scheme other than client-go's).
		gvk = example.GetObjectKind().GroupVersionKind()
	} else if example != nil {
		if kinds, _, err := scheme.Scheme.ObjectKinds(example); err == nil && len(kinds) > 0 {
			gvk = kinds[0]
		}
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return schema.GroupVersionResource{}, false
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural, true
}

// ResourceName is the low-cardinality label of a resource: "v1/configmaps",
// "apps/v1/deployments".
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}
