package clients

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/decode"
)

// UnsupportedTypeError is the error of TypedResourceOf for an object that
// is not a resource of client-go's typed clientset (package lister returns
// it as its UnsupportedTypeError: the same fields).
type UnsupportedTypeError struct {
	Type   string // the Go type, e.g. "*v1.Widget"
	Reason string
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("lister: %s is not a resource of client-go's typed clientset (kubernetes.Interface): %s", e.Type, e.Reason)
}

// TypedResource is where a resource's typed client is on
// kubernetes.Interface: cs.<Group>().<Resource>(namespace) or, cluster-scoped,
// cs.<Group>().<Resource>(). TypedResourceOf finds it from an example object.
type TypedResource struct {
	group, method string
	namespaced    bool
	listType      reflect.Type // e.g. *corev1.ConfigMapList
}

// ListType is the resource's list type, e.g. *corev1.ConfigMapList.
func (t TypedResource) ListType() reflect.Type { return t.listType }

// Namespaced reports whether the resource is namespaced.
func (t TypedResource) Namespaced() bool { return t.namespaced }

// String is the typed client's accessor, e.g. "CoreV1.ConfigMaps".
func (t TypedResource) String() string { return t.group + "." + t.method }

// TypedResourceOf finds the typed client whose List returns the list type
// of example's kind, by the method types of kubernetes.Interface alone
// (nothing is called). A Go list type belongs to one group/version, so at
// most one client matches.
func TypedResourceOf(example runtime.Object) (TypedResource, error) {
	name := fmt.Sprintf("%T", example)
	if example == nil {
		return TypedResource{}, &UnsupportedTypeError{Type: name, Reason: "nil example object"}
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(example)
	if err != nil || len(kinds) == 0 {
		return TypedResource{}, &UnsupportedTypeError{Type: name, Reason: "not registered in k8s.io/client-go/kubernetes/scheme"}
	}
	gvk := kinds[0]
	list, err := scheme.Scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return TypedResource{}, &UnsupportedTypeError{Type: name, Reason: "no " + gvk.Kind + "List in the scheme"}
	}
	listType := reflect.TypeOf(list)
	clientsetType := reflect.TypeFor[kubernetes.Interface]()
	var found []TypedResource
	for i := range clientsetType.NumMethod() {
		gm := clientsetType.Method(i)
		if gm.Type.NumIn() != 0 || gm.Type.NumOut() != 1 || gm.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		group := gm.Type.Out(0)
		for j := range group.NumMethod() {
			rm := group.Method(j)
			namespaced := rm.Type.NumIn() == 1 && rm.Type.In(0).Kind() == reflect.String
			if (!namespaced && rm.Type.NumIn() != 0) || rm.Type.NumOut() != 1 {
				continue
			}
			if c := rm.Type.Out(0); listsAndWatches(c, listType) {
				found = append(found, TypedResource{group: gm.Name, method: rm.Name, namespaced: namespaced, listType: listType})
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return TypedResource{}, &UnsupportedTypeError{Type: name, Reason: "no typed client lists " + listType.String()}
	default:
		return TypedResource{}, &UnsupportedTypeError{Type: name, Reason: fmt.Sprintf("%d typed clients list %s", len(found), listType)}
	}
}

// listsAndWatches reports whether the interface type c has
// List(context.Context, metav1.ListOptions) (listType, error) and
// Watch(context.Context, metav1.ListOptions) (watch.Interface, error).
func listsAndWatches(c, listType reflect.Type) bool {
	if c.Kind() != reflect.Interface {
		return false
	}
	is := func(name string, out reflect.Type) bool {
		m, ok := c.MethodByName(name)
		t := m.Type
		return ok && t.NumIn() == 2 && t.In(0) == reflect.TypeFor[context.Context]() && t.In(1) == reflect.TypeFor[metav1.ListOptions]() &&
			t.NumOut() == 2 && t.Out(0) == out && t.Out(1) == reflect.TypeFor[error]()
	}
	return is("List", listType) && is("Watch", reflect.TypeFor[watch.Interface]())
}

// Client returns cs's typed client for t. namespace is ignored for a
// cluster-scoped resource.
func (t TypedResource) Client(cs kubernetes.Interface, namespace string) TypedClient {
	group := reflect.ValueOf(cs).MethodByName(t.group).Call(nil)[0]
	var args []reflect.Value
	if t.namespaced {
		args = []reflect.Value{reflect.ValueOf(namespace)}
	} else {
		namespace = ""
	}
	rc := group.MethodByName(t.method).Call(args)[0]
	c := TypedClient{
		list:  rc.MethodByName("List"),
		watch: rc.MethodByName("Watch").Interface().(func(context.Context, metav1.ListOptions) (watch.Interface, error)),
		cs:    cs,
	}
	if sh, ok := decode.ShapeOf(t.listType); ok && sh.Proto() {
		if r, ok := restClientOf(group); ok {
			// client-gen's resource name is the lower-cased plural its
			// accessor is named after (TestTypedClientRequestsMatch checks
			// every typed client of the clientset).
			c.rest = &RESTClient{r: RESTResource{Client: r, Resource: strings.ToLower(t.method), Namespace: namespace, PrefersProtobuf: true}, shape: sh, serializer: clientsetSerializer()}
		}
	}
	return c
}

// clientsetSerializer is the serializer of client-go's clientset's REST
// clients (every group's setConfigDefaults sets it).
func clientsetSerializer() runtime.NegotiatedSerializer {
	return rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
}

// restClientOf returns the group client's REST client, unless it has none
// (client-go's fake clientsets return a nil *rest.RESTClient).
func restClientOf(group reflect.Value) (rest.Interface, bool) {
	m := group.MethodByName("RESTClient")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return nil, false
	}
	v := m.Call(nil)[0]
	if v.IsNil() {
		return nil, false
	}
	if e := v.Elem(); (e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface) && e.IsNil() {
		return nil, false
	}
	r, ok := v.Interface().(rest.Interface)
	return r, ok
}

// TypedClient is a typed client as a Client: its lists decoded item by item
// where the clientset has a REST client for the group.
type TypedClient struct {
	list  reflect.Value // func(context.Context, metav1.ListOptions) (*XList, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	cs    kubernetes.Interface

	// Set when lists are decoded item by item: the typed client's own
	// request (client-gen prefers protobuf for every built-in type).
	rest *RESTClient
}

func (c TypedClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if c.rest == nil {
		out := c.list.Call([]reflect.Value{reflect.ValueOf(&ctx).Elem(), reflect.ValueOf(o)})
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, err
		}
		return out[0].Interface().(runtime.Object), nil
	}
	return c.rest.ListTransformed(ctx, o, nil)
}

