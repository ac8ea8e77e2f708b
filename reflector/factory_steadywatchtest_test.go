package reflector_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// Behind a fake clientset, steadywatchtest's request log shows the options
// that reach the server: every list and watch of the factory's
// typed informer is in the factory's namespace with the tweak's
// selector, and the typed Lister holds exactly what matches.
func TestSharedInformerFactoryOverSteadywatchtest(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	for _, c := range []struct{ ns, name, team string }{{"a", "blue-1", "blue"}, {"a", "red-1", "red"}, {"b", "blue-2", "blue"}} {
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: c.name, Labels: map[string]string{"team": c.team}}})
	}
	cs := fake.NewClientset()
	srv.Install(&cs.Fake, "configmaps")
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "team=blue" }

	factory := reflector.NewSharedInformerFactory(cs, 0, informers.WithNamespace("a"), informers.WithTweakListOptions(tweak))
	configMaps := factory.Core().V1().ConfigMaps()
	configMaps.Informer()
	testfake.StartFactory(t, factory)
	cms, err := configMaps.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(cms) != 1 || cms[0].Namespace+"/"+cms[0].Name != "a/blue-1" {
		t.Fatalf("Lister has %d objects; want a/blue-1 only", len(cms))
	}
	reqs := srv.Requests()
	if !slices.ContainsFunc(reqs, func(r steadywatchtest.Request) bool { return r.Verb == "list" }) {
		t.Fatal("no list reached the server")
	}
	for _, r := range reqs {
		if r.Namespace != "a" || r.Options.LabelSelector != "team=blue" {
			t.Errorf("%s in namespace %q with selector %q; want namespace a, selector team=blue", r.Verb, r.Namespace, r.Options.LabelSelector)
		}
	}
}

// The informer behind a factory's typed accessor waits for a resourceVersion
// through reflector.WaitForResourceVersion, which looks through client-go's
// typed wrapper: once it returns, the typed Lister holds the write.
func TestSharedInformerFactoryWaitsForAResourceVersion(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	cs := fake.NewClientset()
	srv.Install(&cs.Fake, "configmaps")
	// An object first, so the list is served at a version, as a real
	// apiserver's always is (an empty steadywatchtest server lists at "0",
	// and a watch from "0" is not followed version by version).
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "before"}})
	factory := reflector.NewSharedInformerFactory(cs, 0)
	configMaps := factory.Core().V1().ConfigMaps()
	inf := configMaps.Informer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer factory.Shutdown()
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	created, err := srv.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := reflector.WaitForResourceVersion(ctx, inf, created.ResourceVersion); err != nil {
		t.Fatalf("wait for the write's resourceVersion %s: %v", created.ResourceVersion, err)
	}
	got, err := configMaps.Lister().ConfigMaps("ns").Get("a")
	if err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("after the wait the Lister holds %v (err %v), want resourceVersion %s", got, err, created.ResourceVersion)
	}
}
