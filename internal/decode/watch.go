package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
)

// JSON watch events of a dynamic client, decoded in fewer passes.
//
// client-go's REST client decodes each event of a JSON watch stream in three
// steps (k8s.io/client-go/rest/watch.Decoder): the frame is split off the
// stream, decoded into a metav1.WatchEvent whose object stays raw bytes, and
// the object decoded on its own. With the dynamic client's serializers
// (k8s.io/client-go/dynamic) that reads each event's bytes about ten times:
// the frame, the envelope's apiVersion/kind, the envelope (validated, then
// decoded), the object's apiVersion/kind, then the object into an
// Unstructured (validated, decoded with json.Number, numbers converted).
// A profile of a custom resource's streaming list spends most of the
// client's time there (docs/benchmarks.md, custom resources). The serializers below
// keep the same three steps and read each event five times: the frame, the
// envelope (validated, decoded), the object (validated, decoded straight
// into the Unstructured's map with int64 and float64 numbers, as
// k8s.io/apimachinery/pkg/util/json does). Anything they do not recognise
// (an unknown event type, an object without apiVersion or kind, a kind of
// the meta/v1 scheme such as the Status of an ERROR event, malformed JSON)
// goes to the dynamic client's own serializer, so its answer and its errors
// are client-go's (the tests compare both on every such case).

// versionV1 is meta/v1's version as the dynamic client registers it.
var versionV1 = schema.GroupVersion{Version: "v1"}

// MetaV1Scheme is the scheme of the dynamic client's serializers and
// parameter codec (k8s.io/client-go/dynamic: meta/v1 under version "v1",
// and its unversioned kinds such as Status): objects it creates decode into
// their Go types there, so they go to its serializer.
var MetaV1Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, versionV1)
	return s
}()

// FastJSONWatch returns ns with its JSON watch decoding replaced by the
// fewer-pass decoders (see above); every other media type, and every
// encoder, is ns's own.
func FastJSONWatch(ns runtime.NegotiatedSerializer) runtime.NegotiatedSerializer {
	infos := slices.Clone(ns.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType != runtime.ContentTypeJSON || info.StreamSerializer == nil || info.Serializer == nil {
			continue
		}
		ss := *info.StreamSerializer
		ss.Serializer = watchEventJSON{Serializer: ss.Serializer}
		infos[i].StreamSerializer = &ss
		infos[i].Serializer = objectJSON{Serializer: info.Serializer}
	}
	return fastNegotiated{NegotiatedSerializer: ns, infos: infos}
}

type fastNegotiated struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func (f fastNegotiated) SupportedMediaTypes() []runtime.SerializerInfo { return f.infos }

var watchEventGVK = versionV1.WithKind("WatchEvent")

// watchEventJSON decodes a watch event's envelope into the
// *metav1.WatchEvent client-go's watch decoder asks for.
type watchEventJSON struct{ runtime.Serializer }

func (s watchEventJSON) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok || defaults != nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	// The fast path takes an envelope of exactly "type" and "object", as
	// the apiserver writes it. Any other key (an "apiVersion" or "kind" in
	// any case makes the dynamic client's serializer decode another type;
	// "Type" is not "type" to it) goes to that serializer.
	var env map[string]json.RawMessage
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &env) == nil && len(env) == 2 {
		rawType, okType := env["type"]
		rawObject, okObject := env["object"]
		var typ string
		if okType && okObject && json.Unmarshal(rawType, &typ) == nil {
			switch watch.EventType(typ) {
			case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
				ev.Type = typ
				if string(rawObject) != "null" { // as runtime.RawExtension.UnmarshalJSON
					ev.Object.Raw = rawObject
				}
				gvk := watchEventGVK
				return ev, &gvk, nil
			}
		}
	}
	return s.Serializer.Decode(data, defaults, into)
}

// objectJSON decodes a watch event's object into an Unstructured.
type objectJSON struct{ runtime.Serializer }

