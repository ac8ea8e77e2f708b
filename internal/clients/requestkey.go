package clients

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/client-go/rest"
)

// The clients whose list request is wholly determined by the client and its
// ListOptions name it, so that a listgate.Gate may answer identical
// requests once.
var (
	_ interface{ RequestKey() string } = RESTClient{}
	_ interface{ RequestKey() string } = TypedClient{}
	_ interface{ RequestKey() string } = DynamicClient{}
	_ interface{ RequestKey() string } = MetadataClient{}
)

// clientID names a REST client instance (and so its credentials and
// transport): answers are shared only between requests of one instance.
// "" (never shared) for a client that is not a pointer.
func clientID(rc rest.Interface) string {
	v := reflect.ValueOf(rc)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return ""
	}
	return fmt.Sprintf("%T@%x", rc, v.Pointer())
}

// RequestKey names the request for a listgate.Gate: REST client instance,
// resource, namespace, content type and list type.
func (c RESTClient) RequestKey() string {
	id := clientID(c.r.Client)
	if id == "" {
		return ""
	}
	return fmt.Sprintf("rest|%s|%s|%s|protobuf=%t|%T", id, c.r.Resource, c.r.Namespace, c.r.PrefersProtobuf, c.r.List)
}

// RequestKey names the request for a listgate.Gate: the typed client's own
// request when lists are decoded item by item; "" for a fake clientset's.
func (c TypedClient) RequestKey() string {
	if c.rest == nil {
		return ""
	}
	return c.rest.RequestKey()
}

// RequestKey names the request for a listgate.Gate: REST client instance and
// path.
func (c DynamicClient) RequestKey() string {
	if id := clientID(c.rc); id != "" {
		return "dynamic|" + id + "|" + strings.Join(c.path, "/")
	}
	return ""
}

// RequestKey names the request for a listgate.Gate: REST client instance and
// path.
func (c MetadataClient) RequestKey() string {
	if id := clientID(c.rc); id != "" {
		return "metadata|" + id + "|" + strings.Join(c.path, "/")
	}
	return ""
}
