package steadywatchtest_test

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// A controller unit test: the controller under test watches ConfigMaps
// through a typed clientset's informer factory and keeps the names of those
// labelled app=web. Installed behind the fake clientset, the server answers
// its list and watch as an apiserver would; the informer syncs in
// milliseconds and the test asserts requests, not times.
func Example() {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	srv.MustCreate(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{"app": "web"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-1", Labels: map[string]string{"app": "db"}}},
	)
	cs := fake.NewClientset()
	srv.Install(&cs.Fake, "configmaps")

	// The controller under test.
	var mu sync.Mutex
	web := map[string]bool{}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().ConfigMaps().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm := obj.(*corev1.ConfigMap); cm.Labels["app"] == "web" {
			mu.Lock()
			defer mu.Unlock()
			web[cm.Name] = true
		}
	}})

	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	fmt.Println("synced:", cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	cancel()
	factory.Shutdown()

	mu.Lock()
	var names []string
	for n := range web {
		names = append(names, n)
	}
	mu.Unlock()
	sort.Strings(names)
	fmt.Println("web:", names)
	fmt.Println("lists sent:", srv.Count("list"))
	// Output:
	// synced: true
	// web: [web-1]
	// lists sent: 1
}

// Reproducing a field failure is one line: here a v1.18 apiserver, which
// ignores resourceVersionMatch. A raw Exact list silently comes back newer;
// the SDK's lister serves exactly the resourceVersion asked for.
func ExampleV118() {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{
		Faults: steadywatchtest.V118(), // the one line
	})
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
	ctx := context.Background()

	raw, _ := srv.List(ctx, metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	fmt.Println("raw Exact(1) served at", raw.(*corev1.ConfigMapList).ResourceVersion)

	_, rec, err := lister.New(srv, lister.Options{}).List(ctx, lister.Exact("1"))
	fmt.Println("lister Exact(1) served at", rec.ServedResourceVersion, err)
	// Output:
	// raw Exact(1) served at 2
	// lister Exact(1) served at 1 <nil>
}

// A stock client-go informer over the server's ListerWatcher streams its
// initial list (client-go v0.37's default): the server ends the stream with
// the annotated bookmark, so the informer syncs without a list request.
func ExampleServer_ListerWatcher() {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	inf := cache.NewSharedIndexInformer(srv.InNamespace("default").ListerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	fmt.Println("synced:", cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	cancel()
	<-done
	fmt.Println("first request:", srv.Requests()[0].Verb, srv.Requests()[0].Served)
	fmt.Println("lists sent:", srv.Count("list"))
	// Output:
	// synced: true
	// first request: watch StreamingList
	// lists sent: 0
}

// Compact drops history like an etcd compaction: an Exact list below it is
// 410 Gone, and a watch from below it gets the 410 inside its stream.
func ExampleServer_Compact() {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}})
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "b"}})
	_ = srv.Compact("2")
	ctx := context.Background()

	_, err := srv.List(ctx, metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	fmt.Println("list:", err)

	w, _ := srv.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	ev := <-w.ResultChan()
	fmt.Println("watch:", ev.Type, ev.Object.(*metav1.Status).Code)
	w.Stop()
	// Output:
	// list: too old resource version: 1 (2)
	// watch: ERROR 410
}

// NewUnstructured serves custom resources as unstructured objects.
func ExampleNewUnstructured() {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	srv := steadywatchtest.NewUnstructured(gvk, steadywatchtest.Options{})
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(gvk)
	w.SetNamespace("default")
	w.SetName("w1")
	srv.MustCreate(w)
	list, _ := srv.List(context.Background(), metav1.ListOptions{})
	ul := list.(*unstructured.UnstructuredList)
	fmt.Println(ul.GetKind(), ul.GetResourceVersion(), ul.Items[0].GetName())
	// Output:
	// WidgetList 1 w1
}
