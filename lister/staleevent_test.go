package lister_test

// Bad data under the drop-in informer (client-go's SharedIndexInformer over
// lister.NewListerWatcher): an event older than the object already
// delivered, and a bookmark whose resourceVersion is not one. The fake
// server is steadywatchtest's.

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// reasonCounter counts Fallback reasons.
type reasonCounter struct {
	metrics.Nop
	mu        sync.Mutex
	fallbacks map[string]int
}

func newReasonCounter() *reasonCounter { return &reasonCounter{fallbacks: map[string]int{}} }

func (r *reasonCounter) Fallback(_, reason string) {
	r.mu.Lock()
	r.fallbacks[reason]++
	r.mu.Unlock()
}

func (r *reasonCounter) fallback(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fallbacks[reason]
}

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
	rec := newReasonCounter()
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}

	// Lists and streaming lists: the initial one and relists (not the
	// guard's limit=1 probe of how many objects a streaming list sends).
	syncs := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if (r.Verb == steadywatchtest.VerbList && r.Options.Limit != 1) || r.Served == steadywatchtest.ServedStreamingList {
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
		return rec.fallback(string(lister.ReasonStaleEvent)) == 1 && syncs() == 2
	})
	var resync steadywatchtest.Request
	for _, r := range srv.Requests() {
		if (r.Verb == steadywatchtest.VerbList && r.Options.Limit != 1) || r.Served == steadywatchtest.ServedStreamingList {
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
			rec.fallback(string(lister.ReasonStaleEvent)) == 2
	})
	// ... and nothing ever went back in time.
	mu.Lock()
	defer mu.Unlock()
	if len(backwards) > 0 {
		t.Fatalf("the informer went back in time: %v", backwards)
	}
}

// scriptedWatch answers one list and then the given watch.
type scriptedWatch struct {
	list *corev1.ConfigMapList
	w    watch.Interface
}

func (s scriptedWatch) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return s.list.DeepCopy(), nil
}

func (s scriptedWatch) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return s.w, nil
}

func cmAt(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// drain reads w's events until it closes, or until n were read.
func drain(t *testing.T, w watch.Interface, n int) []watch.Event {
	t.Helper()
	var out []watch.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("only %d events within 10s: %v", len(out), out)
		}
	}
	return out
}

// The watch-level contract: the stale event is replaced by a 410 Expired
// error (client-go relists, it does not just watch again) and nothing after
// it is forwarded. (Which events are stale is the shared table's job:
// internal/watchpipe/pipetest.)
func TestListerWatcherEndsTheWatchAtAStaleEvent(t *testing.T) {
	fw, w, rec := listThenWatch(t, "12", cmAt("a", "10"), cmAt("b", "11"))
	fw.Delete(cmAt("b", "13"))
	fw.Modify(cmAt("a", "5")) // older than the 10 delivered
	fw.Modify(cmAt("a", "14"))
	got := drain(t, w, 10)
	want := []string{"DELETED b 13", "ERROR"}
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %v", len(got), got, want)
	}
	for i, ev := range got[:1] {
		m := ev.Object.(*corev1.ConfigMap)
		if s := string(ev.Type) + " " + m.Name + " " + m.ResourceVersion; s != want[i] {
			t.Errorf("event %d is %s, want %s", i, s, want[i])
		}
	}
	if got[1].Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(got[1].Object)) {
		t.Fatalf("last event %+v, want a 410 Expired error", got[1])
	}
	if n := rec.fallback(string(lister.ReasonStaleEvent)); n != 1 {
		t.Fatalf("%d stale events counted, want 1", n)
	}
}

