package lister

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// CurrentResourceVersion sends one limit=1 MostRecent list with the
// lister's selectors, records it, and returns its ListMeta.resourceVersion
// ("" without error when the answer carries none).
func TestCurrentResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		name, served string
	}{
		{"served", "42"},
		{"none", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &testfake.Client{T: t, ListFn: func(_ int, o metav1.ListOptions) (runtime.Object, error) {
				return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: tc.served}}, nil
			}}
			l := New(c, Options{LabelSelector: "app=a", FieldSelector: "metadata.namespace=x"})
			rv, rec, err := l.CurrentResourceVersion(context.Background())
			if err != nil || rv != tc.served {
				t.Fatalf("CurrentResourceVersion = %q, %v; want %q, nil", rv, err, tc.served)
			}
			sent := c.Lists()
			if len(sent) != 1 {
				t.Fatalf("%d requests, want 1", len(sent))
			}
			o := sent[0]
			if o.Limit != 1 || o.ResourceVersion != "" || o.ResourceVersionMatch != "" || o.Continue != "" ||
				o.LabelSelector != "app=a" || o.FieldSelector != "metadata.namespace=x" {
				t.Fatalf("request %+v; want a limit=1 MostRecent list with the lister's selectors", o)
			}
			if len(rec.Requests) != 1 || rec.Requests[0].Purpose != purposeNewerRVProbe || rec.ServedResourceVersion != tc.served {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}
