package lister_test

// Bad data under the drop-in informer (client-go's SharedIndexInformer over
// lister.NewListerWatcher): an event older than the object already
// delivered, and a bookmark whose resourceVersion is not one. The fake
// server is steadywatchtest's.

import (
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// until polls cond every millisecond until it holds or 10s pass.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}

func rvNum(t *testing.T, obj any) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(obj.(*corev1.ConfigMap).ResourceVersion, 10, 64)
	if err != nil {
		t.Errorf("resourceVersion of %v: %v", obj, err)
	}
	return n
}

// The fault 3 on the drop-in path: the watch re-delivers an older
// MODIFIED after the newer one (kubernetes/kubernetes#73845). The informer
// must never hand its handlers (or hold in its store) an object older than
// one it already had; the event is counted, and client-go relists.
func TestDropInInformerNeverAppliesAnEventOlderThanDelivered(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{Faults: steadywatchtest.Faults{StaleEvent: true}})
	defer srv.Close()
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}})
	rec := &testfake.Recorder{}
	lw := lister.NewListerWatcher(srv, lister.Options{Metrics: rec, Name: "cms"})
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})

	var mu sync.Mutex
	newest := map[string]uint64{}
	var backwards []string
	see := func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		cmo := obj.(*corev1.ConfigMap)
		n := rvNum(t, obj)
		if n < newest[cmo.Name] {
			backwards = append(backwards, cmo.Name+" "+cmo.ResourceVersion+" after "+strconv.FormatUint(newest[cmo.Name], 10))
		}
		newest[cmo.Name] = max(n, newest[cmo.Name])
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { see(obj) },
		UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	defer testfake.RunInformer(t, inf)()
	testfake.WaitFor(t, "the informer's sync", inf.HasSynced)

	// Lists and streaming lists: the initial one and relists (not the
	// guard's limit=1 probe of how many objects a streaming list sends).
	syncs := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if (r.Verb == "list" && r.Options.Limit != 1) || r.Served == "StreamingList" {
				n++
			}
		}
		return n
	}
	// Every MODIFIED is followed by the object's previous state.
	a, _ := srv.Get("ns", "a")
	a.Data = map[string]string{"v": "2"}
	a, err := srv.Update(a)
	if err != nil {
		t.Fatal(err)
	}
	until(t, "the stale event is counted and client-go syncs again, NotOlderThan what it holds", func() bool {
		return rec.Count(testfake.Fallback, "event-older-than-store") == 1 && syncs() == 2
	})
	var resync steadywatchtest.Request
	for _, r := range srv.Requests() {
		if (r.Verb == "list" && r.Options.Limit != 1) || r.Served == "StreamingList" {
			resync = r
		}
	}
	if resync.Options.ResourceVersion != a.ResourceVersion || resync.Options.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		t.Errorf("client-go synced again with %+v, want NotOlderThan %s", resync.Options, a.ResourceVersion)
	}
	// The informer watches again: a later write arrives, and its stale
	// twin is dropped too.
	b, _ := srv.Get("ns", "b")
	b.Data = map[string]string{"v": "2"}
	if b, err = srv.Update(b); err != nil {
		t.Fatal(err)
	}
	until(t, "the informer holds a and b at their newest versions", func() bool {
		ga, ok1, _ := inf.GetStore().GetByKey("ns/a")
		gb, ok2, _ := inf.GetStore().GetByKey("ns/b")
		return ok1 && ok2 && ga.(*corev1.ConfigMap).ResourceVersion == a.ResourceVersion && gb.(*corev1.ConfigMap).ResourceVersion == b.ResourceVersion &&
			rec.Count(testfake.Fallback, "event-older-than-store") == 2
	})
	// ... and nothing ever went back in time.
	mu.Lock()
	defer mu.Unlock()
	if len(backwards) > 0 {
		t.Fatalf("the informer went back in time: %v", backwards)
	}
}

// The fault 4 through the drop-in informer on the fake server: every
// bookmark (the one that ends a streaming list included) carries a
// resourceVersion that is not one. The informer syncs, never sends a
// request from that version, and sees later writes after its watch ends.
func TestDropInInformerNeverResumesFromAnUnparsableBookmark(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{Faults: steadywatchtest.Faults{GarbageBookmarkRV: true}})
	defer srv.Close()
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	rec := &testfake.Recorder{}
	inf := cache.NewSharedIndexInformer(lister.NewListerWatcher(srv, lister.Options{Metrics: rec, Name: "cms"}), &corev1.ConfigMap{}, 0, cache.Indexers{})
	defer testfake.RunInformer(t, inf)()
	testfake.WaitFor(t, "the informer's sync", inf.HasSynced)
	watching := func() bool {
		for _, r := range srv.Requests() {
			if r.Served == "WatchFrom" {
				return true
			}
		}
		return false
	}
	until(t, "a plain watch is open", watching)
	before := rec.Count(testfake.Fallback, "unparsable-resource-version")
	srv.Bookmark()
	until(t, "the bookmark is dropped and counted", func() bool {
		return rec.Count(testfake.Fallback, "unparsable-resource-version") == before+1
	})
	srv.Close() // every watch ends; client-go watches again from its resourceVersion
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}})
	until(t, "the informer sees b", func() bool { _, ok, _ := inf.GetStore().GetByKey("ns/b"); return ok })
	for _, r := range srv.Requests() {
		if r.Options.ResourceVersion == "not-a-resource-version" {
			t.Fatalf("a request from the unparsable version: %+v", r)
		}
	}
}