// Where a list's resourceVersions do not parse as numbers (aggregated APIs
// with opaque versions), nothing is compared and nothing is dropped.
func TestListerWatcherComparesNothingForOpaqueVersions(t *testing.T) {
	fw, w, rec := listThenWatch(t, "zz", cmAt("a", "10"), cmAt("b", "x7"))
	fw.Modify(cmAt("a", "5"))
	fw.Action(watch.Bookmark, cmAt("", "opaque-bookmark"))
	got := drain(t, w, 2)
	if len(got) != 2 || got[0].Type != watch.Modified || got[1].Type != watch.Bookmark {
		t.Fatalf("got %v, want the MODIFIED and the BOOKMARK unchanged", got)
	}
	if n := rec.fallback(string(lister.ReasonStaleEvent)) + rec.fallback(string(lister.ReasonBadResourceVersion)); n != 0 {
		t.Fatalf("%d fallbacks counted, want none", n)
	}
}

// The fault 4 on the drop-in path: a bookmark at "abc" on a server
// whose versions parse is not forwarded (client-go would resume every watch
// from it, and each would fail with 400); it is counted.
func TestListerWatcherDropsUnparsableBookmark(t *testing.T) {
	fw, w, rec := listThenWatch(t, "12", cmAt("a", "10"))
	fw.Action(watch.Bookmark, cmAt("", "abc"))
	fw.Action(watch.Bookmark, cmAt("", "15"))
	got := drain(t, w, 1)
	if len(got) != 1 || got[0].Type != watch.Bookmark || got[0].Object.(*corev1.ConfigMap).ResourceVersion != "15" {
		t.Fatalf("got %v, want only the bookmark at 15", got)
	}
	if n := rec.fallback(string(lister.ReasonBadResourceVersion)); n != 1 {
		t.Fatalf("%d unparsable versions counted, want 1", n)
	}
}

// An event (not a bookmark) whose version does not parse, on a server whose
// versions do, is not delivered (client-go would resume from it): the watch
// ends with 410 Expired first, so client-go relists; it is counted, and an
// event before it passes.
func TestListerWatcherEndsTheWatchAtAnUnparsableEvent(t *testing.T) {
	fw, w, rec := listThenWatch(t, "12", cmAt("a", "10"))
	fw.Modify(cmAt("a", "13"))
	fw.Modify(cmAt("a", "garbage"))
	fw.Modify(cmAt("a", "14"))
	got := drain(t, w, 5)
	if len(got) != 2 || got[0].Type != watch.Modified || got[1].Type != watch.Error {
		t.Fatalf("got %v, want MODIFIED a@13 then the 410 that makes client-go relist", got)
	}
	if !apierrors.IsResourceExpired(apierrors.FromObject(got[1].Object)) {
		t.Fatalf("last event %+v, want a 410 Expired error", got[1])
	}
	if n := rec.fallback(string(lister.ReasonBadResourceVersion)); n != 1 {
		t.Fatalf("%d unparsable versions counted, want 1", n)
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
	rec := newReasonCounter()
	inf := cache.NewSharedIndexInformer(lister.NewListerWatcher(srv, lister.Options{Metrics: rec, Name: "cms"}), &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	watching := func() bool {
		for _, r := range srv.Requests() {
			if r.Served == steadywatchtest.ServedWatchFrom {
				return true
			}
		}
		return false
	}
	until(t, "a plain watch is open", watching)
	before := rec.fallback(string(lister.ReasonBadResourceVersion))
	srv.Bookmark()
	until(t, "the bookmark is dropped and counted", func() bool {
		return rec.fallback(string(lister.ReasonBadResourceVersion)) == before+1
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

// listThenWatch lists items at rv through a drop-in ListerWatcher (as
// client-go's reflector does first) and opens its watch from rv; the fake
// watch feeds that watch, and rec counts the reasons.
func listThenWatch(t *testing.T, rv string, items ...*corev1.ConfigMap) (*watch.RaceFreeFakeWatcher, watch.Interface, *reasonCounter) {
	t.Helper()
	fw := watch.NewRaceFreeFake()
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, it := range items {
		list.Items = append(list.Items, *it)
	}
	rec := newReasonCounter()
	lw := lister.NewListerWatcher(scriptedWatch{list: list, w: fw}, lister.Options{Metrics: rec})
	ctx := context.Background()
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return fw, w, rec
}
