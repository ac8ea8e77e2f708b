package reflector_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/reflector"
)

func TestAdoptionOfSeesTheFactorysTypedInformer(t *testing.T) {
	factory := reflector.NewSharedInformerFactory(fake.NewClientset(), 0)
	a, ok := reflector.AdoptionOf(factory.Core().V1().ConfigMaps().Informer())
	if !ok {
		t.Fatal("the typed accessor's informer is not steadywatch's")
	}
	if a.Path != "SharedInformerFactory" || a.Name != "v1/configmaps" {
		t.Fatalf("AdoptionOf = %+v, want path SharedInformerFactory name v1/configmaps", a)
	}
	stock := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if _, ok := reflector.AdoptionOf(stock.Core().V1().ConfigMaps().Informer()); ok {
		t.Fatal("AdoptionOf says client-go's factory's informer runs on steadywatch")
	}
}

func TestAdoptionOfTellsStockFromSteadywatch(t *testing.T) {
	lw := cache.NewListWatchFromClient(fake.NewClientset().CoreV1().RESTClient(), "configmaps", "", nil)
	if _, ok := reflector.AdoptionOf(cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)); ok {
		t.Fatal("stock cache.NewSharedIndexInformer reported as steadywatch")
	}
	a, ok := reflector.AdoptionOf(reflector.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil))
	if !ok || a.Path != "NewSharedIndexInformer" || a.Name != "v1/configmaps" {
		t.Fatalf("AdoptionOf(NewSharedIndexInformer) = %+v, %v", a, ok)
	}
}

func TestAdoptedInformerSaysSoOnceAtStart(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), logger), 30*time.Second)
	defer cancel()
	factory := reflector.NewSharedInformerFactory(fake.NewClientset(&corev1.ConfigMap{}), 0)
	inf := factory.Core().V1().ConfigMaps().Informer()
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	cancel()
	factory.Shutdown()
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "Informer runs on steadywatch") {
			n++
			if !strings.Contains(l, `"v1/configmaps"`) || !strings.Contains(l, `"SharedInformerFactory"`) {
				t.Errorf("start line lacks the resource or path: %s", l)
			}
		}
	}
	if n != 1 {
		t.Fatalf("start line logged %d times, want once; log: %q", n, lines)
	}
}
