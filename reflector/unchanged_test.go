package reflector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// A relist applied to steadywatch's own informer keeps each object the
// informer holds at the listed resourceVersion without decoding it (an
// etcd resourceVersion names one write), and hands the handlers what
// client-go's informer hands them for a relisted object of an unchanged
// version: an update from the object to itself. Changed and new objects
// are decoded and handed over as updates and adds, absent ones deleted,
// and an object older than the store's still ends the list as stale.

// handlerCalls records an informer's handler calls: "add ns/a@1",
// "update ns/a@1->2", "delete ns/c@3" ("tombstone" when the deletion came
// as a cache.DeletedFinalStateUnknown).
type handlerCalls struct {
	mu    sync.Mutex
	calls []string
}

func (h *handlerCalls) add(s string) { h.mu.Lock(); h.calls = append(h.calls, s); h.mu.Unlock() }

func (h *handlerCalls) since(i int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls[min(i, len(h.calls)):])
}

// expectCalls waits for the handler calls after the first `from` and
// fails unless they are exactly want.
func (h *handlerCalls) expectCalls(t *testing.T, from int, want []string) {
	t.Helper()
	testfake.WaitFor(t, "the relist's handler calls", func() bool { return len(h.since(from)) >= len(want) })
	if got := h.since(from); !slices.Equal(got, want) {
		t.Fatalf("handler calls %q; want %q", got, want)
	}
}

func objID(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return m.GetNamespace() + "/" + m.GetName() + "@" + m.GetResourceVersion()
}

func (h *handlerCalls) funcs() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { h.add("add " + objID(obj)) },
		UpdateFunc: func(old, obj any) {
			m, _ := meta.Accessor(obj)
			h.add("update " + objID(old) + "->" + m.GetResourceVersion())
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				h.add("delete " + objID(tomb.Obj) + " tombstone")
				return
			}
			h.add("delete " + objID(obj))
		},
	}
}

// unchangedInformer runs steadywatch's informer over reflector.New over
// lister.FromClientset against s, with one handler, and counts the objects
// its lists decode (Options.Lister.Transform runs on each decoded object).
// With everyDecodedStored (no list is stale), the test fails unless the
// informer's transform ran once per decoded object: a kept one is not
// transformed again.
func unchangedInformer(t *testing.T, s *oneResponseServer, everyDecodedStored bool) (inf *adoptedInformer, h *handlerCalls, decoded *atomic.Int32, rec *testfake.Recorder) {
	t.Helper()
	c, o, rec := oneResponseClient(t, s)
	decoded, transformed := &atomic.Int32{}, &atomic.Int32{}
	o.Lister.Transform = func(obj any) (any, error) { decoded.Add(1); return obj, nil }
	t.Cleanup(func() {
		if d, tr := decoded.Load(), transformed.Load(); everyDecodedStored && d != tr {
			t.Errorf("the informer's transform ran %d times for %d objects decoded; want once each", tr, d)
		}
	})
	// The informer's own transform runs once per object stored: an object
	// kept is not transformed again (it counts with the decoded ones).
	inf, h = runCountingInformer(t, c, o, transformed)
	return inf, h, decoded, rec
}

