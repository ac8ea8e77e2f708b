package decode

import (
	"errors"
	"io"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWatchDecodeFallsBackOnlyWhereItMust(t *testing.T) {
	// The fast path must decode ordinary events itself: a custom resource
	// event never reaches the dynamic client's serializer.
	inner := countingDecoder{}
	s := objectJSON{Serializer: &inner}
	obj, gvk, err := s.Decode([]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"n":1}}`), nil, nil)
	if err != nil || inner.n != 0 {
		t.Fatalf("fast path not taken: err %v, fallbacks %d", err, inner.n)
	}
	if gvk.String() != "example.com/v1, Kind=Widget" || obj.GetObjectKind().GroupVersionKind() != *gvk {
		t.Errorf("gvk %v, object's %v", gvk, obj.GetObjectKind().GroupVersionKind())
	}
	ev := &metav1.WatchEvent{}
	es := watchEventJSON{Serializer: &inner}
	if _, _, err := es.Decode([]byte(`{"type":"ADDED","object":{"a":1}}`), nil, ev); err != nil || inner.n != 0 || ev.Type != "ADDED" || string(ev.Object.Raw) != `{"a":1}` {
		t.Fatalf("envelope fast path not taken: err %v, fallbacks %d, %+v", err, inner.n, ev)
	}
	// A Status goes to the dynamic client's serializer (which types it).
	_, _, _ = s.Decode([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure"}`), nil, nil)
	if inner.n != 1 {
		t.Errorf("a Status did not fall back: %d", inner.n)
	}
}

// countingDecoder is a runtime.Serializer that counts the decodes it is
// asked for.
type countingDecoder struct{ n int }

func (c *countingDecoder) Decode([]byte, *schema.GroupVersionKind, runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	c.n++
	return nil, nil, errors.New("counted")
}
func (c *countingDecoder) Encode(runtime.Object, io.Writer) error { return errors.New("not used") }
func (c *countingDecoder) Identifier() runtime.Identifier         { return "counting" }
