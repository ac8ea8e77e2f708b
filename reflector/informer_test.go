package reflector

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

func TestNewSharedIndexInformerSyncsThroughTheLister(t *testing.T) {
	api := newServer(t, steadywatchtest.Faults{}, "10", testfake.ConfigMap("a", "5"), testfake.ConfigMap("b", "6"))
	lw := api.ListerWatcher()
	// client-go v0.37 tries a streaming list first (WatchListClient); a server
	// known not to stream makes the lister refuse it at once, so client-go lists.
	srv := capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.No}})
	inf := NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{},
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}},
		lister.Options{Server: srv})
	added := make(chan string, 10)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) { added <- o.(*corev1.ConfigMap).Name }}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	testfake.WaitFor(t, "informer synced", inf.HasSynced)
	if got := watchRequest(t, api, 0).Options.ResourceVersion; got != "10" {
		t.Fatalf("informer watch from %q; want 10", got)
	}
	objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "ns")
	if err != nil || len(objs) != 2 {
		t.Fatalf("indexer has %d objects in ns (%v); want 2", len(objs), err)
	}
	for range 2 {
		<-added
	}
}

// A ListerWatcher that declares it cannot stream lists (client-go's fake
// clientsets, through cache.ToListWatcherWithWatchListSemantics) keeps that
// declaration through the drop-in informer: client-go lists at once and
// never sends a streaming watch that the guard would have to wait out (it
// waited 5s per informer before, in every user's unit test).
func TestNewSharedIndexInformerForwardsStreamingDeclaration(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	var streaming atomic.Int32
	cs.PrependWatchReactor("configmaps", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if o := a.(k8stesting.WatchActionImpl).ListOptions; o.SendInitialEvents != nil && *o.SendInitialEvents {
			streaming.Add(1)
		}
		return false, nil, nil
	})
	cms := cs.CoreV1().ConfigMaps("ns")
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) },
	}, cs)
	inf := NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	if n := streaming.Load(); n != 0 {
		t.Fatalf("%d streaming watches sent to a client that declares it cannot stream lists", n)
	}
	if keys := inf.GetStore().ListKeys(); len(keys) != 1 {
		t.Fatalf("store %v", keys)
	}
}
