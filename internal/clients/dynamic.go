package clients

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

// FromDynamicConfig returns the client of a dynamic client for gvr in
// namespace, built from cfg (package lister's FromDynamicConfig documents
// it). With client-go's ClientsAllowCBOR feature gate on, it returns no
// DynamicClient but the dynamic client's resource, to be used unchanged.
func FromDynamicConfig(cfg *rest.Config, gvr schema.GroupVersionResource, namespace string) (*DynamicClient, dynamic.ResourceInterface, error) {
	if err := checkResource("FromDynamicConfig", gvr, namespace); err != nil {
		return nil, nil, err
	}
	// Also the dynamic client's own requests (with ClientsAllowCBOR) are
	// sent once: no retry inside client-go's REST client.
	cfg = fallback.NoHiddenRetries(cfg)
	config := dynamic.ConfigFor(cfg)
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespace != "" {
		ri = dyn.Resource(gvr).Namespace(namespace)
	}
	if features.FeatureGates().Enabled(features.ClientsAllowCBOR) {
		return nil, ri, nil
	}
	// As dynamic.NewForConfigAndClient builds its REST client, with JSON
	// watch events decoded in fewer passes (decode.FastJSONWatch).
	config.GroupVersion = &schema.GroupVersion{}
	config.APIPath = "/if-you-see-this-search-for-the-break"
	config.NegotiatedSerializer = decode.FastJSONWatch(config.NegotiatedSerializer)
	rc, err := rest.RESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, nil, err
	}
	return &DynamicClient{rc: rc, path: resourcePath(gvr, namespace)}, nil, nil
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

// DynamicClient is a dynamic client as a Client, its lists decoded item by
// item and its JSON watch events in fewer passes.
type DynamicClient struct {
	rc   rest.Interface
	path []string
}

func (c DynamicClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.ListTransformed(ctx, o, nil)
}

// ListTransformed is List with each (decode.Each, if not nil) applied to each item as it
// is decoded.
func (c DynamicClient) ListTransformed(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	body, err := streamOnce(ctx, c.rc.Get().AbsPath(c.path...).SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1))
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return decode.Unstructured(body, each)
}

// Watch sends the dynamic client's watch request (its Watch, on the same
// path with the same parameters) through the REST client whose JSON watch
// events are decoded in fewer passes: the same events, field for field.
func (c DynamicClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	return watchOnce(ctx, c.rc.Get().AbsPath(c.path...).SpecificallyVersionedParams(&o, dynamicParameterCodec, versionV1))
}
