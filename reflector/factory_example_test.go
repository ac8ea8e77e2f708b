package reflector_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/reflector"
)

// The factory line: client-go's informers.NewSharedInformerFactoryWithOptions
// with the same options, whose typed informers all run on steadywatch in
// the factory's namespace and with its tweak's selectors. With a real
// cluster, cs is a *kubernetes.Clientset.
func ExampleNewSharedInformerFactory() {
	team := func(ns, name, t string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": t}}}
	}
	cs := fake.NewClientset(team("default", "a", "blue"), team("default", "b", "red"), team("other", "c", "blue"))
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "team=blue" }

	factory := reflector.NewSharedInformerFactory(cs, 0, informers.WithNamespace("default"), informers.WithTweakListOptions(tweak))
	configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() run on steadywatch

	ctx, cancel := context.WithCancel(context.Background())
	defer factory.Shutdown()
	defer cancel()
	configMaps.Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	cms, _ := configMaps.Lister().List(labels.Everything())
	for _, cm := range cms {
		fmt.Println(cm.Namespace + "/" + cm.Name)
	}
	// Output: default/a
}

// Two controllers of one process, each with an informer factory of its
// own, share one listgate.Gate: their initial lists reach the apiserver
// one at a time (with a real clientset, identical lists are sent once).
func ExampleNewSharedInformerFactoryWithOptions_listGate() {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	gate := listgate.New(1) // one per apiserver, for the whole process

	ctx, cancel := context.WithCancel(context.Background())
	var factories []informers.SharedInformerFactory
	for range 2 {
		factory := reflector.NewSharedInformerFactoryWithOptions(cs, 0, lister.Options{ListGate: gate})
		factory.Core().V1().ConfigMaps().Informer()
		factory.Start(ctx.Done())
		factories = append(factories, factory)
	}
	for _, factory := range factories {
		factory.WaitForCacheSync(ctx.Done())
	}
	st := gate.Stats()
	fmt.Println("lists admitted:", st.Admitted, "at most at once:", st.MaxInFlight)
	cancel()
	for _, factory := range factories {
		factory.Shutdown()
	}
	// Output: lists admitted: 2 at most at once: 1
}
