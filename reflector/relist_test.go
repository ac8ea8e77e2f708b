package reflector

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// callStore is a cache.Indexer that records every call the reflector makes
// ("add ns/a@1", "update ...", "delete ...", "replace @rv", "bookmark @rv").
type callStore struct {
	cache.Indexer
	mu    sync.Mutex
	calls []string
}

func newCallStore() *callStore {
	return &callStore{Indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
}

func (s *callStore) record(op string, obj any) {
	m, _ := meta.Accessor(obj)
	s.mu.Lock()
	s.calls = append(s.calls, fmt.Sprintf("%s %s/%s@%s", op, m.GetNamespace(), m.GetName(), m.GetResourceVersion()))
	s.mu.Unlock()
}

func (s *callStore) Add(obj any) error    { s.record("add", obj); return s.Indexer.Add(obj) }
func (s *callStore) Update(obj any) error { s.record("update", obj); return s.Indexer.Update(obj) }
func (s *callStore) Delete(obj any) error { s.record("delete", obj); return s.Indexer.Delete(obj) }
func (s *callStore) Replace(items []any, rv string) error {
	s.mu.Lock()
	s.calls = append(s.calls, "replace @"+rv)
	s.mu.Unlock()
	return s.Indexer.Replace(items, rv)
}
func (s *callStore) Bookmark(rv string) {
	s.mu.Lock()
	s.calls = append(s.calls, "bookmark @"+rv)
	s.mu.Unlock()
	s.Indexer.Bookmark(rv)
}

// since returns the calls after the first n.
func (s *callStore) since(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls[min(n, len(s.calls)):])
}

func (s *callStore) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.calls) }

// replaceNotifications is what client-go's informer tells its handlers
// when a DeltaFIFO whose known objects are before is given
// Replace(after, rv): processDeltas turns each Replaced delta into an
// update of a known object or an add, and each DeletedFinalStateUnknown
// into a delete of the object last known.
func replaceNotifications(t *testing.T, before, after []*corev1.ConfigMap) []string {
	t.Helper()
	known := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range before {
		if err := known.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	fifo := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: known, EmitDeltaTypeReplaced: true})
	var list []any
	for _, o := range after {
		list = append(list, o)
	}
	if err := fifo.Replace(list, "rv"); err != nil {
		t.Fatal(err)
	}
	fifo.Close() // Pop hands over what is queued, then fails
	var out []string
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, _ := meta.Accessor(obj)
		return fmt.Sprintf("%s/%s@%s", m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	}
	for {
		_, err := fifo.Pop(func(item any, _ bool) error {
			for _, d := range item.(cache.Deltas) {
				switch d.Type {
				case cache.Deleted:
					old, _, _ := known.Get(d.Object.(cache.DeletedFinalStateUnknown).Obj)
					out = append(out, "delete "+name(old))
					_ = known.Delete(d.Object)
				default:
					if _, exists, _ := known.Get(d.Object); exists {
						out = append(out, "update "+name(d.Object))
					} else {
						out = append(out, "add "+name(d.Object))
					}
					_ = known.Update(d.Object)
				}
			}
			return nil
		})
		if err != nil {
			break
		}
	}
	return out
}

// sortTail sorts the deletions at the end of a notification sequence
// (Replace and the reflector both delete last, each in map order).
func sortTail(calls []string) []string {
	isDelete := func(c string) bool { return len(c) > 7 && c[:7] == "delete " }
	i := slices.IndexFunc(calls, isDelete)
	if i < 0 {
		return calls
	}
	j := i
	for j < len(calls) && isDelete(calls[j]) {
		j++
	}
	slices.Sort(calls[i:j])
	return calls
}

