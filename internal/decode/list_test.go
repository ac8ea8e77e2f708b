package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

func ptrTo[T any](v T) *T { return &v }

func richDeployments() *appsv1.DeploymentList {
	return &appsv1.DeploymentList{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DeploymentList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items: []appsv1.Deployment{{
			ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptrTo(int32(3)),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromString("25%"))}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "c", Image: "i",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
				}}}},
			},
		}},
	}
}

// clientGoDecode decodes body as client-go's typed REST client does
// (rest.Config's negotiated serializer for typed clients is
// scheme.Codecs.WithoutConversion()).
func clientGoDecode(t testing.TB, body []byte, into runtime.Object) runtime.Object {
	t.Helper()
	dec := runtime.WithoutVersionDecoder{Decoder: scheme.Codecs.UniversalDeserializer()}
	obj, _, err := dec.Decode(body, nil, into)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func mustShape(t testing.TB, list runtime.Object) Shape {
	t.Helper()
	sh, ok := ShapeOf(reflect.TypeOf(list))
	if !ok {
		t.Fatalf("%T: no item-by-item shape", list)
	}
	return sh
}

// Item by item, the decoded list is the list client-go decodes from the
// same bytes, for both encodings, several types, an empty list and items
// large enough to span many reads.
func TestDecodeListMatchesClientGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		list runtime.Object
		new  func() runtime.Object
	}{
		{"configmaps", testfake.RichConfigMaps(200), func() runtime.Object { return &corev1.ConfigMapList{} }},
		{"empty", testfake.RichConfigMaps(0), func() runtime.Object { return &corev1.ConfigMapList{} }},
		{"deployments", richDeployments(), func() runtime.Object { return &appsv1.DeploymentList{} }},
	} {
		for _, proto := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/proto=%v", tc.name, proto), func(t *testing.T) {
				body := testfake.EncodeList(t, tc.list, proto)
				want := clientGoDecode(t, body, tc.new())
				got, err := decodeList(bytes.NewReader(body), mustShape(t, tc.new()))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("decoded item by item:\n%#v\nclient-go:\n%#v", got, want)
				}
			})
		}
	}
}

// A body cut anywhere is an error, never a shorter list: every prefix of
// both encodings either fails or (protobuf, cut after the list message and
// before the envelope's empty trailing fields) decodes to the whole list.
func TestDecodeListTruncatedIsAnError(t *testing.T) {
	full := testfake.RichConfigMaps(4)
	for _, proto := range []bool{true, false} {
		body := testfake.EncodeList(t, full, proto)
		want := clientGoDecode(t, body, &corev1.ConfigMapList{})
		sh := mustShape(t, &corev1.ConfigMapList{})
		complete := 0
		for n := range len(body) {
			got, err := decodeList(bytes.NewReader(body[:n]), sh)
			if err == nil {
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("proto=%v: prefix %d/%d decoded to a different list (%d items)", proto, n, len(body), len(got.(*corev1.ConfigMapList).Items))
				}
				complete++
				continue
			}
			if !errors.Is(err, ErrListBody) {
				t.Fatalf("proto=%v: prefix %d: %v; want an ErrListBody", proto, n, err)
			}
		}
		// Protobuf: only the cuts inside the envelope's two empty trailing
		// fields (2 bytes each) are complete; JSON: only the cut of the
		// final newline.
		if (proto && complete > 4) || (!proto && complete > 1) {
			t.Errorf("proto=%v: %d prefixes decoded as complete", proto, complete)
		}
	}
}

// A Status answered in place of the list (with a 2xx code) is its API
// error, as client-go's typed client returns it.
func TestDecodeListStatusIsAnError(t *testing.T) {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410, Message: "too old"}
	for _, proto := range []bool{true, false} {
		body := testfake.EncodeList(t, st, proto)
		_, err := decodeList(bytes.NewReader(body), mustShape(t, &corev1.ConfigMapList{}))
		if !apierrors.IsResourceExpired(err) {
			t.Errorf("proto=%v: %v; want the Status's 410 Expired", proto, err)
		}
	}
}

