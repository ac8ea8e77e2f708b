package canonical_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/canonical"
)

// backendTLSPolicyChain is the Gateway API versioning guide's example: v1alpha2 renamed spec.tls to
// spec.validation.
func backendTLSPolicyChain() *canonical.Chain {
	tls, validation := []string{"spec", "tls"}, []string{"spec", "validation"}
	chain, err := canonical.NewChain("v1alpha2",
		canonical.Shape{
			Name:      "v1alpha1",
			Recognize: canonical.HasField(tls...),
			Upgrade:   canonical.MoveField(tls, validation),
			Downgrade: canonical.MoveField(validation, tls),
		},
		canonical.Shape{
			Name:      "v1alpha2",
			Recognize: canonical.AllOf(canonical.LacksField(tls...), canonical.OnlyKeys([]string{"spec"}, "targetRefs", "validation", "options")),
		},
	)
	if err != nil {
		panic(err)
	}
	return chain
}

func ExampleChain_Canonicalize() {
	chain := backendTLSPolicyChain()
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.example.io/v1alpha2", // says nothing about the stored shape
		"kind":       "BackendTLSPolicy",
		"metadata":   map[string]any{"name": "p", "namespace": "default"},
		"spec":       map[string]any{"tls": map[string]any{"hostname": "backend.example"}},
	}}
	out, from, err := chain.Canonicalize(old)
	if err != nil {
		panic(err)
	}
	host, _, _ := unstructured.NestedString(out.Object, "spec", "validation", "hostname")
	fmt.Println(from, "->", "v1alpha2", host)
	fmt.Println("round trip:", chain.RoundTrip(old))
	// Output:
	// v1alpha1 -> v1alpha2 backend.example
	// round trip: <nil>
}

func ExampleWrap() {
	future := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "f", "namespace": "default"},
		"spec":     map[string]any{"validation": map[string]any{}, "sessionPersistence": map[string]any{}},
	}}
	old := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "o", "namespace": "default"},
		"spec":     map[string]any{"tls": map[string]any{"hostname": "h"}},
	}}
	// Any cache.ListerWatcher over a dynamic client; here a fixed list.
	inner := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &unstructured.UnstructuredList{Object: map[string]any{}, Items: []unstructured.Unstructured{old, future}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewEmptyWatch(), nil },
	}
	lw := canonical.Wrap(inner, backendTLSPolicyChain(), canonical.Options{
		Name: "backendtlspolicies",
		OnReject: func(_ context.Context, r canonical.Rejection) {
			fmt.Println("rejected", r.Err.Namespace+"/"+r.Err.Name, r.Err.Reason, r.Action)
		},
	})
	list, err := cache.ToListerWatcherWithContext(lw).ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, item := range list.(*unstructured.UnstructuredList).Items {
		_, hasValidation, _ := unstructured.NestedMap(item.Object, "spec", "validation")
		fmt.Println("stored", item.GetName(), "validation:", hasValidation)
	}
	// Output:
	// rejected default/f unrecognized skip
	// stored o validation: true
}