// A relist after a 410 fills the store object by object: it makes exactly
// the calls that client-go's informer turns a Replace of the same list into
// (add for a new object, update for a known one, delete with the object
// last held for one the list no longer holds), in the list's order, with
// the deletions last; then it reports the store synced at the list's
// resourceVersion.
func TestRelistCallsAreReplaceNotifications(t *testing.T) {
	before := []*corev1.ConfigMap{testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3"), testfake.ConfigMap("e", "4")}
	after := []*corev1.ConfigMap{testfake.ConfigMap("d", "18"), testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15")}
	fc := &fakeClient{ListFn: testfake.Answers(
		testfake.Returns(cmList("10", before...), nil),
		testfake.Returns(cmList("20", after...), nil),
	)}
	store := newCallStore()
	r := New(fc, &corev1.ConfigMap{}, store, fastOptions(&testfake.Recorder{}))
	run(t, r)
	w := watcherOf(t, fc, 0)
	first := store.count()
	w.Error(&testfake.Gone().ErrStatus)
	watcherOf(t, fc, 1)
	got := sortTail(store.since(first))
	want := append(sortTail(replaceNotifications(t, before, after)), "bookmark @20")
	if !slices.Equal(got, want) {
		t.Fatalf("relist calls\n %q\nwant (Replace's notifications, then the list's resourceVersion)\n %q", got, want)
	}
	if rv := r.LastSyncResourceVersion(); rv != "20" {
		t.Fatalf("LastSyncResourceVersion = %q; want 20", rv)
	}
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/d"}) {
		t.Fatalf("store = %v; want the list's objects", keys)
	}
	if n := r.pipe.Live(); n != 3 {
		t.Fatalf("the pipeline holds %d objects; want the list's 3", n)
	}
}

// fifoCalls is a DeltaFIFO (a cache.Queue) that records Replace, Add and
// Update calls.
type fifoCalls struct {
	*cache.DeltaFIFO
	mu    sync.Mutex
	calls []string
}

func (f *fifoCalls) note(s string) { f.mu.Lock(); f.calls = append(f.calls, s); f.mu.Unlock() }
func (f *fifoCalls) get() []string { f.mu.Lock(); defer f.mu.Unlock(); return slices.Clone(f.calls) }
func (f *fifoCalls) Add(obj any) error {
	f.note("add")
	return f.DeltaFIFO.Add(obj)
}
func (f *fifoCalls) Update(obj any) error {
	f.note("update")
	return f.DeltaFIFO.Update(obj)
}
func (f *fifoCalls) Replace(list []any, rv string) error {
	f.note(fmt.Sprintf("replace %d @%s", len(list), rv))
	return f.DeltaFIFO.Replace(list, rv)
}

// A queue (DeltaFIFO) is given one Replace per list: object-by-object
// calls would give its consumer Added/Updated deltas, and tombstones
// without the last known object, instead of Replaced deltas and
// DeletedFinalStateUnknown with it.
func TestQueueStoreKeepsReplace(t *testing.T) {
	fc := &fakeClient{ListFn: testfake.Answers(
		testfake.Returns(cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("c", "3")), nil),
		testfake.Returns(cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15")), nil),
	)}
	fifo := &fifoCalls{DeltaFIFO: cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, EmitDeltaTypeReplaced: true})}
	r := New(fc, &corev1.ConfigMap{}, fifo, fastOptions(&testfake.Recorder{}))
	if r.objects != nil {
		t.Fatal("a DeltaFIFO is filled object by object; want one Replace per list")
	}
	run(t, r)
	watcherOf(t, fc, 0).Error(&testfake.Gone().ErrStatus)
	watcherOf(t, fc, 1)
	if got, want := fifo.get(), []string{"replace 2 @10", "replace 2 @20"}; !slices.Equal(got, want) {
		t.Fatalf("calls %q; want %q", got, want)
	}
}

