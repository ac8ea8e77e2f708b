package lister

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/internal/clients"
)

// FromClientset returns the Client of cs's typed client for example's
// resource (&corev1.ConfigMap{}: cs.CoreV1().ConfigMaps(namespace)); a
// cluster-scoped resource ignores namespace, and namespace "" lists every
// namespace. Lists and watches send the typed client's own requests (same
// path, parameters and content types, through the group's REST client, so
// its rate limiter and transport apply), each once: client-go's REST client
// makes no retry of its own inside them (fallback.NoHiddenRetries lists the
// retries it would make), so every request on the wire is one the lister
// or reflector counts, and every server-asked wait one it caps
// (Options.MaxRetryAfter). Lists decode the response item by item as it
// arrives instead of reading it whole first: the objects are the same, but
// the client never holds the whole response body and the decoded list at
// once (on 50,000 ConfigMaps the response body is about 40% of client-go's
// peak heap; see docs/benchmarks.md). When cs has no REST client for the group (client-go's
// fake clientsets), lists and watches go through the typed client unchanged.
//
// It fails with an *UnsupportedTypeError when example is not a resource of
// client-go's typed clientset (a CRD's Go type: use FromRESTClient with
// its generated clientset, or FromDynamicConfig).
func FromClientset(cs kubernetes.Interface, example runtime.Object, namespace string) (Client, error) {
	t, err := TypedResourceOf(example)
	if err != nil {
		return nil, err
	}
	return t.Client(cs, namespace), nil
}

// UnsupportedTypeError is the error of TypedResourceOf and FromClientset
// for an object that is not a resource of client-go's typed clientset.
type UnsupportedTypeError struct {
	Type   string // the Go type, e.g. "*v1.Widget"
	Reason string
}

func (e *UnsupportedTypeError) Error() string { return (*clients.UnsupportedTypeError)(e).Error() }

// ErrUnsupportedType matches every *UnsupportedTypeError (errors.Is).
var ErrUnsupportedType = errors.New("not a resource of client-go's typed clientset")

// Is makes errors.Is(err, ErrUnsupportedType) true.
func (e *UnsupportedTypeError) Is(target error) bool { return target == ErrUnsupportedType }

// TypedResource is where a resource's typed client is on
// kubernetes.Interface: cs.<Group>().<Resource>(namespace) or, cluster-scoped,
// cs.<Group>().<Resource>(). TypedResourceOf finds it from an example object.
type TypedResource struct {
	r clients.TypedResource
}

// Namespaced reports whether the resource is namespaced.
func (t TypedResource) Namespaced() bool { return t.r.Namespaced() }

// String is the typed client's accessor, e.g. "CoreV1.ConfigMaps".
func (t TypedResource) String() string { return t.r.String() }

// TypedResourceOf finds the typed client whose List returns the list type
// of example's kind, by the method types of kubernetes.Interface alone
// (nothing is called). A Go list type belongs to one group/version, so at
// most one client matches.
func TypedResourceOf(example runtime.Object) (TypedResource, error) {
	r, err := clients.TypedResourceOf(example)
	if e, ok := err.(*clients.UnsupportedTypeError); ok {
		return TypedResource{}, (*UnsupportedTypeError)(e)
	}
	return TypedResource{r: r}, err
}

// Client returns the Client of cs's typed client for t (see FromClientset).
// namespace is ignored for a cluster-scoped resource.
func (t TypedResource) Client(cs kubernetes.Interface, namespace string) Client {
	return adapter{t.r.Client(cs, namespace)}
}
