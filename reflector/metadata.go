package reflector

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
)

// pathMetadataInformer: NewMetadataInformer (AdoptionOf).
const pathMetadataInformer = "MetadataInformer"

// NewMetadataInformer returns a metadata-only informer of gvr: the informer
// client-go's metadatainformer.NewFilteredMetadataInformer(client, gvr, ns,
// resync, indexers, nil).Informer() builds (steadywatch's own
// SharedIndexInformer, NewSharedIndexInformer's, objects of type *metav1.PartialObjectMetadata, so
// metadatalister.New(inf.GetIndexer(), gvr) lists them), whose store
// reflector.New fills from c instead of the metadata client's ListWatch.
// Give it lister.FromMetadataConfig(cfg, gvr, namespace): the metadata
// client's requests, each list decoded item by item and every request sent
// once. client-go's metadata informer factory has no hook for an informer of
// the caller's own (unlike SharedInformerFactory.InformerFor), so this
// replaces factory.ForResource(gvr).Informer().
//
//	md, err := lister.FromMetadataConfig(cfg, gvr, ns)
//	inf := reflector.NewMetadataInformer(md, gvr, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
//		lister.Options{Server: server, Transform: lister.StripManagedFields})
//
// lo.Resource defaults to gvr (logs and metrics are named "apps/v1/deployments",
// capability evidence is scoped to its group/version); every field of lo is
// honoured, as on NewSharedIndexInformerWithOptions. Metadata-only objects
// still carry metadata.managedFields: lister.StripManagedFields drops them.
func NewMetadataInformer(c lister.Client, gvr schema.GroupVersionResource, resync time.Duration, indexers cache.Indexers, lo lister.Options) cache.SharedIndexInformer {
	if lo.Resource.Empty() {
		lo.Resource = gvr
	}
	return newInformer(c, &metav1.PartialObjectMetadata{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: resync,
		Indexers:     indexers,
	}, Options{Lister: lo}, pathMetadataInformer)
}
