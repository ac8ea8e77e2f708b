package clients

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/decode"
)

// RESTResource is one resource of a generated clientset (package lister's
// RESTResource: the same fields).
type RESTResource struct {
	// Client is the group's REST client: cs.ExampleV1().RESTClient().
	Client rest.Interface
	// Resource is the resource's plural name: "widgets".
	Resource string
	// Namespace is the namespace; "" for every namespace, and for a
	// cluster-scoped resource.
	Namespace string
	// List is an empty list of the resource's Go type:
	// &examplev1.WidgetList{}. It must have a metav1.ListMeta field and an
	// Items slice of the resource's type, with JSON keys (client-gen's
	// types do).
	List runtime.Object
	// PrefersProtobuf: the clientset was generated preferring protobuf
	// (client-gen --prefers-protobuf; gentype.PrefersProtobuf), so lists
	// and watches ask for protobuf as its typed client does. Default false:
	// the REST client's own content types (JSON for a CRD's clientset).
	// The list type must then have generated protobuf code.
	PrefersProtobuf bool
}

// FromRESTClient returns the client of a generated clientset's typed client
// for r (package lister's FromRESTClient documents it).
func FromRESTClient(r RESTResource) (RESTClient, error) {
	if r.Client == nil || reflect.ValueOf(r.Client).Kind() == reflect.Pointer && reflect.ValueOf(r.Client).IsNil() {
		return RESTClient{}, errors.New("lister: FromRESTClient: no REST client")
	}
	if r.Resource == "" {
		return RESTClient{}, errors.New("lister: FromRESTClient: no resource")
	}
	if err := checkPathSegment("FromRESTClient", "resource", r.Resource); err != nil {
		return RESTClient{}, err
	}
	if err := checkPathSegment("FromRESTClient", "namespace", r.Namespace); err != nil {
		return RESTClient{}, err
	}
	sh, ok := decode.ShapeOf(reflect.TypeOf(r.List))
	if !ok {
		return RESTClient{}, fmt.Errorf("lister: FromRESTClient: %T: %w", r.List, ErrNotAList)
	}
	if r.PrefersProtobuf && !sh.Proto() {
		return RESTClient{}, fmt.Errorf("lister: FromRESTClient: %T has no generated protobuf code, but PrefersProtobuf is set", r.List)
	}
	return RESTClient{r: r, shape: sh}, nil
}

// ErrNotAList is the error of FromRESTClient for a List that is not a
// pointer to a list struct with a metav1.ListMeta field and an Items slice
// of objects, both with JSON keys.
var ErrNotAList = errors.New("not a list type that can be decoded item by item (a pointer to a struct with metav1.ListMeta and Items of objects, with JSON keys)")

// RESTClient is a generated clientset's typed client as a Client, its lists
// decoded item by item.
type RESTClient struct {
	r     RESTResource
	shape decode.Shape
	// serializer, if set, is the serializer of the clientset's REST
	// client (a typed client of client-go's clientset: its scheme's). A
	// streaming list's watch can then decode its events with
	// decode.KnownObjects (knownRequest).
	serializer runtime.NegotiatedSerializer
}

// request is the typed client's request (k8s.io/client-go/gentype): the
// list options encoded as every generated clientset's parameter codec
// encodes metav1.ListOptions. streamOnce and watchOnce send it once.
func (c RESTClient) request(o *metav1.ListOptions) (*rest.Request, time.Duration) {
	var timeout time.Duration
	if o.TimeoutSeconds != nil {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	return c.r.Client.Get().
		UseProtobufAsDefaultIfPreferred(c.r.PrefersProtobuf).
		NamespaceIfScoped(c.r.Namespace, c.r.Namespace != "").
		Resource(c.r.Resource).
		SpecificallyVersionedParams(o, dynamicParameterCodec, versionV1).
		Timeout(timeout), timeout
}

func (c RESTClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return c.ListTransformed(ctx, o, nil)
}

// ListTransformed is List with each (decode.Each, if not nil) applied to each item as it
// is decoded.
func (c RESTClient) ListTransformed(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	req, timeout := c.request(&o)
	if timeout > 0 {
		// The timeout covers reading the body too.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	body, err := streamOnce(ctx, req)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return decode.List(body, c.shape, each)
}

func (c RESTClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	o.Watch = true
	req, timeout := c.request(&o)
	known := decode.KnownFrom(ctx).Object
	if o.SendInitialEvents != nil && *o.SendInitialEvents && c.serializer != nil && (known != nil || c.shape.Proto()) {
		if kr, ok := c.knownRequest(req, timeout, known); ok {
			req = kr
		} else {
			klog.FromContext(ctx).V(2).Info("Decoding a streaming list's objects as the clientset does (each copied twice before it is decoded, and those the informer holds unchanged decoded again): the clientset's REST client is not client-go's *rest.RESTClient, or its content types cannot be read",
				"client", fmt.Sprintf("%T", c.r.Client))
		}
	}
	return watchOnce(ctx, req)
}

// knownRequest returns req (a streaming list's watch) as a request of the
// same URL through the same HTTP client, whose events' objects are decoded
// with decode.KnownObjects over the clientset's serializer: an object the
// caller holds at the same resourceVersion (known, if not nil) is not
// decoded again, and a protobuf one is decoded from the frame's bytes
// (decode.InPlace). client-go's REST client takes the decoder of a watch
// from its content configuration alone, so the request is built with its
// own, which asks for the content types the clientset's request asks for
// (restContentTypes). ok is false when c has no such serializer, or its
// REST client is not client-go's *rest.RESTClient or its content types
// cannot be read: req is then sent as it is.
func (c RESTClient) knownRequest(req *rest.Request, timeout time.Duration, known decode.KnownFunc) (*rest.Request, bool) {
	rc, ok := c.r.Client.(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil || c.serializer == nil {
		return nil, false
	}
	accept, contentType, ok := restContentTypes(rc)
	if !ok {
		return nil, false
	}
	u := req.URL()
	gv := rc.APIVersion()
	content := rest.ClientContentConfig{
		AcceptContentTypes: accept,
		ContentType:        contentType,
		GroupVersion:       gv,
		Negotiator:         runtime.NewClientNegotiator(decode.KnownObjects(c.serializer, known, decode.ProtoItems(c.shape, gv)), gv),
	}
	base := &url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}
	kr := rest.NewRequestWithClient(base, "", content, rc.Client).
		Verb(http.MethodGet).
		UseProtobufAsDefaultIfPreferred(c.r.PrefersProtobuf).
		RequestURI(u.RequestURI()).
		Timeout(timeout)
	return once(kr), true
}

// restContentTypes reads the content types a *rest.RESTClient was
// configured with (rest.Config's AcceptContentTypes and ContentType, in
// its content configuration, which client-go does not export); ok is
// false when its fields are not where client-go v0.37 keeps them.
func restContentTypes(rc *rest.RESTClient) (accept, contentType string, ok bool) {
	content := reflect.ValueOf(rc).Elem().FieldByName("content")
	if content.Kind() != reflect.Struct {
		return "", "", false
	}
	base := content.FieldByName("base")
	if !base.IsValid() || base.Type() != reflect.TypeFor[rest.ClientContentConfig]() {
		return "", "", false
	}
	a, ct := base.FieldByName("AcceptContentTypes"), base.FieldByName("ContentType")
	if a.Kind() != reflect.String || ct.Kind() != reflect.String {
		return "", "", false
	}
	return a.String(), ct.String(), true
}
