package lister

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/clients"
)

// FromDynamicConfig returns the Client of a dynamic client for gvr in
// namespace ("" for every namespace, and for a cluster-scoped resource),
// built from cfg: the requests of
// dynamic.NewForConfig(cfg).Resource(gvr).Namespace(namespace), but each
// list response is decoded item by item as it arrives. client-go's
// unstructured decoding of a list holds the response body, a copy of every
// item's bytes and the whole list decoded twice (once as the list's own
// content, once item by item) before it drops the first; this holds one
// item's bytes at a time, so a custom resource's initial list peaks at
// little more than the objects themselves (docs/benchmarks.md). Watch
// events in JSON are decoded in half the passes client-go's decoder makes
// over each event. The objects and events returned are the
// dynamic client's, field for field. Every request is sent once: client-go's
// REST client makes no retry of its own inside it (see Client).
//
// With client-go's ClientsAllowCBOR feature gate on, lists go through the
// dynamic client unchanged (it may then be answered in CBOR).
func FromDynamicConfig(cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (Client, error) {
	c, ri, err := clients.FromDynamicConfig(cfg, gvr, namespace)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return FromDynamic(ri), nil
	}
	return adapter{*c}, nil
}
