package lister

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

// The adapters send their watches themselves (once, with no retry inside
// client-go): each is the request client-go's own client sends, byte for
// byte (path, parameters, Accept).
func TestWatchRequestsMatch(t *testing.T) {
	cfg, answer, last := answering(t)
	answer(http.StatusOK, "")
	opts := metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "5", AllowWatchBookmarks: true, TimeoutSeconds: ptrTo(int64(30))}
	same := func(what string, ours, theirs func() (interface{ Stop() }, error)) {
		t.Helper()
		w, err := ours()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		w.Stop()
		oursReq := last()
		w, err = theirs()
		if err != nil {
			t.Fatalf("%s: client-go: %v", what, err)
		}
		w.Stop()
		if theirsReq := last(); oursReq != theirsReq {
			t.Errorf("%s: request\n%s\nwant client-go's\n%s", what, oursReq, theirsReq)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range everyTypedResource(t) {
		for _, ns := range []string{"ns", ""} {
			c := typedOf(tr.Client(cs, ns))
			same(tr.String(), func() (interface{ Stop() }, error) { return c.Watch(context.Background(), opts) },
				func() (interface{ Stop() }, error) { return c.Clientset().Watch(context.Background(), opts) })
			n++
		}
	}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	md, err := FromMetadataConfig(cfg, gvr, "ns")
	if err != nil {
		t.Fatal(err)
	}
	mc := metadata.NewForConfigOrDie(cfg).Resource(gvr).Namespace("ns")
	same("metadata", func() (interface{ Stop() }, error) { return md.Watch(context.Background(), opts) },
		func() (interface{ Stop() }, error) { return mc.Watch(context.Background(), opts) })
	t.Logf("%d typed clients' watch requests compared", n)
}