// runCountingInformer runs an informer over c with o until the test ends,
// recording its handler calls; its SetTransform counts into stored (once
// per object written to the store).
func runCountingInformer(t *testing.T, c lister.Client, o Options, stored *atomic.Int32) (*adoptedInformer, *handlerCalls) {
	t.Helper()
	inf := newInformer(c, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, o, "test")
	if err := inf.SetTransform(func(obj any) (any, error) { stored.Add(1); return obj, nil }); err != nil {
		t.Fatal(err)
	}
	h := &handlerCalls{}
	if _, err := inf.AddEventHandler(h.funcs()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return inf, h
}

// relistOnce runs unchangedInformer (every decoded object stored) against
// a server that answers initial, then relist, in protobuf or JSON; it
// returns once the relist is applied, with the number of handler calls of
// the first sync (its adds: the store was empty, so it decoded every
// object) and the number of objects the relist decoded.
func relistOnce(t *testing.T, proto bool, initial, relist *corev1.ConfigMapList) (inf *adoptedInformer, h *handlerCalls, first int, relistDecoded int32) {
	t.Helper()
	s := &oneResponseServer{t: t, proto: proto, initial: initial, relists: []relistAnswer{{list: relist}}}
	inf, h, decoded, _ := unchangedInformer(t, s, true)
	rv := relist.ResourceVersion
	testfake.WaitFor(t, "the relist at "+rv, func() bool { return inf.LastSyncResourceVersion() == rv })
	return inf, h, len(initial.Items), decoded.Load() - int32(len(initial.Items))
}

func TestRelistKeepsUnchangedObjectsUndecoded(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			initial := cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3"))
			relist := cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3"))
			inf, h, first, n := relistOnce(t, enc.proto, initial, relist)
			if n != 0 {
				t.Fatalf("the relist of 3 unchanged objects decoded %d of them; want none", n)
			}
			if n := inf.reflector.unchangedKept.Load(); n != 3 {
				t.Fatalf("kept %d objects undecoded; want 3", n)
			}
			// client-go's informer hands a handler without a resync period
			// every relisted object of an unchanged version as an update.
			want := []string{"update ns/a@1->1", "update ns/b@2->2", "update ns/c@3->3"}
			h.expectCalls(t, first, want)
			if keys := storeKeys(inf.GetStore()); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/c"}) {
				t.Fatalf("store = %v", keys)
			}
		})
	}
}

func TestRelistDecodesChangedObjectsAndDeletesAbsentOnes(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			initial := cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3"))
			relist := cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"), testfake.ConfigMap("d", "18"))
			inf, h, first, n := relistOnce(t, enc.proto, initial, relist)
			if n != 2 {
				t.Fatalf("the relist decoded %d objects; want 2 (ns/b at a new version, ns/d new)", n)
			}
			if n := inf.reflector.unchangedKept.Load(); n != 1 {
				t.Fatalf("kept %d objects undecoded; want 1 (ns/a)", n)
			}
			want := []string{"update ns/a@1->1", "update ns/b@2->15", "add ns/d@18", "delete ns/c@3 tombstone"}
			h.expectCalls(t, first, want)
			obj, ok, _ := inf.GetStore().GetByKey("ns/b")
			if !ok || objID(obj) != "ns/b@15" {
				t.Fatalf("store holds ns/b as %v (held %v); want ns/b@15", objID(obj), ok)
			}
			if keys := storeKeys(inf.GetStore()); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/d"}) {
				t.Fatalf("store = %v; want a, b and d", keys)
			}
		})
	}
}

// An object listed older than the version the store holds is no unchanged
// object: it is decoded, and the list is stale and abandoned, whatever the
// objects before it were kept as.
func TestRelistWithAnOlderObjectStaysStale(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			initial := cmList("12", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "12"))
			stale := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "5"))}
			good := relistAnswer{list: cmList("21", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"))}
			s := &oneResponseServer{t: t, proto: enc.proto, initial: initial, relists: []relistAnswer{stale, good}}
			inf, h, _, rec := unchangedInformer(t, s, false)
			testfake.WaitFor(t, "the relist at 21", func() bool { return inf.LastSyncResourceVersion() == "21" })
			if !transitionedFor(rec, "stale-list") {
				t.Fatalf("transitions %v; want the list holding ns/b at 5 rejected as stale", rec.Labels(testfake.Transition))
			}
			if slices.Contains(h.since(0), "update ns/b@12->5") {
				t.Fatalf("handler calls %q: ns/b went back in time", h.since(0))
			}
			obj, _, _ := inf.GetStore().GetByKey("ns/b")
			if objID(obj) != "ns/b@15" {
				t.Fatalf("store holds %v; want ns/b@15", objID(obj))
			}
		})
	}
}
