package lister

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/clients"
)

// RESTResource is one resource of a generated clientset (client-gen, e.g.
// a CRD's typed clientset) for FromRESTClient.
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

// FromRESTClient returns the Client of a generated clientset's typed client
// (client-gen's, k8s.io/client-go/gentype) for r: the requests of
// cs.ExampleV1().Widgets(namespace).List and .Watch, sent through the
// group's REST client, but each list response is decoded item by item as
// it arrives (see FromClientset; the objects are the typed client's, field
// for field). Lists and watches are sent once: client-go's REST client
// makes no retry of its own inside them (see Client). This is the adapter for a custom resource's typed clientset,
// whose Go types have no protobuf code: their lists are JSON, which
// client-go reads whole and then decodes.
//
//	c, err := lister.FromRESTClient(lister.RESTResource{
//		Client: cs.ExampleV1().RESTClient(), Resource: "widgets", Namespace: ns,
//		List: &examplev1.WidgetList{},
//	})
//
// It fails with an error matching ErrNotAList for a List that cannot be
// decoded item by item, and when a field of r is missing.
func FromRESTClient(r RESTResource) (Client, error) {
	c, err := clients.FromRESTClient(clients.RESTResource(r))
	if err != nil {
		return nil, err
	}
	return adapter{c}, nil
}

// ErrNotAList is the error of FromRESTClient for a List that is not a
// pointer to a list struct with a metav1.ListMeta field and an Items slice
// of objects, both with JSON keys.
var ErrNotAList = clients.ErrNotAList