func (s objectJSON) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil || defaults != nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	var m map[string]any
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &m) != nil || m == nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" || otherCaseTypeMeta(m) {
		return s.Serializer.Decode(data, defaults, into)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		return s.Serializer.Decode(data, defaults, into)
	}
	gvk := gv.WithKind(kind)
	// The kinds the dynamic client's scheme creates (meta/v1's under "v1";
	// Status and the discovery kinds under any version) decode into their
	// Go types there.
	if _, err := MetaV1Scheme.New(gvk); err == nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	return &unstructured.Unstructured{Object: m}, &gvk, nil
}

// otherCaseTypeMeta reports a top-level key that the dynamic client's
// serializer reads as apiVersion or kind (it matches them in any case) but
// that is not spelt so.
func otherCaseTypeMeta(m map[string]any) bool {
	for k := range m {
		if k != "apiVersion" && k != "kind" && (strings.EqualFold(k, "apiVersion") || strings.EqualFold(k, "kind")) {
			return true
		}
	}
	return false
}

// Objects a watch's caller already holds.
//
// A streaming list (a watch with sendInitialEvents=true, KEP-3157) that
// relists a collection sends an ADDED event for every object, most of them
// at the resourceVersion the caller already holds. A resourceVersion names
// one write in etcd ("Resource versions", Kubernetes API Concepts): an
// event whose object has the namespace, name and resourceVersion of one the
// caller holds carries that very object, and need not be decoded again. The
// object decoder of KnownObjects reads those three fields from an event's
// raw bytes (protobuf or JSON, as Each.Known does for a list's items) and,
// when the caller's KnownFunc returns the object, hands that object on in
// place of a decoded one.

// KnownFunc returns the object its caller holds as namespace/name at
// resourceVersion rv, and whether it holds one. It is called from the
// goroutine that decodes the watch's events.
type KnownFunc func(namespace, name, rv string) (runtime.Object, bool)

// Known is what a streaming list's caller knows (WithKnown).
type Known struct {
	// Object is asked by the decoder of the watch (KnownObjects).
	Object KnownFunc
	// Handed reports whether an event's object is one Object returned:
	// the caller's own, handed on undecoded. Whatever the watch's events
	// pass through before the caller (a transform) leaves it as it is.
	Handed func(obj runtime.Object) bool
}

type knownKey struct{}

// WithKnown returns ctx carrying k for the streaming list watched under
// it: the SDK's own clients that can decode its events with KnownObjects
// do (a typed client's), any other client ignores it.
func WithKnown(ctx context.Context, k Known) context.Context {
	return context.WithValue(ctx, knownKey{}, k)
}

// KnownFrom returns the Known of WithKnown on ctx; the zero Known if none.
func KnownFrom(ctx context.Context) Known {
	k, _ := ctx.Value(knownKey{}).(Known)
	return k
}

// KnownObjects returns ns with the decoders of every watch it negotiates
// first reading each event's type and its object's metadata from the
// frame's bytes: for an ADDED event whose object known returns, the
// envelope is not decoded (its object's bytes are not copied out of the
// frame) and the object decoder hands that object on as the event's,
// undecoded. With items set (ProtoItems), an ADDED protobuf event's object
// that known does not return (every one, with known nil) is decoded
// straight from the frame's bytes into a new item (InPlace). The first
// event that is not ADDED (the initial-events-end bookmark, an ERROR), or
// whose object's namespace, name and resourceVersion cannot be read, ends
// both: it and every later event of the watch are decoded by ns. One
// KnownObjects serves one watch.
func KnownObjects(ns runtime.NegotiatedSerializer, known KnownFunc, items *InPlace) runtime.NegotiatedSerializer {
	st := &knownState{known: known, items: items}
	infos := slices.Clone(ns.SupportedMediaTypes())
	for i, info := range infos {
		if info.StreamSerializer == nil {
			continue
		}
		ss := *info.StreamSerializer
		ss.Serializer = knownEvents{Serializer: ss.Serializer, st: st, proto: info.MediaType == runtime.ContentTypeProtobuf}
		infos[i].StreamSerializer = &ss
	}
	return knownNegotiated{NegotiatedSerializer: ns, infos: infos, st: st}
}

type knownNegotiated struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
	st    *knownState
}

