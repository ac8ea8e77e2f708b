package lister

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/features"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/decode"
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
	if err := checkResource("FromDynamicConfig", gvr, namespace); err != nil {
		return nil, err
	}
	// Also the dynamic client's own requests (with ClientsAllowCBOR) are
	// sent once: no retry inside client-go's REST client.
	cfg = fallback.NoHiddenRetries(cfg)
	config := dynamic.ConfigFor(cfg)
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespace != "" {
		ri = dyn.Resource(gvr).Namespace(namespace)
	}
	if features.FeatureGates().Enabled(features.ClientsAllowCBOR) {
		return FromDynamic(ri), nil
	}
	// As dynamic.NewForConfigAndClient builds its REST client, with JSON
	// watch events decoded in fewer passes (decode.FastJSONWatch).
	config.GroupVersion = &schema.GroupVersion{}
	config.APIPath = "/if-you-see-this-search-for-the-break"
	config.NegotiatedSerializer = decode.FastJSONWatch(config.NegotiatedSerializer)
	rc, err := rest.RESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return dynamicClient{rc: rc, path: resourcePath(gvr, namespace)}, nil
}

// checkResource refuses what the dynamic and metadata clients would put
// into a request's path unchecked.
func checkResource(fn string, gvr schema.GroupVersionResource, namespace string) error {
	if gvr.Version == "" || gvr.Resource == "" {
		return fmt.Errorf("lister: %s: incomplete resource %q", fn, gvr.String())
	}
	return checkPathSegment(fn, "namespace", namespace)
}

// checkPathSegment refuses a non-empty path segment that is not a valid
// name ("a/b", "..").
func checkPathSegment(fn, what, s string) error {
	if s == "" {
		return nil
	}
	if msgs := rest.IsValidPathSegmentName(s); len(msgs) > 0 {
		return fmt.Errorf("lister: %s: invalid %s %q: %s", fn, what, s, strings.Join(msgs, ", "))
	}
	return nil
}

// resourcePath is the path of gvr's collection in namespace, as the dynamic
// and metadata clients build it (their makeURLSegments).
func resourcePath(gvr schema.GroupVersionResource, namespace string) []string {
	path := []string{"api"}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group}
	}
	path = append(path, gvr.Version)
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	return append(path, gvr.Resource)
}

// dynamicParameterCodec and versionV1 encode list options as the dynamic
// client does (k8s.io/client-go/dynamic/scheme.go).
var (
	versionV1             = schema.GroupVersion{Version: "v1"}
	dynamicParameterCodec = runtime.NewParameterCodec(decode.MetaV1Scheme)
)

type dynamicClient struct {
	rc   rest.Interface
	path []string
}

func (c dynamicClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.list(ctx, o, nil)
}

// list is List with tf (if not nil) applied to each item as it is decoded.
func (c dynamicClient) list(ctx context.Context, o metav1.ListOptions, tf *transformer) (runtime.Object, error) {
	body, err := once(c.rc.Get()).AbsPath(c.path...).SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return decoded(decode.Unstructured(body, tf.each()))
}

// Watch sends the dynamic client's watch request (its Watch, on the same
// path with the same parameters) through the REST client whose JSON watch
// events are decoded in fewer passes: the same events, field for field.
func (c dynamicClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return watchOnce(ctx, c.rc.Get().AbsPath(c.path...).SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1))
}
