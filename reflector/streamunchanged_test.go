package reflector

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/knobs"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// A streaming list (sendInitialEvents=true) that relists steadywatch's own
// informer keeps each object the informer holds at the streamed
// resourceVersion without decoding it, as a list does: its handlers get
// an update from the object to itself, and the store keeps the very object
// it held. Changed and new objects are decoded, absent ones deleted, and
// an object older than the store's still ends the relist as stale.

// streamServer answers a typed client: each streaming list
// (sendInitialEvents=true) with the next of its lists as ADDED events and
// the initial-events-end bookmark, the first of them then closed (its
// watch ends), the last held open; a list with the next list; a plain
// watch with 410 Gone, so the reflector relists.
type streamServer struct {
	t       *testing.T
	proto   bool
	lists   []*corev1.ConfigMapList
	streams atomic.Int32
	other   atomic.Int32 // lists
}

func (s *streamServer) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		// A list (after a stale streaming list, the reflector lists
		// MostRecent): the next list, whole.
		s.other.Add(1)
		n := int(s.streams.Add(1)) - 1
		ct := "application/json"
		if s.proto {
			ct = "application/vnd.kubernetes.protobuf"
		}
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(testfake.EncodeList(s.t, s.lists[min(n, len(s.lists)-1)], s.proto))
		return
	}
	if q.Get("sendInitialEvents") != "true" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_ = json.NewEncoder(w).Encode(testfake.Gone().ErrStatus)
		return
	}
	n := int(s.streams.Add(1)) - 1
	list := s.lists[min(n, len(s.lists)-1)]
	mediaType, ct := runtime.ContentTypeJSON, "application/json"
	if s.proto {
		mediaType, ct = runtime.ContentTypeProtobuf, "application/vnd.kubernetes.protobuf;stream=watch"
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	enc := restclientwatch.NewEncoder(streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer),
		scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion))
	for i := range list.Items {
		if err := enc.Encode(&watch.Event{Type: watch.Added, Object: &list.Items[i]}); err != nil {
			return
		}
	}
	if err := enc.Encode(&watch.Event{Type: watch.Bookmark, Object: bookmark(list.ResourceVersion, true)}); err != nil {
		return
	}
	w.(http.Flusher).Flush()
	if n == len(s.lists)-1 {
		<-r.Context().Done()
	}
}

// streamInformer runs steadywatch's informer over reflector.New over
// lister.FromClientset against s with streaming lists, with one handler,
// and counts the objects it stores (the informer's transform runs once per
// object written to the store; a kept one is not written). Its
// Options.Lister.Transform runs on each object decoded: with
// everyDecodedStored (no list is stale), the test fails unless it ran once
// per object stored (a kept object, handed on
// undecoded, is not transformed again).
func streamInformer(t *testing.T, s *streamServer, everyDecodedStored bool) (inf *adoptedInformer, h *handlerCalls, stored *atomic.Int32, rec *testfake.Recorder) {
	t.Helper()
	c := wireConfigMaps(t, s.serve)
	rec = &testfake.Recorder{}
	o := fastOptions(rec)
	o.Lister.Server = capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes}})
	knobs.ListerOf(&o.Lister).DisableInitialEventsCount = true
	decoded := &atomic.Int32{}
	o.Lister.Transform = func(obj any) (any, error) { decoded.Add(1); return obj, nil }
	stored = &atomic.Int32{}
	t.Cleanup(func() {
		if d, st := decoded.Load(), stored.Load(); everyDecodedStored && d != st {
			t.Errorf("Options.Lister.Transform ran %d times for %d objects stored; want once each", d, st)
		}
	})
	inf, h = runCountingInformer(t, c, o, stored)
	return inf, h, stored, rec
}

// storedObjects returns the objects inf's store holds, by key.
func storedObjects(inf *adoptedInformer) map[string]any {
	m := map[string]any{}
	for _, k := range inf.GetStore().ListKeys() {
		m[k], _, _ = inf.GetStore().GetByKey(k)
	}
	return m
}

func TestStreamingRelistKeepsUnchangedObjectsUndecoded(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			s := &streamServer{t: t, proto: enc.proto, lists: []*corev1.ConfigMapList{
				cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")),
				cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")),
			}}
			inf, h, stored, _ := streamInformer(t, s, true)
			testfake.WaitFor(t, "the first sync at 10", func() bool { return inf.LastSyncResourceVersion() == "10" || inf.LastSyncResourceVersion() == "20" })
			before := storedObjects(inf)
			testfake.WaitFor(t, "the streaming relist at 20", func() bool { return inf.LastSyncResourceVersion() == "20" })
			if n := stored.Load() - 3; n != 0 {
				t.Fatalf("the streaming relist of 3 unchanged objects decoded and stored %d of them; want none", n)
			}
			if n := inf.reflector.unchangedKept.Load(); n != 3 {
				t.Fatalf("kept %d objects undecoded; want 3", n)
			}
			if len(before) == 3 {
				for k, obj := range storedObjects(inf) {
					if obj != before[k] {
						t.Errorf("the store holds another %s after the relist; want the object it held", k)
					}
				}
			}
			want := []string{"update ns/a@1->1", "update ns/b@2->2", "update ns/c@3->3"}
			h.expectCalls(t, 3, want)
			if n := s.streams.Load(); n < 2 || s.other.Load() != 0 {
				t.Fatalf("%d streaming lists and lists, %d lists; want 2 streaming lists", n, s.other.Load())
			}
		})
	}
}

func TestStreamingRelistDecodesChangedObjectsAndDeletesAbsentOnes(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			s := &streamServer{t: t, proto: enc.proto, lists: []*corev1.ConfigMapList{
				cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")),
				cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"), testfake.ConfigMap("d", "18")),
			}}
			inf, h, stored, _ := streamInformer(t, s, true)
			testfake.WaitFor(t, "the streaming relist at 20", func() bool { return inf.LastSyncResourceVersion() == "20" })
			if n := stored.Load() - 3; n != 2 {
				t.Fatalf("the streaming relist decoded and stored %d objects; want 2 (ns/b at a new version, ns/d new)", n)
			}
			if n := inf.reflector.unchangedKept.Load(); n != 1 {
				t.Fatalf("kept %d objects undecoded; want 1 (ns/a)", n)
			}
			want := []string{"update ns/a@1->1", "update ns/b@2->15", "add ns/d@18", "delete ns/c@3 tombstone"}
			h.expectCalls(t, 3, want)
			if keys := storeKeys(inf.GetStore()); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/d"}) {
				t.Fatalf("store = %v; want a, b and d", keys)
			}
		})
	}
}

// An object streamed older than the version the store holds is no
// unchanged object: it is decoded, and the streaming list is stale and
// abandoned, whatever the objects before it were kept as.
func TestStreamingRelistWithAnOlderObjectStaysStale(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			s := &streamServer{t: t, proto: enc.proto, lists: []*corev1.ConfigMapList{
				cmList("12", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "12")),
				cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "5")),
				cmList("21", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15")),
			}}
			inf, h, _, rec := streamInformer(t, s, false)
			testfake.WaitFor(t, "the relist at 21", func() bool { return inf.LastSyncResourceVersion() == "21" })
			if !transitionedFor(rec, "stale-list") {
				t.Fatalf("transitions %v; want the streaming list holding ns/b at 5 rejected as stale", rec.Labels(testfake.Transition))
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
