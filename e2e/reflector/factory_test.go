package reflector_test

import (
	"context"
	"slices"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/reflector"
)

var _ = Describe("reflector.NewSharedInformerFactory's scope on "+build.Current, Label("conformance"), Ordered, func() {
	var (
		cs       kubernetes.Interface
		ns, wide string
	)
	create := func(ctx context.Context, ns, name, team string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": team}}}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	BeforeAll(func(ctx SpecContext) {
		t := suite.Start(ctx, harness.Options{Version: build.Current})
		cs = suite.Clientset(t.RESTConfig())
		ns, wide = suite.NewNamespace(ctx, cs, "factory"), suite.NewNamespace(ctx, cs, "outside")
		create(ctx, ns, "blue-1", "blue")
		create(ctx, ns, "red-1", "red")
		create(ctx, wide, "blue-2", "blue")
	})

	It("a namespaced factory with a tweak: its typed informers list and watch only the factory's namespace and selector", func(ctx SpecContext) {
		factory := reflector.NewSharedInformerFactory(cs, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "team=blue" }))
		configMaps := factory.Core().V1().ConfigMaps()
		inf := configMaps.Informer()
		_, adopted := reflector.AdoptionOf(inf)
		Expect(adopted).To(BeTrue(), "the typed accessor's informer is stock client-go's")
		fctx, cancel := context.WithCancel(ctx)
		DeferCleanup(func() { cancel(); factory.Shutdown() })
		factory.Start(fctx.Done())
		for typ, ok := range factory.WaitForCacheSync(fctx.Done()) {
			Expect(ok).To(BeTrue(), "%v not synced", typ)
		}
		keys := inf.GetStore().ListKeys()
		sort.Strings(keys)
		Expect(keys).To(Equal([]string{ns + "/blue-1"}), "the initial list is wider than the factory's namespace and selector")

		// Written after the sync: the one outside the namespace first, so
		// that by the time the one inside arrives, a wider watch would have
		// delivered the first as well (both are in one etcd history).
		create(ctx, wide, "blue-3", "blue")
		create(ctx, ns, "red-2", "red")
		create(ctx, ns, "blue-4", "blue")
		Eventually(func() []string { return inf.GetStore().ListKeys() }).WithContext(ctx).Should(ContainElement(ns + "/blue-4"))
		keys = inf.GetStore().ListKeys()
		sort.Strings(keys)
		Expect(keys).To(Equal([]string{ns + "/blue-1", ns + "/blue-4"}), "the watch is wider than the factory's namespace and selector")
		got, err := configMaps.Lister().List(labels.Everything())
		Expect(err).NotTo(HaveOccurred())
		Expect(slices.ContainsFunc(got, func(cm *corev1.ConfigMap) bool { return cm.Namespace != ns })).To(BeFalse())
	})

	It("ForResource gives the same steadywatch informer, in the same scope", func(ctx SpecContext) {
		factory := reflector.NewSharedInformerFactory(cs, 0, informers.WithNamespace(ns))
		g, err := factory.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
		Expect(err).NotTo(HaveOccurred())
		_, adopted := reflector.AdoptionOf(g.Informer())
		Expect(adopted).To(BeTrue())
		fctx, cancel := context.WithCancel(ctx)
		DeferCleanup(func() { cancel(); factory.Shutdown() })
		factory.Start(fctx.Done())
		factory.WaitForCacheSync(fctx.Done())
		objs, err := g.Lister().List(labels.Everything())
		Expect(err).NotTo(HaveOccurred())
		Expect(objs).NotTo(BeEmpty())
		for _, o := range objs {
			Expect(o.(*corev1.ConfigMap).Namespace).To(Equal(ns))
		}
	})
})
