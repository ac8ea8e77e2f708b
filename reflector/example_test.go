package reflector_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
}

// A reflector fills a cache.Store from any list/watch pair. With a real
// cluster, cs is a *kubernetes.Clientset from kubernetes.NewForConfig (and
// lister.FromClientset decodes its lists item by item); the fake clientset
// stands in for it here.
func ExampleNew() {
	cs := fake.NewClientset(configMap("a"), configMap("b"))
	client, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "default")
	if err != nil {
		panic(err) // only for a type outside client-go's clientset
	}

	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := reflector.New(client, &corev1.ConfigMap{}, store, reflector.Options{})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }() // Run returns once everything it started has stopped

	if !cache.WaitForCacheSync(ctx.Done(), r.HasSynced) {
		fmt.Println("not synced:", ctx.Err())
		return
	}
	keys := store.ListKeys()
	slices.Sort(keys)
	fmt.Println("keys:", keys)
	fmt.Println("resourceVersion:", r.LastSyncResourceVersion())
	// Output:
	// keys: [default/a default/b]
	// resourceVersion: 3
}

// NewSharedIndexInformer has the signature of cache.NewSharedIndexInformer:
// replace the call and keep the event handlers, indexers and listers.
func ExampleNewSharedIndexInformer() {
	cs := fake.NewClientset(configMap("a"), configMap("b"))
	// client-go first tries a streaming list (sendInitialEvents). This fake
	// rejects it, as servers without streaming lists do; the lister records
	// that and client-go lists instead. (A server that silently ignores
	// sendInitialEvents is detected after lister.Options.InitialEventsTimeout.)
	cs.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if o := a.(k8stesting.WatchActionImpl).ListOptions; o.SendInitialEvents != nil && *o.SendInitialEvents {
			return true, nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
		}
		return false, nil, nil // the fake's own watch
	})
	cms := cs.CoreV1().ConfigMaps("default")
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) },
	}

	informer := reflector.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	added := make(chan string, 10)
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.ConfigMap).Name },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	go func() { defer close(done); informer.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()

	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		fmt.Println("not synced:", ctx.Err())
		return
	}
	names := []string{<-added, <-added} // reg.HasSynced: the handler has seen the initial list
	slices.Sort(names)
	fmt.Println("added:", names)
	// Output:
	// added: [a b]
}

// history is a metrics.Recorder that keeps lists and relists, in order.
type history struct {
	metrics.Recorder
	events chan string
}

func (h history) List(_, semantic, outcome string) { h.add("list " + semantic + " " + outcome) }
func (h history) Relist(_, cause string)           { h.add("relist: " + cause) }
func (h history) add(e string) {
	select {
	case h.events <- e:
	default: // never block the reflector
	}
}

// Why did it relist? Options.Metrics receives every list and relist with its
// cause, and State returns a snapshot of the state machine: phase, the reason
// it was entered, resourceVersion, synced, items. The first list is the
// newest, in pages: the client is the caller's (lister.FromFuncs), which
// may retry a lagging watch cache's 504 on its own, so the reflector does
// not list at a resourceVersion first. Here the first watch fails
// with 410 Gone, so the reflector relists NotOlderThan the resourceVersion it
// had (never going back in time) and watches again.
func Example_relistCause() {
	cs := fake.NewClientset(configMap("a"), configMap("b"))
	var failed atomic.Bool
	cs.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		if failed.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewResourceExpired("too old resource version: 3 (5)")
		}
		return false, nil, nil // the fake's own watch
	})
	cms := cs.CoreV1().ConfigMaps("default")

	h := history{Recorder: metrics.Nop(), events: make(chan string, 10)}
	r := reflector.New(lister.FromFuncs(cms.List, cms.Watch), &corev1.ConfigMap{},
		cache.NewStore(cache.MetaNamespaceKeyFunc), reflector.Options{Lister: lister.Options{Name: "configmaps", Metrics: h}})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	for range 3 {
		select {
		case e := <-h.events:
			fmt.Println(e)
		case <-ctx.Done():
			fmt.Println("timed out:", ctx.Err())
			return
		}
	}
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return r.State().Phase == reflector.PhaseWatching, nil
	})
	if err != nil {
		fmt.Println("not watching:", err)
		return
	}
	st := r.State()
	fmt.Printf("phase=%s synced=%t items=%d resourceVersion=%s\n", st.Phase, st.Synced, st.Items, st.ResourceVersion)
	fmt.Println("reason:", st.Reason)
	// Output:
	// list MostRecent ok
	// relist: watch-gone
	// list NotOlderThan ok
	// phase=Watching synced=true items=2 resourceVersion=3
	// reason: watch opened at resourceVersion "3"
}
