package reflector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Adoption paths, as AdoptionOf reports them and the start-up log line
// names them.
const (
	// PathFactoryInformer: an informer factory's informer registered with
	// FactoryInformer (or Adopt).
	PathFactoryInformer = "FactoryInformer"
	// PathSharedIndexInformer: NewSharedIndexInformer,
	// NewSharedIndexInformerWithOptions or NewInformerFunc (controller-runtime's
	// cache.Options.NewInformer hook).
	PathSharedIndexInformer = "NewSharedIndexInformer"
)

// Adoption says how an informer runs on steadywatch.
type Adoption struct {
	// Path is the adoption path that built it (PathFactoryInformer,
	// PathSharedIndexInformer).
	Path string
	// Name is the name its logs and metrics carry ("v1/configmaps").
	Name string
}

// AdoptionOf reports whether inf runs on steadywatch (it was built by
// FactoryInformer, Adopt, NewSharedIndexInformer,
// NewSharedIndexInformerWithOptions, NewInformerFunc or NewMetadataInformer)
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

// ErrNotAdopted matches every *NotAdoptedError (errors.Is).
var ErrNotAdopted = errors.New("informer does not run on steadywatch")

// NotAdoptedError is Adopt's error when the factory already held a stock
// client-go informer for the type: its typed accessor (for example
// factory.Core().V1().ConfigMaps().Informer() or .Lister()) was used before
// the steadywatch informer was registered, and client-go's factory keeps the
// first informer it built for a type.
type NotAdoptedError struct {
	// Type is the example object's Go type, e.g. "*v1.ConfigMap".
	Type string
}

func (e *NotAdoptedError) Error() string {
	return fmt.Sprintf("steadywatch: the informer factory already holds a stock client-go informer for %s "+
		"(its typed accessor was used before steadywatch was registered); call reflector.Adopt "+
		"(or factory.InformerFor with reflector.FactoryInformer) before the first use of the typed accessor", e.Type)
}

// Is makes errors.Is(err, ErrNotAdopted) true.
func (e *NotAdoptedError) Is(target error) bool { return target == ErrNotAdopted }

// InformerForer is the method of client-go's informers.SharedInformerFactory
// (and of every generated clientset's factory) that Adopt calls.
type InformerForer interface {
	InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer
}

// Adopt registers FactoryInformer(exampleObject, o) with factory and returns
// the factory's informer for that type, or an error when it is not
// steadywatch's: a *NotAdoptedError when the factory already built a stock
// informer for the type (registered too late), an *UnsupportedTypeError when
// the type is not a resource of client-go's typed clientset. Unlike a bare
// factory.InformerFor call, a late registration can never silently leave
// the stock informer in place.
//
//	factory := informers.NewSharedInformerFactory(cs, 0)
//	if _, err := reflector.Adopt(factory, &corev1.ConfigMap{}, reflector.FactoryOptions{}); err != nil { ... }
//	configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() run on steadywatch
func Adopt(factory InformerForer, exampleObject runtime.Object, o FactoryOptions) (cache.SharedIndexInformer, error) {
	f, err := FactoryInformerFunc(exampleObject, o)
	if err != nil {
		return nil, err
	}
	inf := factory.InformerFor(exampleObject, f)
	if _, ok := AdoptionOf(inf); !ok {
		return nil, &NotAdoptedError{Type: fmt.Sprintf("%T", exampleObject)}
	}
	return inf, nil
}

// MustAdopt is Adopt for a program's set-up code, in one line: it panics
// with Adopt's error (a *NotAdoptedError names the type and the fix).
func MustAdopt(factory InformerForer, exampleObject runtime.Object, o FactoryOptions) cache.SharedIndexInformer {
	inf, err := Adopt(factory, exampleObject, o)
	if err != nil {
		panic(err)
	}
	return inf
}
