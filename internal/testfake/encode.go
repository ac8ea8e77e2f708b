package testfake

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// RichConfigMaps is a ConfigMapList whose items exercise strings, maps,
// byte slices, times, owner references and managed fields.
func RichConfigMaps(n int) *corev1.ConfigMapList {
	remaining := int64(7)
	l := &corev1.ConfigMapList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "12345", Continue: "tok", RemainingItemCount: &remaining},
	}
	ctrl := true
	for i := range n {
		l.Items = append(l.Items, corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("cm-%d", i), Namespace: "ns", UID: "u", ResourceVersion: fmt.Sprint(100 + i),
				Labels:            map[string]string{"a": "b", "i": fmt.Sprint(i)},
				Annotations:       map[string]string{"long": strings.Repeat("x", 100*(i%50))},
				CreationTimestamp: metav1.Unix(1700000000+int64(i), 0),
				OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pu", Controller: &ctrl}},
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}},
			},
			Data:       map[string]string{"k": strings.Repeat("v", i%7)},
			BinaryData: map[string][]byte{"b": bytes.Repeat([]byte{byte(i)}, i%5+1)},
		})
	}
	if n == 0 {
		l.Items = []corev1.ConfigMap{}
	}
	return l
}

// EncodeList encodes obj as an apiserver answers a typed client: protobuf
// or JSON, with client-go's scheme.
func EncodeList(t testing.TB, obj runtime.Object, proto bool) []byte {
	t.Helper()
	var s runtime.Serializer = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	if proto {
		s = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	}
	var buf bytes.Buffer
	if err := s.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
