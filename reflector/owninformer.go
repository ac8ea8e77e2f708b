package reflector

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/informer"
)

// newInformer returns steadywatch's own cache.SharedIndexInformer
// (internal/informer: client-go's event processor, handler semantics
// unchanged) over New(c, exampleObject, its store, o): every list and
// watch goes through this package's reflector, and each list reaches the
// handlers object by object as it is applied (docs/informer.md). path
// names the adoption path (AdoptionOf).
func newInformer(c Client, exampleObject runtime.Object, io cache.SharedIndexInformerOptions, o Options, path string) *adoptedInformer {
	var r *Reflector
	inf := informer.New(informer.Config{
		ExampleObject: exampleObject,
		Options:       io,
		NewSource: func(store cache.Store, onError func(context.Context, error)) informer.Source {
			r = New(c, exampleObject, store, o)
			r.onError = onError
			return r
		},
	})
	return &adoptedInformer{SharedIndexInformer: inf, adoption: Adoption{Path: path, Name: r.Name()}, reflector: r}
}

// reportError hands a failed list or watch to onError (the informer's
// SetWatchErrorHandler), after the reflector decided what follows.
func (r *Reflector) reportError(ctx context.Context, err error) {
	if r.onError != nil {
		r.onError(ctx, err)
	}
}
