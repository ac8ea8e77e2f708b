package lister

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// BenchmarkListBody lists 10,000 ConfigMaps (~1.7 KB each) from an HTTP
// server in one response, protobuf and JSON, through client-go's typed
// client (impl=clientgo: the body read whole, then decoded) and through
// FromClientset (impl=itembyitem: decoded item by item as it arrives), side
// by side in one run; and the JSON body as unstructured objects through
// the dynamic client and FromDynamicConfig:
//
//	go test -run '^$' -bench BenchmarkListBody -benchmem -count 10 ./lister | benchstat -row .name -col /impl -
func BenchmarkListBody(b *testing.B) {
	list := testfake.RichConfigMaps(10000)
	for _, enc := range []struct {
		name  string
		proto bool
		ct    string
	}{{"proto", true, "application/vnd.kubernetes.protobuf"}, {"json", false, "application/json"}} {
		body := testfake.EncodeList(b, list, enc.proto)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", enc.ct)
			_, _ = w.Write(body)
		}))
		cfg := &rest.Config{Host: srv.URL, QPS: -1}
		if !enc.proto {
			cfg.ContentType = "application/json"
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		ours, err := FromClientset(cs, &corev1.ConfigMap{}, "ns")
		if err != nil {
			b.Fatal(err)
		}
		typed := cs.CoreV1().ConfigMaps("ns")
		benchLists(b, "enc="+enc.name, len(body), func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return typed.List(ctx, o)
		}, ours)
		srv.Close()
	}
	// The same JSON body through the dynamic client (unstructured) and
	// FromDynamicConfig.
	body := testfake.EncodeList(b, list, false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(gvr).Namespace("ns")
	ours, err := FromDynamicConfig(cfg, gvr, "ns")
	if err != nil {
		b.Fatal(err)
	}
	benchLists(b, "enc=unstructured", len(body), func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return dyn.List(ctx, o)
	}, ours)
}

// benchLists runs one sub-benchmark per impl: client-go's list and ours,
// each answered the same body of 10,000 items.
func benchLists(b *testing.B, name string, bodyLen int, clientgo func(context.Context, metav1.ListOptions) (runtime.Object, error), ours Client) {
	for _, impl := range []string{"clientgo", "itembyitem"} {
		list := clientgo
		if impl == "itembyitem" {
			list = ours.List
		}
		b.Run(name+"/impl="+impl, func(b *testing.B) {
			b.SetBytes(int64(bodyLen))
			b.ReportAllocs()
			for b.Loop() {
				l, err := list(context.Background(), metav1.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if n := meta.LenList(l); n != 10000 {
					b.Fatalf("%d items", n)
				}
			}
		})
	}
}
