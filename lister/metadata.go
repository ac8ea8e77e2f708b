package lister

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/clients"
)

// FromMetadataConfig returns the Client of a metadata client for gvr in
// namespace ("" for every namespace, and for a cluster-scoped resource),
// built from cfg: the requests of
// metadata.NewForConfig(cfg).Resource(gvr).Namespace(namespace), whose lists
// are *metav1.PartialObjectMetadataList, but each list response is decoded
// item by item as it arrives instead of being read whole first (see
// FromClientset; the objects are the metadata client's, field for field).
// Watches send the metadata client's request. Every request is sent once:
// client-go's REST client makes no retry of its own inside it (see Client).
//
// Metadata-only informers (controller-runtime's metadata watches, client-go's
// metadatainformer) are how operators keep large resources such as Secrets
// out of memory; this keeps their initial list from holding the response
// body and the decoded list at once, too.
func FromMetadataConfig(cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (Client, error) {
	c, err := clients.FromMetadataConfig(cfg, gvr, namespace)
	if err != nil {
		return nil, err
	}
	return adapter{c}, nil
}
