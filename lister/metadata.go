package lister

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/decode"
)

// metadataListAccept is the Accept header of client-go's metadata client's
// List (k8s.io/client-go/metadata): PartialObjectMetadataList in protobuf
// or JSON, or, from a server that cannot convert to it (older than v1.15,
// or an aggregated API), the resource's own list in JSON.
const metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

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
	if err := checkResource("FromMetadataConfig", gvr, namespace); err != nil {
		return nil, err
	}
	// As metadata.NewForConfigAndClient builds its REST client.
	config := metadata.ConfigFor(fallback.NoHiddenRetries(cfg))
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	config.GroupVersion = &schema.GroupVersion{}
	config.APIPath = "/this-value-should-never-be-sent"
	rc, err := rest.RESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return metadataClient{rc: rc, path: resourcePath(gvr, namespace)}, nil
}

type metadataClient struct {
	rc   rest.Interface
	path []string
}

func (c metadataClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.list(ctx, o, nil)
}

// list is List with tf (if not nil) applied to each item as it is decoded.
func (c metadataClient) list(ctx context.Context, o metav1.ListOptions, tf *transformer) (runtime.Object, error) {
	body, err := once(c.rc.Get()).AbsPath(c.path...).SetHeader("Accept", metadataListAccept).
		SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return decoded(decode.List(body, decode.MetadataList, tf.each()))
}

// metadataWatchAccept is the Accept header of client-go's metadata client's
// Watch.
const metadataWatchAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// Watch sends the metadata client's watch request (its Watch: same path,
// Accept header, parameters and timeout, through the same REST client), once.
func (c metadataClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if o.TimeoutSeconds != nil {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	o.Watch = true
	return watchOnce(ctx, c.rc.Get().AbsPath(c.path...).SetHeader("Accept", metadataWatchAccept).
		SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1).Timeout(timeout))
}
