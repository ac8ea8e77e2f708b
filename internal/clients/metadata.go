package clients

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

// FromMetadataConfig returns the client of a metadata client for gvr in
// namespace, built from cfg (package lister's FromMetadataConfig documents
// it).
func FromMetadataConfig(cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (MetadataClient, error) {
	if err := checkResource("FromMetadataConfig", gvr, namespace); err != nil {
		return MetadataClient{}, err
	}
	// As metadata.NewForConfigAndClient builds its REST client.
	config := metadata.ConfigFor(fallback.NoHiddenRetries(cfg))
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return MetadataClient{}, err
	}
	config.GroupVersion = &schema.GroupVersion{}
	config.APIPath = "/this-value-should-never-be-sent"
	rc, err := rest.RESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return MetadataClient{}, err
	}
	return MetadataClient{rc: rc, path: resourcePath(gvr, namespace)}, nil
}

// MetadataClient is a metadata client as a Client, its lists decoded item
// by item.
type MetadataClient struct {
	rc   rest.Interface
	path []string
}

func (c MetadataClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.ListTransformed(ctx, o, nil)
}

// ListTransformed is List with each (decode.Each, if not nil) applied to each item as it
// is decoded.
func (c MetadataClient) ListTransformed(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	body, err := streamOnce(ctx, c.rc.Get().AbsPath(c.path...).SetHeader("Accept", metadataListAccept).
		SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1))
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return decode.List(body, decode.MetadataList, each)
}

// metadataWatchAccept is the Accept header of client-go's metadata client's
// Watch.
const metadataWatchAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// Watch sends the metadata client's watch request (its Watch: same path,
// Accept header, parameters and timeout, through the same REST client), once.
func (c MetadataClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if o.TimeoutSeconds != nil {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	o.Watch = true
	return watchOnce(ctx, c.rc.Get().AbsPath(c.path...).SetHeader("Accept", metadataWatchAccept).
		SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1).Timeout(timeout))
}