func (k knownNegotiated) SupportedMediaTypes() []runtime.SerializerInfo { return k.infos }

// DecoderToVersion is the object decoder client-go's REST client asks for
// when it opens a watch (runtime.ClientNegotiator.StreamDecoder).
func (k knownNegotiated) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return knownDecoder{Decoder: k.NegotiatedSerializer.DecoderToVersion(d, gv), st: k.st}
}

// knownState is one watch's: its events are decoded one at a time, from
// one goroutine (client-go's rest/watch.Decoder: the envelope, then its
// object).
type knownState struct {
	known KnownFunc
	items *InPlace
	// inFrame: the current event's object bytes are a slice of the frame
	// (the stream decoder's buffer, read over by the next frame), not a
	// copy.
	inFrame bool
	// done: an event that is not ADDED, or an object without readable
	// metadata, was seen; every event from then on is decoded.
	done bool
	// next is the object known returned for the current event, which the
	// object decoder hands on; asked: known was asked about the current
	// event's object already.
	next  runtime.Object
	asked bool
}

// knownEvents decodes a watch's frames into the *metav1.WatchEvent
// client-go's watch decoder asks for.
type knownEvents struct {
	runtime.Serializer
	st    *knownState
	proto bool
}

func (s knownEvents) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	st := s.st
	st.next, st.asked, st.inFrame = nil, false, false
	ev, ok := into.(*metav1.WatchEvent)
	if st.done || !ok || defaults != nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	if s.proto && st.items != nil {
		return s.decodeInPlace(data, defaults, ev)
	}
	if st.known == nil {
		st.done = true
		return s.Serializer.Decode(data, defaults, into)
	}
	typ, namespace, name, rv, metaOK, ok := eventFrame(data, s.proto)
	if !ok {
		// Not read here: the object decoder reads the object.
		return s.Serializer.Decode(data, defaults, into)
	}
	if typ != string(watch.Added) || !metaOK {
		st.done = true
		return s.Serializer.Decode(data, defaults, into)
	}
	st.asked = true
	if obj, ok := st.known(namespace, name, rv); ok {
		st.next = obj
		*ev = metav1.WatchEvent{Type: typ}
		gvk := watchEventGVK
		return ev, &gvk, nil
	}
	return s.Serializer.Decode(data, defaults, into)
}

// knownDecoder decodes one watch's event objects.
type knownDecoder struct {
	runtime.Decoder
	st *knownState
}

func (d knownDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	st := d.st
	if obj := st.next; obj != nil {
		st.next, st.asked = nil, false
		gvk := obj.GetObjectKind().GroupVersionKind()
		return obj, &gvk, nil
	}
	if asked := st.asked; asked || st.done || defaults != nil || into != nil {
		st.asked = false
		if asked && st.items != nil && defaults == nil && into == nil {
			if obj, gvk, ok := st.items.decode(data); ok {
				return obj, gvk, nil
			}
		}
		if st.inFrame {
			// ns's decoder may keep what it is given (an object it
			// cannot type as runtime.Unknown): not the frame's bytes.
			data = bytes.Clone(data)
		}
		return d.Decoder.Decode(data, defaults, into)
	}
	if namespace, name, rv, ok := objectMeta(data); !ok {
		st.done = true
	} else if obj, ok := st.known(namespace, name, rv); ok {
		gvk := obj.GetObjectKind().GroupVersionKind()
		return obj, &gvk, nil
	}
	return d.Decoder.Decode(data, defaults, into)
}

// The protobuf field numbers of metav1.WatchEvent and of
// runtime.RawExtension (k8s.io/apimachinery's generated.proto files).
const (
	protoWatchEventType   = 1
	protoWatchEventObject = 2
	protoRawExtensionRaw  = 1
)

