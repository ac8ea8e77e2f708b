package canonical

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// benchObject is a BackendTLSPolicy of realistic size (about 2 KiB of JSON:
// managedFields, 10 target refs, 5 CA refs).
func benchObject(b *testing.B, shape string) *unstructured.Unstructured {
	refs := []any{}
	for i := 0; i < 10; i++ {
		refs = append(refs, map[string]any{"group": "", "kind": "Service", "name": fmt.Sprintf("svc-%d", i), "sectionName": "https"})
	}
	cas := []any{}
	for i := 0; i < 5; i++ {
		cas = append(cas, map[string]any{"group": "", "kind": "ConfigMap", "name": fmt.Sprintf("ca-%d", i)})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.example.io/v1alpha2", "kind": "BackendTLSPolicy",
		"metadata": map[string]any{
			"name": "bench", "namespace": "ns", "resourceVersion": "12345", "uid": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
			"labels": map[string]any{"app": "web", "tier": "frontend"},
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:targetRefs": map[string]any{}, "f:tls": map[string]any{}}}}},
		},
		"spec": map[string]any{
			"targetRefs": refs,
			shape:        map[string]any{"hostname": "backend.example.com", "caCertificateRefs": cas, "wellKnownCACertificates": "System"},
		},
	}}
	return u
}

// BenchmarkCanonicalize measures the cost the decorator adds per object:
// already canonical (recognisers only, no copy), older (deep copy + MoveField
// + canonical check), and the deep copy alone for comparison.
func BenchmarkCanonicalize(b *testing.B) {
	c := btlsChain(b)
	for _, tc := range []struct{ name, field string }{{"canonical", "validation"}, {"older", "tls"}} {
		u := benchObject(b, tc.field)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.Canonicalize(u); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	u := benchObject(b, "tls")
	b.Run("deepcopy-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = u.DeepCopy()
		}
	})
}
