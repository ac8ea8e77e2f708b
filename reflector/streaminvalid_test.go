package reflector_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// currentServer is a compat Server for a host whose /version says v1.37.2
// (streaming lists believed to work until observed otherwise).
func currentServer() compat.Server {
	return capability.NewDetector(capability.DetectorOptions{}).For("https://current.example", func(context.Context) (string, error) { return "v1.37.2", nil })
}

// streamingBelief is the belief about streaming lists of core v1, the scope
// a ConfigMap reflector keeps its evidence in.
func streamingBelief(server compat.Server) capability.Support {
	return capability.ForGroupVersion(server, schema.GroupVersion{Version: "v1"}).Capabilities(context.Background()).Get(capability.StreamingList)
}

// withSelector sends every request of c with the label selector sel.
func withSelector(c lister.Client, sel string) lister.Client {
	return lister.FromFuncs(
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return c.List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return c.Watch(ctx, o)
		})
}

// runUntil runs r until cond holds (polled, with a deadline) and stops it.
func runUntil(t *testing.T, r *reflector.Reflector, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// A streaming list refused 400 for the caller's own bad label selector is
// not evidence that the server cannot stream lists: the belief (shared by
// every informer on the host) must stay as it was, so that other informers
// keep streaming. The same classification as the drop-in ListerWatcher's
// (fallback.RejectsStreamingList).
func TestStreamingListInvalidForCallerIsNotEvidence(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	defer srv.Close()
	ns := srv.InNamespace("default")
	server := currentServer()
	r := reflector.New(withSelector(ns, "app in ("), &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc),
		reflector.Options{Lister: lister.Options{Name: "configmaps", Server: server}})
	runUntil(t, r, func() bool {
		return srv.Count("watch") >= 1 && srv.Count("list") >= 1
	})

	var streamed bool
	for _, req := range srv.Requests() {
		if req.Verb == "watch" && req.Options.SendInitialEvents != nil && *req.Options.SendInitialEvents {
			streamed = true
			if fallback.Classify(req.Err) != fallback.Invalid {
				t.Fatalf("streaming list answered %v; want the server's 400 for the bad selector", req.Err)
			}
		}
	}
	if !streamed {
		t.Fatalf("no streaming list sent; requests %+v", srv.Requests())
	}
	if got := streamingBelief(server); got == capability.No {
		t.Fatalf("StreamingList belief = %v after the caller's own 400; want it unchanged (not No)", got)
	}
}

// A 422 naming sendInitialEvents is evidence: the belief becomes No.
func TestStreamingListRefusedByServerIsEvidence(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{
		Faults: steadywatchtest.Faults{RefuseStreamingList: true}})
	defer srv.Close()
	server := currentServer()
	r := reflector.New(srv.InNamespace("default"), &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc),
		reflector.Options{Lister: lister.Options{Name: "configmaps", Server: server}})
	runUntil(t, r, r.HasSynced)
	if got := streamingBelief(server); got != capability.No {
		t.Fatalf("StreamingList belief = %v after a 422 naming sendInitialEvents; want No", got)
	}
}
