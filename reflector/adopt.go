package reflector

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Adoption paths, as AdoptionOf reports them and the start-up log line
// names them.
const (
	// pathInformerFactory: a typed informer of NewSharedInformerFactory's factory.
	pathInformerFactory = "SharedInformerFactory"
	// pathSharedIndexInformer: NewSharedIndexInformer or
	// NewSharedIndexInformerWithOptions.
	pathSharedIndexInformer = "NewSharedIndexInformer"
)

// Adoption says how an informer runs on steadywatch.
type Adoption struct {
	// Path is the adoption path that built it: "SharedInformerFactory" (a
	// typed informer of NewSharedInformerFactory's factory),
	// "NewSharedIndexInformer" (NewSharedIndexInformer and its variants),
	// "NewInformerFor" (NewInformerFor's hook) or "MetadataInformer"
	// (NewMetadataInformer).
	Path string
	// Name is the name its logs and metrics carry ("v1/configmaps").
	Name string
}

// AdoptionOf reports whether inf runs on steadywatch (it was built by
// NewSharedInformerFactory's typed accessors, NewSharedIndexInformer,
// NewSharedIndexInformerWithOptions, NewInformerFor or NewMetadataInformer)
// and how. A test can
// assert that adoption happened:
//
//	inf := factory.Core().V1().ConfigMaps().Informer()
//	if _, ok := reflector.AdoptionOf(inf); !ok { t.Fatal("ConfigMap informer is stock client-go's") }
//
// Wrappers that embed the informer (client-go's typed accessors return
// cache.NewTypedSharedIndexInformer's wrapper) are looked through.
func AdoptionOf(inf cache.SharedInformer) (Adoption, bool) {
	for range 8 { // wrappers of wrappers, bounded
		if a, ok := inf.(interface{ steadywatchAdoption() Adoption }); ok {
			return a.steadywatchAdoption(), true
		}
		if inf = embeddedInformer(inf); inf == nil {
			return Adoption{}, false
		}
	}
	return Adoption{}, false
}

// embeddedInformer returns the informer that inf's struct embeds as an
// exported field (a cache.SharedIndexInformer or cache.SharedInformer), or
// nil.
func embeddedInformer(inf cache.SharedInformer) cache.SharedInformer {
	v := reflect.ValueOf(inf)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.Anonymous || !f.IsExported() || !v.Field(i).CanInterface() {
			continue
		}
		if in, ok := v.Field(i).Interface().(cache.SharedInformer); ok && in != nil {
			return in
		}
	}
	return nil
}

// adoptedInformer is steadywatch's own informer (newInformer) that knows
// how it was built and says so once in the log when it starts.
type adoptedInformer struct {
	cache.SharedIndexInformer
	adoption Adoption
	once     sync.Once
	// reflector fills the informer's store.
	reflector *Reflector
}

func (a *adoptedInformer) steadywatchAdoption() Adoption { return a.adoption }

// WaitForResourceVersion waits until the informer's indexer reflects rv or
// a newer version ((*Reflector).WaitForResourceVersion of the reflector
// that fills it).
func (a *adoptedInformer) WaitForResourceVersion(ctx context.Context, rv string) error {
	if a.reflector == nil {
		return ErrNoResourceVersionWait
	}
	return a.reflector.WaitForResourceVersion(ctx, rv)
}

func (a *adoptedInformer) logStart(ctx context.Context) {
	a.once.Do(func() {
		klog.FromContext(ctx).Info("Informer runs on steadywatch", "informer", a.adoption.Name, "path", a.adoption.Path)
	})
}

// Run implements cache.SharedInformer.
func (a *adoptedInformer) Run(stopCh <-chan struct{}) {
	a.logStart(context.Background())
	a.SharedIndexInformer.Run(stopCh)
}

// RunWithContext implements cache.SharedInformer.
func (a *adoptedInformer) RunWithContext(ctx context.Context) {
	a.logStart(ctx)
	a.SharedIndexInformer.RunWithContext(ctx)
}
