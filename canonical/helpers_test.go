package canonical

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// the Gateway API versioning guide's BackendTLSPolicy example: v1alpha2 renames spec.tls to
// spec.validation. v1beta1 is a future shape (renames spec.validation to
// spec.backendValidation) that the controller under test does not support.
var (
	specKeysV1alpha1 = []string{"targetRefs", "tls", "options"}
	specKeysV1alpha2 = []string{"targetRefs", "validation", "options"}
)

func btlsShapes() []Shape {
	return []Shape{
		{
			Name:      "v1alpha1",
			Recognize: AllOf(HasField("spec", "tls"), OnlyKeys([]string{"spec"}, append(specKeysV1alpha1, "validation")...)),
			Upgrade:   MoveField([]string{"spec", "tls"}, []string{"spec", "validation"}),
			Downgrade: MoveField([]string{"spec", "validation"}, []string{"spec", "tls"}),
		},
		{
			Name:      "v1alpha2",
			Recognize: AllOf(LacksField("spec", "tls"), OnlyKeys([]string{"spec"}, specKeysV1alpha2...)),
			Upgrade:   MoveField([]string{"spec", "validation"}, []string{"spec", "backendValidation"}),
			Downgrade: MoveField([]string{"spec", "backendValidation"}, []string{"spec", "validation"}),
		},
		{
			Name:      "v1beta1",
			Recognize: AllOf(HasField("spec", "backendValidation"), LacksField("spec", "validation"), LacksField("spec", "tls")),
		},
	}
}

func btlsChain(t testing.TB) *Chain {
	t.Helper()
	c, err := NewChain("v1alpha2", btlsShapes()...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func obj(t testing.TB, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	// utiljson decodes integers as int64, as the apimachinery decoders do.
	if err := utiljson.Unmarshal([]byte(js), &u.Object); err != nil {
		t.Fatalf("bad test JSON %s: %v", js, err)
	}
	return u
}

func mustJSON(t testing.TB, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	v1alpha1Obj = `{"apiVersion":"gateway.example.io/v1alpha1","kind":"BackendTLSPolicy","metadata":{"name":"a","namespace":"ns","resourceVersion":"10"},"spec":{"targetRefs":[{"name":"svc"}],"tls":{"hostname":"a.example","caCertRefs":[{"name":"ca"}]}}}`
	v1alpha2Obj = `{"apiVersion":"gateway.example.io/v1alpha2","kind":"BackendTLSPolicy","metadata":{"name":"b","namespace":"ns","resourceVersion":"11"},"spec":{"targetRefs":[{"name":"svc"}],"validation":{"hostname":"b.example"}}}`
	v1beta1Obj  = `{"apiVersion":"gateway.example.io/v1alpha2","kind":"BackendTLSPolicy","metadata":{"name":"c","namespace":"ns","resourceVersion":"12"},"spec":{"backendValidation":{"hostname":"c.example"}}}`
	unknownObj  = `{"apiVersion":"gateway.example.io/v1alpha2","kind":"BackendTLSPolicy","metadata":{"name":"d","namespace":"ns","resourceVersion":"13","labels":{"x":"y"}},"spec":{"validation":{"hostname":"d.example"},"sessionPersistence":{"mode":"cookie"}}}`
)