// A relist that fails after some of its pages were applied leaves the store
// claiming no version it does not fully hold: LastSyncResourceVersion and
// the store's LastStoreSyncResourceVersion stay at the last complete
// list's. The next list completes the reconciliation: it deletes what
// neither list holds, delivering the deletion, and only then reports its
// resourceVersion.
func TestRelistFailingMidwayIsCompletedByTheNext(t *testing.T) {
	midway, resume := make(chan struct{}), make(chan struct{})
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		switch n {
		case 0:
			return cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")), nil
		case 1: // the MostRecent relist, first page
			l := cmList("30", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "20"))
			l.Continue = "t1"
			return l, nil
		case 2: // its second page fails
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", fmt.Errorf("revoked"))
		case 3:
			close(midway)
			<-resume
			l := cmList("40", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "20"))
			l.Continue = "t2"
			return l, nil
		}
		return cmList("40", testfake.ConfigMap("d", "35")), nil // c was deleted meanwhile
	}}
	store := newCallStore()
	o := fastOptions(&testfake.Recorder{})
	o.knobs.MaxTooLargeWatchRetries = -1 // a "too large" watch relists MostRecent, paginated
	o.Lister.PageSize = 2
	r := New(fc, &corev1.ConfigMap{}, store, o)
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Error(&testfake.TooLarge(0).ErrStatus)
	select {
	case <-midway:
	case <-t.Context().Done():
	}
	b, _, _ := store.GetByKey("ns/b")
	if got := b.(*corev1.ConfigMap).ResourceVersion; got != "20" {
		close(resume)
		t.Fatalf("midway, ns/b@%s; want the first page applied (ns/b@20)", got)
	}
	rv, storeRV := r.LastSyncResourceVersion(), store.LastStoreSyncResourceVersion()
	synced := r.HasSynced()
	close(resume)
	if rv != "10" || !synced {
		t.Fatalf("midway, LastSyncResourceVersion = %q (synced %v); want 10, the last complete list's", rv, synced)
	}
	if storeRV != "10" {
		t.Fatalf("midway, the store's LastStoreSyncResourceVersion = %q; want 10, the last complete list's", storeRV)
	}
	watcherOf(t, fc, 1)
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/d"}) {
		t.Fatalf("store = %v; want a, b and d (c deleted)", keys)
	}
	if !slices.Contains(store.since(0), "delete ns/c@3") {
		t.Fatalf("calls %q; want the deletion of ns/c delivered", store.since(0))
	}
	if rv := r.LastSyncResourceVersion(); rv != "40" {
		t.Fatalf("LastSyncResourceVersion = %q; want 40", rv)
	}
}

// The first sync is the same path: a list failing midway leaves HasSynced
// false, and the next one deletes what the failed one applied and the
// server no longer has.
func TestFirstSyncFailingMidwayIsNotSynced(t *testing.T) {
	midway, resume := make(chan struct{}), make(chan struct{})
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		switch n {
		case 0:
			l := cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("gone", "2"))
			l.Continue = "t1"
			return l, nil
		case 1:
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", fmt.Errorf("revoked"))
		case 2:
			close(midway)
			<-resume
		}
		return cmList("12", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "11")), nil
	}}
	store := newCallStore()
	o := fastOptions(&testfake.Recorder{})
	o.Lister.PageSize = 2
	r := New(fc, &corev1.ConfigMap{}, store, o)
	run(t, r)
	select {
	case <-midway:
	case <-t.Context().Done():
	}
	synced, rv, n := r.HasSynced(), r.LastSyncResourceVersion(), len(store.ListKeys())
	close(resume)
	if synced || rv != "" || n != 2 {
		t.Fatalf("midway: synced=%v at %q with %d objects; want not synced, no resourceVersion, the first page's 2 objects", synced, rv, n)
	}
	watcherOf(t, fc, 0)
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b"}) || !r.HasSynced() {
		t.Fatalf("store = %v (synced %v); want a and b", keys, r.HasSynced())
	}
}