// Watch sends the typed client's watch request through the group's REST
// client, once (no retry inside client-go), or calls the typed client when
// there is no REST client (client-go's fake clientsets).
func (c TypedClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if c.rest != nil {
		return c.rest.Watch(ctx, o)
	}
	return c.watch(ctx, o)
}

// IsWatchListSemanticsUnSupported forwards the clientset's own declaration
// (client-go's fake clientsets make it), as the factory's informers do
// through cache.ToListWatcherWithWatchListSemantics.
func (c TypedClient) IsWatchListSemanticsUnSupported() bool {
	type declares interface{ IsWatchListSemanticsUnSupported() bool }
	d, ok := c.cs.(declares)
	return ok && d.IsWatchListSemanticsUnSupported()
}

// DecodesItems reports whether lists are decoded item by item (the
// clientset has a REST client for the group; client-go's fake clientsets
// have none).
func (c TypedClient) DecodesItems() bool { return c.rest != nil }

// Clientset is c sending the typed client's own requests, read whole and
// decoded by client-go, for comparisons.
func (c TypedClient) Clientset() TypedClient {
	c.rest = nil
	return c
}

// ListTransformed is List with each (decode.Each, if not nil) applied to each item as it
// is decoded; without item-by-item decoding, List.
func (c TypedClient) ListTransformed(ctx context.Context, o metav1.ListOptions, each *decode.Each) (runtime.Object, error) {
	if c.rest == nil {
		return c.List(ctx, o)
	}
	return c.rest.ListTransformed(ctx, o, each)
}
