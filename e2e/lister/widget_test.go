package lister_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// widget is a custom resource's Go type as operators write it (kubebuilder,
// client-gen): JSON only, no protobuf code.
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

// widgetClient is what client-gen generates for widgets in gv: the group's
// REST client (its setConfigDefaults) and a gentype client over it.
func widgetClient(cfg *rest.Config, gv schema.GroupVersion, ns string) (rest.Interface, *gentype.ClientWithList[*widget, *widgetList]) {
	GinkgoHelper()
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gv.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(gv.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(s, gv)
	config := rest.CopyConfig(cfg)
	config.GroupVersion = &gv
	config.APIPath = "/apis"
	config.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(s, serializer.NewCodecFactory(s)).WithoutConversion()
	rc, err := rest.RESTClientFor(config)
	Expect(err).NotTo(HaveOccurred())
	return rc, gentype.NewClientWithList[*widget, *widgetList]("widgets", rc, runtime.NewParameterCodec(s), ns,
		func() *widget { return &widget{} }, func() *widgetList { return &widgetList{} })
}

// createWidgetCRD creates a namespaced CRD "widgets" in gv (a group of the
// spec's own, so runs and clusters never share it), waits until it is
// served, and deletes it at cleanup.
func createWidgetCRD(ctx context.Context, dyn dynamic.Interface, gv schema.GroupVersion) {
	GinkgoHelper()
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	name := "widgets." + gv.Group
	_, err := crds.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": gv.Group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": gv.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred(), "deleting CRD %s", name)
		}
	}, NodeTimeout(time.Minute))
	Eventually(func(g Gomega) {
		_, err := dyn.Resource(gv.WithResource("widgets")).List(ctx, metav1.ListOptions{Limit: 1})
		g.Expect(err).NotTo(HaveOccurred())
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "CRD %s served", name)
}
