package lister

import (
	"context"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// Wrap is the one call that puts steadywatch under any client-go
// cache.ListerWatcher (cache.NewListWatchFromClient,
// cache.NewFilteredListWatchFromClient, a hand-built cache.ListWatch, or one
// over the dynamic or metadata client): NewListerWatcher(FromListerWatcher(lw), o).
//
//	lw := lister.Wrap(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything()), lister.Options{})
//
// The result is used wherever lw was (cache.NewSharedIndexInformer,
// cache.NewReflector, ...). Options.Resource cannot be derived from lw: set
// it (or use reflector.NewSharedIndexInformer, which derives it from the
// example object) to scope capability evidence to the API group/version.
//
// lw's lists are read whole and then decoded by client-go. WrapDecoding
// (or reflector.NewInformerFor) sends them through
// steadywatch's own client instead, decoded item by item as they arrive,
// given the configuration and namespace lw was built from.
func Wrap(lw cache.ListerWatcher, o Options) *ListerWatcher {
	return NewListerWatcher(FromListerWatcher(lw), o)
}

// FromListerWatcher adapts a client-go cache.ListerWatcher to Client. The
// context reaches lw when it implements cache.ListerWatcherWithContext (as
// client-go's own do). lw's declaration that it cannot stream lists
// (IsWatchListSemanticsUnSupported, made by client-go's fake clientsets
// through cache.ToListWatcherWithWatchListSemantics) is kept, so that an
// informer over a fake clientset lists at once instead of waiting for the
// streaming-list guard.
func FromListerWatcher(lw cache.ListerWatcher) Client {
	return lwClient{lw: cache.ToListerWatcherWithContext(lw), orig: lw, cut: !ofTheSDK(lw)}
}

type lwClient struct {
	lw   cache.ListerWatcherWithContext
	orig cache.ListerWatcher
	// cut: lw is not the SDK's (whose requests its own lister bounds, several
	// in a row in one call), so client-go's looping retries inside its
	// calls are ended (clients.ListCut).
	cut bool
}

// ofTheSDK reports whether lw is one of the SDK's own ListerWatchers.
func ofTheSDK(lw cache.ListerWatcher) bool {
	t := reflect.TypeOf(lw)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && strings.HasPrefix(t.PkgPath(), "github.com/steadywatch/steadywatch/")
}

// IsWatchListSemanticsUnSupported forwards the inner declaration.
func (c lwClient) IsWatchListSemanticsUnSupported() bool {
	return declaresNoWatchList(c.orig) || declaresNoWatchList(c.lw)
}

// declaresNoWatchList reports whether x declares that it cannot serve
// streaming lists (client-go's util/watchlist convention, which its fake
// clientsets follow).
func declaresNoWatchList(x any) bool {
	d, ok := x.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && d.IsWatchListSemanticsUnSupported()
}

// PipelineFilter hands the watch pipeline lw's own client-side filter, when
// lw has one (watchpipe.FilterSource: shard.Wrap), so that it runs as the
// pipeline's Filter stage.
func (c lwClient) PipelineFilter() interface{ Keep(m metav1.Object) bool } {
	return watchpipe.FilterOf(c.orig)
}

// RetriesInside implements clients.RetriesInside: client-go's REST client
// under a ListerWatcher not of the SDK may retry on its own.
func (c lwClient) RetriesInside() bool { return c.cut }

func (c lwClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if !c.cut {
		return c.lw.ListWithContext(ctx, o)
	}
	return clients.ListCut(ctx, func(ctx context.Context) (runtime.Object, error) { return c.lw.ListWithContext(ctx, o) })
}

func (c lwClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return clients.WatchObserved(ctx, o, c.lw.WatchWithContext, c.cut)
}
