package reflector

import (
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/reason"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// The client of lister.WrapDecoding
// (steadywatch's decoding client, checked against the caller's
// ListerWatcher's scope): once the first list's scope check has confirmed
// the scope, a relist answered in one response is applied object by object
// as it is decoded, as over lister.FromClientset. The store holds the
// first objects before the rest of the body is sent.
func TestScopedDecodingRelistAppliesObjectsAsDecoded(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			relist := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"), testfake.ConfigMap("d", "18")), cutAt: 2,
				sent: make(chan struct{}), release: make(chan struct{})}
			s := &oneResponseServer{t: t, proto: enc.proto, scopePages: true,
				initial: cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")), relists: []relistAnswer{relist}}
			cfg, _ := testfake.WireServer(t, false, s.serve)
			cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "ns")
			if err != nil {
				t.Fatal(err)
			}
			lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "ns", fields.Everything())
			rec := &testfake.Recorder{}
			o := fastOptions(rec)
			o.PaginateLists = false
			knobs.ListerOf(&o.Lister).Policy.Backoff = policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}
			c := &clients.Scoped{LW: lister.FromListerWatcher(lw), Dec: dec, Name: "configmaps", Metrics: rec, Reason: string(reason.DecodingScopeMismatch)}
			store := newAppliedStore()
			r := New(c, &corev1.ConfigMap{}, store, o)
			run(t, r)
			relistAppliedAsDecoded(t, r, store, relist)
			if c.Confirmed() == nil {
				t.Fatal("the first list's scope check did not confirm the scope")
			}
			if n := s.probes.Load(); n != 1 {
				t.Fatalf("%d scope checks; want 1 (the first list's)", n)
			}
		})
	}
}