// No object goes back in time during a relist: an object the list holds at
// a version older than the store's is never applied; the list is abandoned
// as stale and the next one, not older than that object, completes.
func TestRelistNeverTakesAnObjectBackInTime(t *testing.T) {
	fc := &fakeClient{ListFn: testfake.Answers(
		testfake.Returns(cmList("10", testfake.ConfigMap("a", "5")), nil),
		testfake.Returns(cmList("15", testfake.ConfigMap("a", "8"), testfake.ConfigMap("b", "14")), nil), // a@8: older than the a@12 held
		testfake.Returns(cmList("16", testfake.ConfigMap("a", "12"), testfake.ConfigMap("b", "14")), nil),
	)}
	store := newCallStore()
	rec := &testfake.Recorder{}
	r := New(fc, &corev1.ConfigMap{}, store, fastOptions(rec))
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Modify(testfake.ConfigMap("a", "12"))
	testfake.WaitFor(t, "a@12 applied", func() bool { return r.LastSyncResourceVersion() == "12" })
	w.Error(&testfake.Gone().ErrStatus)
	watcherOf(t, fc, 1)
	for _, c := range store.since(0) {
		if c == "update ns/a@8" || c == "add ns/a@8" {
			t.Fatalf("calls %q: ns/a went back from 12 to 8", store.since(0))
		}
	}
	lists := fc.Lists()
	if len(lists) != 3 || lists[2].ResourceVersion != "12" {
		t.Fatalf("lists %+v; want the third NotOlderThan(12), the version of the object held", lists)
	}
	if rv := r.LastSyncResourceVersion(); rv != "16" {
		t.Fatalf("LastSyncResourceVersion = %q; want 16", rv)
	}
	if got := rec.Labels(testfake.Transition); !slices.ContainsFunc(got, func(s string) bool { return s == "Relisting->BackingOff: stale-list" }) {
		t.Fatalf("transitions %v; want the stale list rejected (%s)", got, "stale-list")
	}
}

// No object goes back in time when a relist deletes: a list served older
// than an object the store holds and the list does not (b@18, applied by an
// earlier list abandoned as stale) never deletes it; the list is abandoned
// as stale and the next one, not older than that object, completes.
func TestRelistNeverDeletesAnObjectNewerThanTheList(t *testing.T) {
	fc := &fakeClient{ListFn: testfake.Answers(
		testfake.Returns(cmList("10", testfake.ConfigMap("a", "5")), nil),
		testfake.Returns(cmList("20", testfake.ConfigMap("b", "18"), testfake.ConfigMap("a", "3")), nil), // a@3: older than the a@5 held, after b@18 is applied
		testfake.Returns(cmList("12", testfake.ConfigMap("a", "5")), nil),                                // not older than the store's 10, older than b@18
		testfake.Returns(cmList("20", testfake.ConfigMap("a", "5"), testfake.ConfigMap("b", "18")), nil),
	)}
	store := newCallStore()
	rec := &testfake.Recorder{}
	r := New(fc, &corev1.ConfigMap{}, store, fastOptions(rec))
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Error(&testfake.Gone().ErrStatus)
	watcherOf(t, fc, 1)
	if calls := store.since(0); slices.Contains(calls, "delete ns/b@18") {
		t.Fatalf("calls %q: a list served at 12 deleted ns/b@18", calls)
	}
	lists := fc.Lists()
	if len(lists) != 4 || lists[3].ResourceVersion != "18" {
		t.Fatalf("lists %+v; want the fourth NotOlderThan(18), the version of the object the third list lacked", lists)
	}
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
		t.Fatalf("store = %v; want a and b", keys)
	}
	if rv := r.LastSyncResourceVersion(); rv != "20" {
		t.Fatalf("LastSyncResourceVersion = %q; want 20", rv)
	}
}

// A streaming relist applies each initial event as it arrives, and at the
// initial-events-end bookmark deletes what the stream did not hold.
func TestStreamingRelistAppliesEventsAsTheyArrive(t *testing.T) {
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) {
		return nil, fmt.Errorf("no list expected")
	}}
	store := newCallStore()
	o := fastOptions(&testfake.Recorder{})
	o.Lister.Server = streamingServer()
	r := New(fc, &corev1.ConfigMap{}, store, o)
	run(t, r)
	w := watcherOf(t, fc, 0) // the first sync's streaming list
	w.Add(testfake.ConfigMap("a", "1"))
	w.Add(testfake.ConfigMap("c", "3"))
	w.Action(watch.Bookmark, bookmark("10", true))
	testfake.WaitFor(t, "first sync", r.HasSynced)
	w.Error(&testfake.Gone().ErrStatus)
	s := watcherOf(t, fc, 1) // the streaming relist
	first := store.count()
	s.Add(testfake.ConfigMap("a", "1"))
	testfake.WaitFor(t, "ns/a applied before the stream ended", func() bool { return store.count() > first })
	s.Add(testfake.ConfigMap("b", "15"))
	s.Action(watch.Bookmark, bookmark("20", true))
	testfake.WaitFor(t, "relist at 20", func() bool { return r.LastSyncResourceVersion() == "20" })
	if got, want := sortTail(store.since(first)), []string{"update ns/a@1", "add ns/b@15", "delete ns/c@3", "bookmark @20"}; !slices.Equal(got, want) {
		t.Fatalf("streaming relist calls %q; want %q", got, want)
	}
}