// Lengths in the body are the server's: a length far beyond the body
// allocates nothing near it and fails as a truncated body.
func TestDecodeListLyingLengths(t *testing.T) {
	sh := mustShape(t, &corev1.ConfigMapList{})
	for name, body := range map[string][]byte{
		"raw 2^40":       append(append([]byte{}, protoMagic...), 0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20),
		"item 2^40":      append(append([]byte{}, protoMagic...), 0x12, 0x08, 0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0),
		"item past list": append(append([]byte{}, protoMagic...), 0x12, 0x02, 0x12, 0x05, 1, 2, 3, 4, 5),
		"bad wire type":  append(append([]byte{}, protoMagic...), 0x12, 0x02, 0x17, 0x00),
		"only typeMeta":  append(append([]byte{}, protoMagic...), 0x0a, 0x00),
		"empty":          nil,
		"json items obj": []byte(`{"items":{}}`),
		"json trailing":  []byte(`{"items":[]} {}`),
		"json twice":     []byte(`{"items":[],"items":[]}`),
	} {
		before := totalAlloc()
		_, err := decodeList(bytes.NewReader(body), sh)
		grew := totalAlloc() - before
		if !errors.Is(err, ErrListBody) {
			t.Errorf("%s: %v; want an ErrListBody", name, err)
		}
		if grew > 16<<20 {
			t.Errorf("%s: allocated %d bytes", name, grew)
		}
	}
}

// Unknown fields of the list (a newer server's) are skipped in both
// encodings.
func TestDecodeListSkipsUnknownFields(t *testing.T) {
	sh := mustShape(t, &corev1.ConfigMapList{})
	body := []byte(`{"kind":"ConfigMapList","apiVersion":"v1","future":{"a":[1,2]},"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"},"data":{"k":"v"}}],"more":null}`)
	got, err := decodeList(bytes.NewReader(body), sh)
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*corev1.ConfigMapList)
	if l.ResourceVersion != "5" || len(l.Items) != 1 || l.Items[0].Name != "a" || l.Items[0].Data["k"] != "v" {
		t.Fatalf("decoded %+v", l)
	}
	// Protobuf: a list message with a field 9 (bytes), field 10 (varint),
	// field 11 (fixed32) and 12 (fixed64) before its item.
	item, _ := (&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}).Marshal()
	list := []byte{0x4a, 0x01, 'x', 0x50, 0x96, 0x01, 0x5d, 1, 2, 3, 4, 0x61, 1, 2, 3, 4, 5, 6, 7, 8, 0x12, byte(len(item))}
	list = append(list, item...)
	pb := append(append([]byte{}, protoMagic...), 0x12, byte(len(list)))
	pb = append(pb, list...)
	got, err = decodeList(bytes.NewReader(pb), sh)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.(*corev1.ConfigMapList); len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Fatalf("decoded %+v", l)
	}
}

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		list runtime.Object
		ok   bool
	}{
		{&corev1.ConfigMapList{}, true},
		{&appsv1.DeploymentList{}, true},
		{&metav1.PartialObjectMetadataList{}, true},
		{&metav1.List{}, false}, // items are RawExtensions
		{&corev1.ConfigMap{}, false},
		{nil, false},
	} {
		sh, ok := ShapeOf(reflect.TypeOf(tc.list))
		ok = ok && sh.proto
		if ok != tc.ok {
			t.Errorf("%T: ok %v; want %v", tc.list, ok, tc.ok)
		}
		if ok && (sh.itemsNum != 2 || sh.metaNum != 1 || sh.itemsJSON != "items" || sh.metaJSON != "metadata") {
			t.Errorf("%T: shape %+v", tc.list, sh)
		}
	}
}

// The decoder reads the body as it arrives: it never asks for more than
// one buffered read beyond what it has decoded.
func TestDecodeListReadsIncrementally(t *testing.T) {
	body := testfake.EncodeList(t, testfake.RichConfigMaps(2000), true)
	r := &trickle{data: body, chunk: 1000}
	if _, err := decodeList(r, mustShape(t, &corev1.ConfigMapList{})); err != nil {
		t.Fatal(err)
	}
	if r.maxAsk > 64<<10 {
		t.Errorf("asked for %d bytes at once", r.maxAsk)
	}
}

type trickle struct {
	data          []byte
	chunk, maxAsk int
}

func (r *trickle) Read(p []byte) (int, error) {
	r.maxAsk = max(r.maxAsk, len(p))
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[:min(len(r.data), r.chunk)])
	r.data = r.data[n:]
	return n, nil
}

