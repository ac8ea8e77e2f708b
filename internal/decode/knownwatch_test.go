package decode

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// mediaTypes are the watch encodings of a typed client.
var mediaTypes = []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON}

// watchBody encodes events as an apiserver writes a watch response of
// mediaType.
func watchBody(t *testing.T, mediaType string, events []watch.Event) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		t.Fatalf("no stream serializer for %s", mediaType)
	}
	var buf bytes.Buffer
	enc := restclientwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer),
		scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion))
	for _, ev := range events {
		if err := enc.Encode(&ev); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// decodeWatch decodes body as client-go's REST client decodes a watch
// response of mediaType (rest.Request.Watch), with its serializer wrapped
// by KnownObjects(known).
func decodeWatch(t *testing.T, mediaType string, body []byte, known KnownFunc) []watch.Event {
	t.Helper()
	gv := corev1.SchemeGroupVersion
	objDec, streamDec, framer, err := runtime.NewClientNegotiator(KnownObjects(scheme.Codecs.WithoutConversion(), known), gv).StreamDecoder(mediaType, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(body))), streamDec), objDec)
	var out []watch.Event
	for {
		typ, obj, err := d.Decode()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, watch.Event{Type: typ, Object: obj})
	}
}

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}, Data: map[string]string{"k": name + rv}}
}

func endBookmark(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
}

// A streaming list's ADDED event whose object the caller holds at the same
// resourceVersion carries the caller's object, undecoded; one at another
// version, or one the caller does not hold, is decoded. The first object
// without a name (the initial-events-end bookmark's) ends the questions:
// later events are decoded, whatever they hold. Protobuf and JSON.
func TestKnownObjectsHandOnHeldObjectsUndecoded(t *testing.T) {
	for _, mt := range mediaTypes {
		t.Run(mt, func(t *testing.T) {
			held := map[string]*corev1.ConfigMap{"a": cm("a", "1"), "b": cm("b", "2"), "c": cm("c", "3")}
			var asked []string
			known := func(namespace, name, rv string) (runtime.Object, bool) {
				asked = append(asked, fmt.Sprintf("%s/%s@%s", namespace, name, rv))
				if o := held[name]; o != nil && namespace == "ns" && o.ResourceVersion == rv {
					return o, true
				}
				return nil, false
			}
			body := watchBody(t, mt, []watch.Event{
				{Type: watch.Added, Object: cm("a", "1")},
				{Type: watch.Added, Object: cm("b", "15")},
				{Type: watch.Added, Object: cm("c", "3")},
				{Type: watch.Added, Object: cm("d", "18")},
				{Type: watch.Bookmark, Object: endBookmark("20")},
				{Type: watch.Modified, Object: cm("a", "1")},
			})
			got := decodeWatch(t, mt, body, known)
			want := []string{"ns/a@1", "ns/b@15", "ns/c@3", "ns/d@18"}
			if !slices.Equal(asked, want) {
				t.Fatalf("asked about %q; want %q (nothing after the bookmark)", asked, want)
			}
			if len(got) != 6 {
				t.Fatalf("%d events; want 6", len(got))
			}
			for i, name := range []string{"a", "c"} {
				ev := got[[]int{0, 2}[i]]
				if ev.Object != runtime.Object(held[name]) {
					t.Errorf("ADDED ns/%s carries %p; want the held object %p", name, ev.Object, held[name])
				}
			}
			for _, i := range []int{1, 3, 5} {
				m, err := meta.Accessor(got[i].Object)
				if err != nil {
					t.Fatal(err)
				}
				if o := held[m.GetName()]; o != nil && got[i].Object == runtime.Object(o) {
					t.Errorf("event %d (%s %s@%s) carries the held object; want it decoded", i, got[i].Type, m.GetName(), m.GetResourceVersion())
				}
				cmObj, ok := got[i].Object.(*corev1.ConfigMap)
				if !ok || cmObj.Data["k"] != m.GetName()+m.GetResourceVersion() {
					t.Errorf("event %d decoded as %#v", i, got[i].Object)
				}
			}
			if got[4].Type != watch.Bookmark {
				t.Errorf("event 4 is %s; want the bookmark", got[4].Type)
			}
		})
	}
}

// An object whose metadata cannot be read is decoded (and ends the
// questions); protobuf bytes whose raw object is in another encoding are
// not read as protobuf.
func TestObjectMeta(t *testing.T) {
	proto := encodeObject(t, cm("a", "7"), runtime.ContentTypeProtobuf)
	if ns, name, rv, ok := objectMeta(proto); !ok || ns != "ns" || name != "a" || rv != "7" {
		t.Errorf("protobuf: %q %q %q %v", ns, name, rv, ok)
	}
	js := encodeObject(t, cm("a", "7"), runtime.ContentTypeJSON)
	if ns, name, rv, ok := objectMeta(js); !ok || ns != "ns" || name != "a" || rv != "7" {
		t.Errorf("JSON: %q %q %q %v", ns, name, rv, ok)
	}
	// contentType (field 4) set: the raw bytes are not protobuf.
	withType := append(slices.Clone(proto), 4<<3|2, 4, 'j', 's', 'o', 'n')
	if _, _, _, ok := objectMeta(withType); ok {
		t.Error("read the metadata of raw bytes of another content type")
	}
	for _, b := range [][]byte{encodeObject(t, endBookmark("9"), runtime.ContentTypeProtobuf), []byte(`{"kind":"Status"}`), []byte(`{`), append(slices.Clone(protoMagic), 0xff)} {
		if _, _, _, ok := objectMeta(b); ok {
			t.Errorf("read metadata from %q", b)
		}
	}
}

// encodeObject encodes obj as a ConfigMap of core/v1 in mediaType.
func encodeObject(t *testing.T, obj runtime.Object, mediaType string) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventFrame reads an event's type and its object's metadata from a watch
// frame as the apiserver writes it, protobuf and JSON.
func TestEventFrame(t *testing.T) {
	for _, mt := range mediaTypes {
		t.Run(mt, func(t *testing.T) {
			proto := mt == runtime.ContentTypeProtobuf
			frame := func(ev watch.Event) []byte {
				b := watchBody(t, mt, []watch.Event{ev})
				if proto {
					return b[4:] // the length-delimited framer's 4-byte length
				}
				return bytes.TrimSpace(b)
			}
			typ, ns, name, rv, metaOK, ok := eventFrame(frame(watch.Event{Type: watch.Added, Object: cm("a", "7")}), proto)
			if !ok || !metaOK || typ != "ADDED" || ns != "ns" || name != "a" || rv != "7" {
				t.Errorf("ADDED: %q %q %q %q %v %v", typ, ns, name, rv, metaOK, ok)
			}
			typ, _, _, rv, metaOK, ok = eventFrame(frame(watch.Event{Type: watch.Bookmark, Object: endBookmark("9")}), proto)
			if !ok || metaOK || typ != "BOOKMARK" {
				t.Errorf("BOOKMARK: %q %q %v %v", typ, rv, metaOK, ok)
			}
			if _, _, _, _, _, ok := eventFrame([]byte{0xff, 0xff}, proto); ok {
				t.Error("read a malformed frame")
			}
		})
	}
}
