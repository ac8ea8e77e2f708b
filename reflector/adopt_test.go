package reflector_test

import (
	"context"
	"errors"
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

func TestAdoptRegistersBeforeTheTypedAccessor(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if _, err := reflector.Adopt(factory, &corev1.ConfigMap{}, reflector.FactoryOptions{}); err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	a, ok := reflector.AdoptionOf(factory.Core().V1().ConfigMaps().Informer())
	if !ok {
		t.Fatal("the typed accessor's informer is not steadywatch's")
	}
	if a.Path != reflector.PathFactoryInformer || a.Name != "v1/configmaps" {
		t.Fatalf("AdoptionOf = %+v, want path %q name v1/configmaps", a, reflector.PathFactoryInformer)
	}
}

func TestAdoptAfterTheTypedAccessorFailsLoudly(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	stock := factory.Core().V1().ConfigMaps().Informer() // too early: the factory keeps this one
	_, err := reflector.Adopt(factory, &corev1.ConfigMap{}, reflector.FactoryOptions{})
	var nae *reflector.NotAdoptedError
	if !errors.Is(err, reflector.ErrNotAdopted) || !errors.As(err, &nae) || nae.Type != "*v1.ConfigMap" {
		t.Fatalf("Adopt after the accessor: err = %v, want a *NotAdoptedError for *v1.ConfigMap", err)
	}
	if _, ok := reflector.AdoptionOf(stock); ok {
		t.Fatal("AdoptionOf says a stock informer runs on steadywatch")
	}
}

func TestAdoptionOfTellsStockFromSteadywatch(t *testing.T) {
	lw := cache.NewListWatchFromClient(fake.NewClientset().CoreV1().RESTClient(), "configmaps", "", nil)
	if _, ok := reflector.AdoptionOf(cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)); ok {
		t.Fatal("stock cache.NewSharedIndexInformer reported as steadywatch")
	}
	a, ok := reflector.AdoptionOf(reflector.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil))
	if !ok || a.Path != reflector.PathSharedIndexInformer || a.Name != "v1/configmaps" {
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
	factory := informers.NewSharedInformerFactory(fake.NewClientset(&corev1.ConfigMap{}), 0)
	inf, err := reflector.Adopt(factory, &corev1.ConfigMap{}, reflector.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
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
			if !strings.Contains(l, `"v1/configmaps"`) || !strings.Contains(l, `"FactoryInformer"`) {
				t.Errorf("start line lacks the resource or path: %s", l)
			}
		}
	}
	if n != 1 {
		t.Fatalf("start line logged %d times, want once; log: %q", n, lines)
	}
}

func TestMustAdoptPanicsWithTheReason(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	_ = factory.Core().V1().ConfigMaps().Lister() // too early
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, reflector.ErrNotAdopted) {
			t.Fatalf("MustAdopt after the accessor: recovered %v, want a *NotAdoptedError", err)
		}
	}()
	reflector.MustAdopt(factory, &corev1.ConfigMap{}, reflector.FactoryOptions{})
	t.Fatal("MustAdopt did not panic")
}
