package decode

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// mediaTypes are the watch encodings of a typed client.
var mediaTypes = []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON}

// watchBody encodes events as an apiserver writes a watch response of
// mediaType.
func watchBody(t testing.TB, mediaType string, events []watch.Event) []byte {
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
	return decodeWatchWith(t, mediaType, body, KnownObjects(scheme.Codecs.WithoutConversion(), known, nil))
}

// decodeWatchWith decodes body as client-go's REST client decodes a watch
// response of mediaType with the serializer ns.
func decodeWatchWith(t testing.TB, mediaType string, body []byte, ns runtime.NegotiatedSerializer) []watch.Event {
	t.Helper()
	gv := corev1.SchemeGroupVersion
	objDec, streamDec, framer, err := runtime.NewClientNegotiator(ns, gv).StreamDecoder(mediaType, nil)
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

// richCM is a ConfigMap with every kind of field its protobuf carries:
// strings, maps, byte slices, times, nested messages.
func richCM(name, rv string) *corev1.ConfigMap {
	ts := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, ResourceVersion: rv, UID: "uid-" + types.UID(name), CreationTimestamp: ts,
			Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "n-" + name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &ts,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:k":{}}}`),
			}},
		},
		Data:       map[string]string{"k": name + rv, "big": strings.Repeat("x", 2048)},
		BinaryData: map[string][]byte{"b": []byte(name)},
	}
}

// The objects of a streaming list's initial events decoded in place are
// the clientset's (client-go's own watch decoder, over the same bytes),
// with and without a known-object function, and none keeps a byte of the
// frame: the stream decoder reads every frame into one buffer, so an
// object that kept a slice of it would change as later frames are read.
// Events after the initial-events-end bookmark, and objects of another
// kind, are decoded by the clientset's decoder.
func TestInPlaceObjectsAreTheClientsets(t *testing.T) {
	events := []watch.Event{
		{Type: watch.Added, Object: richCM("a", "1")},
		{Type: watch.Added, Object: richCM("b", "2")},
		{Type: watch.Added, Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "3"}}},
		{Type: watch.Added, Object: richCM("c", "4")},
		{Type: watch.Bookmark, Object: endBookmark("5")},
		{Type: watch.Modified, Object: richCM("a", "6")},
	}
	body := watchBody(t, runtime.ContentTypeProtobuf, events)
	want := decodeWatch(t, runtime.ContentTypeProtobuf, body, nil)
	items := ProtoItems(mustShape(t, &corev1.ConfigMapList{}), corev1.SchemeGroupVersion)
	if items == nil {
		t.Fatal("no in-place decoding for ConfigMaps")
	}
	held := richCM("b", "2")
	for name, known := range map[string]KnownFunc{
		"no known objects": nil,
		"a known object": func(namespace, name, rv string) (runtime.Object, bool) {
			return held, name == "b" && rv == "2"
		},
	} {
		t.Run(name, func(t *testing.T) {
			var inPlace int
			got := decodeWatchWith(t, runtime.ContentTypeProtobuf, body, KnownObjects(countInPlace(scheme.Codecs.WithoutConversion(), &inPlace), known, items))
			if len(got) != len(want) {
				t.Fatalf("%d events; want %d", len(got), len(want))
			}
			for i := range want {
				if known != nil && i == 1 {
					if got[i].Object != runtime.Object(held) {
						t.Errorf("event 1 carries %p; want the held object %p", got[i].Object, held)
					}
					continue
				}
				if got[i].Type != want[i].Type || !reflect.DeepEqual(got[i].Object, want[i].Object) {
					t.Errorf("event %d: %s %+v; want %s %+v", i, got[i].Type, got[i].Object, want[i].Type, want[i].Object)
				}
			}
			// The clientset's decoder decoded only the Secret, the
			// bookmark and the event after it.
			if inPlace != 3 {
				t.Errorf("the clientset's decoder decoded %d objects; want 3 (the Secret, the bookmark, the MODIFIED event)", inPlace)
			}
		})
	}
}

// countInPlace counts the objects ns's object decoder decodes.
func countInPlace(ns runtime.NegotiatedSerializer, n *int) runtime.NegotiatedSerializer {
	return countingNegotiated{NegotiatedSerializer: ns, n: n}
}

type countingNegotiated struct {
	runtime.NegotiatedSerializer
	n *int
}

func (c countingNegotiated) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return objectsCounted{Decoder: c.NegotiatedSerializer.DecoderToVersion(d, gv), n: c.n}
}

type objectsCounted struct {
	runtime.Decoder
	n *int
}

func (c objectsCounted) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	*c.n++
	return c.Decoder.Decode(data, defaults, into)
}

// A streaming list's initial events decoded in place allocate about what
// their objects hold; client-go's decoder also copies each object's bytes
// twice (the event's raw object, the envelope's raw bytes). One iteration
// decodes a stream of 1000 events.
func BenchmarkStreamingListInitialEvents(b *testing.B) {
	const n = 1000
	events := make([]watch.Event, n)
	for i := range events {
		events[i] = watch.Event{Type: watch.Added, Object: richCM(fmt.Sprintf("cm-%d", i), fmt.Sprint(i+1))}
	}
	body := watchBody(b, runtime.ContentTypeProtobuf, events)
	items := ProtoItems(mustShape(b, &corev1.ConfigMapList{}), corev1.SchemeGroupVersion)
	for _, bc := range []struct {
		name  string
		items *InPlace
	}{{"clientset", nil}, {"in place", items}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				ns := runtime.NegotiatedSerializer(scheme.Codecs.WithoutConversion())
				if bc.items != nil {
					ns = KnownObjects(ns, nil, bc.items)
				}
				if got := decodeWatchWith(b, runtime.ContentTypeProtobuf, body, ns); len(got) != n {
					b.Fatalf("%d events", len(got))
				}
			}
		})
	}
}
