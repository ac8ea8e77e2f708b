package lister

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// Client is any list/watch pair for one resource (and namespace). Adapters:
// FromClientset (typed clientsets), FromDynamicConfig (custom resources) and
// FromMetadataConfig (metadata only), whose lists are decoded item by item;
// FromDynamic, FromMetadata, FromFuncs (any list/watch functions), whose
// lists are the client's own.
type Client interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FromDynamic adapts a dynamic client resource, e.g.
// dyn.Resource(gvr).Namespace(ns). Lists are *unstructured.UnstructuredList.
func FromDynamic(ri dynamic.ResourceInterface) Client { return FromFuncs(ri.List, ri.Watch) }

// FromMetadata adapts a metadata client resource. Lists are
// *metav1.PartialObjectMetadataList. FromMetadataConfig sends the same
// requests and decodes lists item by item.
func FromMetadata(ri metadata.ResourceInterface) Client { return FromFuncs(ri.List, ri.Watch) }

// FromFuncs adapts a list/watch function pair, e.g. a typed clientset's
// (FromClientset does that and decodes lists item by item):
//
//	cms := cs.CoreV1().ConfigMaps(ns)
//	c := lister.FromFuncs(cms.List, cms.Watch)
func FromFuncs[L runtime.Object](
	list func(ctx context.Context, opts metav1.ListOptions) (L, error),
	watchFn func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error),
) Client {
	return funcClient[L]{list: list, watch: watchFn}
}

type funcClient[L runtime.Object] struct {
	list  func(ctx context.Context, opts metav1.ListOptions) (L, error)
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func (f funcClient[L]) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l, err := f.list(ctx, o)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (f funcClient[L]) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f.watch(ctx, o)
}
