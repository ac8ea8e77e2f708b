package lister_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/steadywatch/steadywatch/internal/testfake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// widgetClient is what client-gen generates for widgets in gv
// (testfake.WidgetClient).
func widgetClient(cfg *rest.Config, gv schema.GroupVersion, ns string) (rest.Interface, *gentype.ClientWithList[*testfake.Widget, *testfake.WidgetList]) {
	GinkgoHelper()
	rc, typed, err := testfake.WidgetClient(cfg, gv, ns)
	Expect(err).NotTo(HaveOccurred())
	return rc, typed
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