// eventFrame reads a watch frame's event type and its object's namespace,
// name and resourceVersion, without decoding the rest or copying the
// object's bytes: protobuf (a metav1.WatchEvent, as the apiserver's raw
// protobuf stream serializer writes it) or JSON ({"type":...,
// "object":...}). ok is false when the type and object cannot be read
// unambiguously (a field given twice, malformed bytes); metaOK, when the
// object's metadata cannot be (objectMeta).
func eventFrame(data []byte, proto bool) (typ, namespace, name, rv string, metaOK, ok bool) {
	if !proto {
		var env struct {
			Type   string `json:"type"`
			Object *struct {
				Metadata *struct {
					Name            string `json:"name"`
					Namespace       string `json:"namespace"`
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if kjson.UnmarshalCaseSensitivePreserveInts(data, &env) != nil || env.Type == "" || env.Object == nil {
			return "", "", "", "", false, false
		}
		m := env.Object.Metadata
		if m == nil || m.Name == "" || m.ResourceVersion == "" {
			return env.Type, "", "", "", false, true
		}
		return env.Type, m.Namespace, m.Name, m.ResourceVersion, true, true
	}
	typ, object, ok := protoEvent(data)
	if !ok {
		return "", "", "", "", false, false
	}
	namespace, name, rv, metaOK = objectMeta(object)
	return typ, namespace, name, rv, metaOK, true
}

// protoEvent reads a protobuf metav1.WatchEvent's type and its object's
// bytes (a slice of data).
func protoEvent(data []byte) (typ string, object []byte, ok bool) {
	var sawType, sawObject bool
	var ext []byte
	err := protoFields(data, func(num uint64, v []byte) bool {
		switch num {
		case protoWatchEventType:
			if sawType {
				return false
			}
			sawType, typ = true, string(v)
		case protoWatchEventObject:
			if sawObject {
				return false
			}
			sawObject, ext = true, v
		}
		return true
	})
	if err != nil || !sawType || !sawObject {
		return "", nil, false
	}
	sawRaw := false
	err = protoFields(ext, func(num uint64, v []byte) bool {
		if num == protoRawExtensionRaw {
			if sawRaw {
				return false
			}
			sawRaw, object = true, v
		}
		return true
	})
	if err != nil || !sawRaw {
		return "", nil, false
	}
	return typ, object, true
}

// The protobuf field numbers of runtime.Unknown, the envelope of every
// protobuf-encoded object (k8s.io/apimachinery/pkg/runtime's
// generated.proto).
const (
	protoUnknownRaw             = 2
	protoUnknownContentEncoding = 3
	protoUnknownContentType     = 4
)

// objectMeta reads an encoded object's namespace, name and resourceVersion
// from its bytes without decoding the rest: protobuf (the magic, then a
// runtime.Unknown whose raw bytes are the object's) or JSON. ok is false
// when they cannot be read unambiguously (see protoItemMeta, jsonItemMeta):
// the object is then decoded.
func objectMeta(data []byte) (namespace, name, rv string, ok bool) {
	if !bytes.HasPrefix(data, protoMagic) {
		return jsonItemMeta(data)
	}
	_, raw, ok := protoUnknown(data)
	if !ok {
		return "", "", "", false
	}
	return protoItemMeta(raw)
}

// The protobuf field numbers of runtime.Unknown's TypeMeta and of
// runtime.TypeMeta's fields.
const (
	protoUnknownTypeMeta  = 1
	protoTypeMetaVersion  = 1
	protoTypeMetaKindName = 2
)

// protoUnknown reads a protobuf-encoded object (the magic, then a
// runtime.Unknown) in place: its TypeMeta's bytes and its raw bytes, the
// object's own protobuf. ok is false when those cannot be read
// unambiguously (a field given twice, malformed bytes) or the raw bytes
// are in another encoding (contentEncoding or contentType set).
func protoUnknown(data []byte) (typeMeta, raw []byte, ok bool) {
	if !bytes.HasPrefix(data, protoMagic) {
		return nil, nil, false
	}
	sawRaw, sawType := false, false
	err := protoFields(data[len(protoMagic):], func(num uint64, v []byte) bool {
		switch num {
		case protoUnknownTypeMeta:
			if sawType {
				return false
			}
			sawType, typeMeta = true, v
		case protoUnknownRaw:
			if sawRaw {
				return false
			}
			sawRaw, raw = true, v
		case protoUnknownContentEncoding, protoUnknownContentType:
			// Raw bytes in another encoding are not the object's protobuf.
			return len(v) == 0
		}
		return true
	})
	if err != nil || !sawRaw {
		return nil, nil, false
	}
	return typeMeta, raw, true
}

// InPlace decodes a watch event's protobuf object of one resource straight
// from the frame's bytes. client-go's decoders copy an event's object out
// of the frame (metav1.WatchEvent's raw object), then again out of that
// copy (runtime.Unknown's raw bytes) before they decode it; here neither
// copy is made, so a streaming list's initial events leave no garbage the
// size of the collection's bytes behind them. The item is the one the
// clientset's decoder gives: a new item of the list's type, unmarshalled by
// its generated protobuf code (which copies every string and byte slice out
// of the frame), its TypeMeta left empty as a typed clientset's decoder
// leaves it (runtime.WithoutVersionDecoder).
type InPlace struct {
	item       reflect.Type // the item's struct type
	apiVersion string       // gvk's, as an object's TypeMeta writes it
	gvk        schema.GroupVersionKind
}

// ProtoItems returns the InPlace of sh's items served as gv (a typed
// clientset's group version), whose kind is the item type's name as
// client-gen names kinds; nil when sh's items have no generated protobuf
// code. An object of any other apiVersion or kind is left to the
// clientset's decoder.
func ProtoItems(sh Shape, gv schema.GroupVersion) *InPlace {
	if !sh.proto {
		return nil
	}
	item := sh.listType.Elem().Field(sh.items).Type.Elem()
	return &InPlace{item: item, apiVersion: gv.String(), gvk: gv.WithKind(item.Name())}
}

// decode decodes data, a protobuf-encoded object, in place; ok is false
// when it is not an object of p's apiVersion and kind that its item's
// generated code unmarshals: the clientset's decoder then decodes it (and
// fails on it as it does).
func (p *InPlace) decode(data []byte) (runtime.Object, *schema.GroupVersionKind, bool) {
	typeMeta, raw, ok := protoUnknown(data)
	if !ok {
		return nil, nil, false
	}
	var apiVersion, kind []byte
	var seen [protoTypeMetaKindName + 1]bool
	err := protoFields(typeMeta, func(num uint64, v []byte) bool {
		switch num {
		case protoTypeMetaVersion, protoTypeMetaKindName:
			if seen[num] {
				return false
			}
			seen[num] = true
			if num == protoTypeMetaVersion {
				apiVersion = v
			} else {
				kind = v
			}
		}
		return true
	})
	if err != nil || string(apiVersion) != p.apiVersion || string(kind) != p.gvk.Kind {
		return nil, nil, false
	}
	item := reflect.New(p.item)
	obj, ok := item.Interface().(runtime.Object)
	u, okU := item.Interface().(protoUnmarshaler)
	if !ok || !okU || u.Unmarshal(raw) != nil {
		return nil, nil, false
	}
	gvk := p.gvk
	return obj, &gvk, true
}

// decodeInPlace is knownEvents.Decode with InPlace: a protobuf frame's
// ADDED event is read in place, and its object is left in the frame for
// the object decoder (knownDecoder), which decodes it with InPlace unless
// known returns it.
func (s knownEvents) decodeInPlace(data []byte, defaults *schema.GroupVersionKind, ev *metav1.WatchEvent) (runtime.Object, *schema.GroupVersionKind, error) {
	st := s.st
	typ, object, ok := protoEvent(data)
	if !ok {
		return s.Serializer.Decode(data, defaults, ev)
	}
	if typ != string(watch.Added) {
		st.done = true
		return s.Serializer.Decode(data, defaults, ev)
	}
	if st.known != nil {
		namespace, name, rv, metaOK := objectMeta(object)
		if !metaOK {
			st.done = true
			return s.Serializer.Decode(data, defaults, ev)
		}
		if obj, ok := st.known(namespace, name, rv); ok {
			st.next = obj
			*ev = metav1.WatchEvent{Type: typ}
			gvk := watchEventGVK
			return ev, &gvk, nil
		}
	}
	st.asked, st.inFrame = true, true
	*ev = metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: object}}
	gvk := watchEventGVK
	return ev, &gvk, nil
}