// A streaming relist cut after some of its initial events claims nothing;
// the list that follows completes the reconciliation.
func TestStreamingRelistCutMidwayIsCompletedByAList(t *testing.T) {
	fc := &fakeClient{ListFn: func(_ int, o metav1.ListOptions) (runtime.Object, error) {
		if o.Limit == 1 { // the streaming-list guard's count
			return nil, fmt.Errorf("no count")
		}
		return cmList("30", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "25")), nil
	}}
	store := newCallStore()
	o := fastOptions(&testfake.Recorder{})
	o.Lister.Server = streamingServer()
	r := New(fc, &corev1.ConfigMap{}, store, o)
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Add(testfake.ConfigMap("a", "1"))
	w.Add(testfake.ConfigMap("c", "3"))
	w.Action(watch.Bookmark, bookmark("10", true))
	testfake.WaitFor(t, "first sync", r.HasSynced)
	w.Error(&testfake.Gone().ErrStatus)
	s := watcherOf(t, fc, 1)
	first := store.count()
	s.Add(testfake.ConfigMap("b", "25"))
	testfake.WaitFor(t, "ns/b applied", func() bool { return store.count() > first })
	if rv := r.LastSyncResourceVersion(); rv != "10" {
		t.Fatalf("midway, LastSyncResourceVersion = %q; want 10", rv)
	}
	s.Stop() // cut before the initial-events-end bookmark
	testfake.WaitFor(t, "the list after the cut stream", func() bool { return r.LastSyncResourceVersion() == "30" })
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
		t.Fatalf("store = %v; want a and b (c deleted)", keys)
	}
	if calls := store.since(first); !slices.Contains(calls, "delete ns/c@3") || slices.Contains(calls, "replace @30") {
		t.Fatalf("calls %q; want ns/c deleted object by object", calls)
	}
}

// With PaginateLists, a relist NotOlderThan the store is paginated into a
// store filled object by object (each page applied as it arrives), and
// unpaginated into a queue, which gets the whole list in one Replace.
func TestPaginateListsPaginatesRelistsIntoObjectStores(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func() cache.ReflectorStore
		limit int64
	}{
		{"cache.Store", func() cache.ReflectorStore { return newCallStore() }, 2},
		{"DeltaFIFO", func() cache.ReflectorStore {
			return cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc})
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
				switch {
				case n == 0:
					return cmList("10", testfake.ConfigMap("a", "1")), nil
				case o.Continue == "" && o.Limit > 0:
					l := cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"))
					l.Continue = "t"
					return l, nil
				case o.Continue != "":
					return cmList("20", testfake.ConfigMap("c", "18")), nil
				}
				return cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"), testfake.ConfigMap("c", "18")), nil
			}}
			o := fastOptions(&testfake.Recorder{})
			o.Lister.PageSize = 2
			r := New(fc, &corev1.ConfigMap{}, tc.store(), o)
			run(t, r)
			watcherOf(t, fc, 0).Error(&testfake.Gone().ErrStatus)
			watcherOf(t, fc, 1)
			lists := fc.Lists()
			if lists[1].ResourceVersion != "10" || lists[1].Limit != tc.limit {
				t.Fatalf("relist %+v; want NotOlderThan(10) with limit %d", lists[1], tc.limit)
			}
			if r.LastSyncResourceVersion() != "20" || r.State().Items != 3 {
				t.Fatalf("synced at %q with %d items; want 20 with 3", r.LastSyncResourceVersion(), r.State().Items)
			}
		})
	}
}
