package lister

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// A listgate.Gate shares answers only between requests whose clients have
// equal, non-empty keys: the same REST client instance and the same path.
func TestRequestKeysNameTheClientInstanceAndPath(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"} // nothing is sent
	key := func(c Client, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		k, ok := c.(interface{ RequestKey() string })
		if !ok {
			return ""
		}
		return k.RequestKey()
	}
	cs1, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs2, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := key(FromClientset(cs1, &corev1.ConfigMap{}, "ns"))
	if a == "" {
		t.Fatal("FromClientset's client has no request key")
	}
	if same := key(FromClientset(cs1, &corev1.ConfigMap{}, "ns")); same != a {
		t.Errorf("same clientset, same resource: key %q, want %q", same, a)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	dyn := key(FromDynamicConfig(cfg, gvr, "ns"))
	for name, other := range map[string]string{
		"another clientset (another transport)": key(FromClientset(cs2, &corev1.ConfigMap{}, "ns")),
		"another namespace":                     key(FromClientset(cs1, &corev1.ConfigMap{}, "other")),
		"another resource":                      key(FromClientset(cs1, &corev1.Secret{}, "ns")),
		"dynamic":                               dyn,
		"metadata":                              key(FromMetadataConfig(cfg, gvr, "ns")),
	} {
		if other == "" || other == a {
			t.Errorf("%s: key %q, want a key of its own (not %q)", name, other, a)
		}
	}
	if other := key(FromDynamicConfig(cfg, gvr, "ns")); other == "" || other == dyn {
		t.Errorf("two FromDynamicConfig clients (two REST clients) share key %q", dyn)
	}
	// Clients whose request the SDK does not build are never shared.
	cms := fake.NewClientset().CoreV1().ConfigMaps("ns")
	if k := key(FromFuncs(cms.List, cms.Watch), nil); k != "" {
		t.Errorf("FromFuncs: key %q, want none", k)
	}
	if k := key(FromClientset(fake.NewClientset(), &corev1.ConfigMap{}, "ns")); k != "" {
		t.Errorf("a fake clientset's client: key %q, want none", k)
	}
}