// FuzzDecodeList feeds arbitrary bodies to the item-by-item decoder: it
// never panics, and every failure is an ErrListBody or the API error of a
// Status, never anything else.
func FuzzDecodeList(f *testing.F) {
	f.Add(testfake.EncodeList(f, testfake.RichConfigMaps(3), true))
	f.Add(testfake.EncodeList(f, testfake.RichConfigMaps(3), false))
	f.Add(testfake.EncodeList(f, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Code: 410}, true))
	f.Add([]byte(`{"kind":"Status","code":500}`))
	sh, _ := ShapeOf(reflect.TypeFor[*corev1.ConfigMapList]())
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeList(bytes.NewReader(body), sh)
		var se *apierrors.StatusError
		if err != nil && !errors.Is(err, ErrListBody) && !errors.As(err, &se) {
			t.Fatalf("error %v (%T); want an ErrListBody or a StatusError", err, err)
		}
		if err == nil && got == nil {
			t.Fatal("no list and no error")
		}
	})
}

// FuzzDecodeListJSON holds the item-by-item JSON decoding to decoding the
// whole body at once with the same function (what client-go's JSON
// serializer does once it has read the kind): whatever one accepts the
// other accepts, with the same list (the whole-body decoding keeps the
// last of repeated keys, so bodies that repeat "items" are left out).
func FuzzDecodeListJSON(f *testing.F) {
	f.Add(testfake.EncodeList(f, testfake.RichConfigMaps(3), false))
	f.Add([]byte(`{"items":[{"metadata":{"name":"a\"]}"}},{}],"metadata":{"resourceVersion":"1"}}`))
	f.Add([]byte(` {"items" : null , "x":[1,{"y":"\\"}]} `))
	sh, _ := ShapeOf(reflect.TypeFor[*corev1.ConfigMapList]())
	f.Fuzz(func(t *testing.T, body []byte) {
		if bytes.Count(body, []byte(`"items"`)) > 1 || bytes.Contains(body, []byte(`\u`)) || !bytes.Contains(body, []byte("{")) {
			return
		}
		var want corev1.ConfigMapList
		werr := kjson.UnmarshalCaseSensitivePreserveInts(body, &want)
		got, err := decodeList(bytes.NewReader(body), sh)
		if werr == nil && want.Kind == "Status" {
			return
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("item by item: %v; whole body: %v", err, werr)
		}
		if err != nil {
			return
		}
		want.TypeMeta = metav1.TypeMeta{}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("item by item %#v; whole body %#v", got, &want)
		}
	})
}

// totalAlloc is the total of bytes allocated so far.
func totalAlloc() uint64 {
	var s goruntime.MemStats
	goruntime.ReadMemStats(&s)
	return s.TotalAlloc
}

// An error names the item it failed on by its index, in every decoding.
func TestDecodeListErrorNamesTheItem(t *testing.T) {
	body := []byte(`{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"}},{"metadata":7}]}`)
	_, err := decodeList(bytes.NewReader(body), mustShape(t, &corev1.ConfigMapList{}))
	if err == nil || !strings.Contains(err.Error(), "decoding item 1") {
		t.Errorf("typed: %v; want it to name item 1", err)
	}
	_, err = decodeUnstructuredList(bytes.NewReader([]byte(`{"kind":"ConfigMapList","items":[{"a":1},{"a":}]}`)))
	if err == nil || !strings.Contains(err.Error(), "decoding item 1") {
		t.Errorf("unstructured: %v; want it to name item 1", err)
	}
	item, _ := (&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}).Marshal()
	list := append([]byte{0x12, byte(len(item))}, item...)
	list = append(list, 0x12, 0x02, 0x0a, 0x05) // item 1: metadata claims 5 bytes, has 0
	pb := append(append([]byte{}, protoMagic...), 0x12, byte(len(list)))
	_, err = decodeList(bytes.NewReader(append(pb, list...)), mustShape(t, &corev1.ConfigMapList{}))
	if err == nil || !strings.Contains(err.Error(), "decoding item 1") {
		t.Errorf("protobuf: %v; want it to name item 1", err)
	}
}

// decodeList decodes body with no transform.
func decodeList(body io.Reader, sh Shape) (runtime.Object, error) { return List(body, sh, nil) }

// decodeUnstructuredList decodes body with no transform.
func decodeUnstructuredList(body io.Reader) (*unstructured.UnstructuredList, error) {
	return Unstructured(body, nil)
}
