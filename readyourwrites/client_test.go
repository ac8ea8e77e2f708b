package readyourwrites

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// fakeServer is a typed ConfigMap client whose writes reach the informer's
// watch only when the test releases them: a watch that lags.
type fakeServer struct {
	mu      sync.Mutex
	rv      int
	opaque  bool
	objects map[string]*corev1.ConfigMap
	held    []watch.Event
	w       *watch.FakeWatcher
	gets    int
	lists   int
}

func newFakeServer() *fakeServer {
	return &fakeServer{rv: 10, objects: map[string]*corev1.ConfigMap{}, w: watch.NewFakeWithChanSize(100, false)}
}

func (s *fakeServer) nextRV() string {
	s.rv++
	if s.opaque {
		return "opaque-" + strconv.Itoa(s.rv)
	}
	return strconv.Itoa(s.rv)
}

func (s *fakeServer) write(t watch.EventType, obj *corev1.ConfigMap) *corev1.ConfigMap {
	obj = obj.DeepCopy()
	obj.Namespace = "ns"
	obj.ResourceVersion = s.nextRV()
	if t == watch.Deleted {
		delete(s.objects, obj.Name)
	} else {
		s.objects[obj.Name] = obj
	}
	s.held = append(s.held, watch.Event{Type: t, Object: obj.DeepCopy()})
	return obj.DeepCopy()
}

// release delivers the held watch events.
func (s *fakeServer) release() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, ev := range held {
		s.w.Action(ev.Type, ev.Object)
	}
}

func (s *fakeServer) Create(_ context.Context, obj *corev1.ConfigMap, _ metav1.CreateOptions) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(watch.Added, obj), nil
}

func (s *fakeServer) Update(_ context.Context, obj *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(watch.Modified, obj), nil
}

func (s *fakeServer) Patch(_ context.Context, name string, _ types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj := s.objects[name].DeepCopy()
	obj.Data = map[string]string{"patch": string(data)}
	return s.write(watch.Modified, obj), nil
}

func (s *fakeServer) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(watch.Deleted, s.objects[name])
	return nil
}

func (s *fakeServer) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if o, ok := s.objects[name]; ok {
		return o.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

func (s *fakeServer) List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rv)}}
	for _, o := range s.objects {
		l.Items = append(l.Items, *o.DeepCopy())
	}
	return l, nil
}

func (s *fakeServer) counts() (gets, lists int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets, s.lists
}

type readRecorder struct {
	nopRecorder
	mu        sync.Mutex
	waits     []string
	fallbacks []string
	// cacheReads are the client's reads of its cache (key and the
	// resourceVersion it found, "" for none), in order.
	cacheReads []string
}

// readsRecorded is an informer whose indexer records the client's reads in
// rec.
type readsRecorded struct {
	cache.SharedIndexInformer
	rec *readRecorder
}

func (i readsRecorded) GetIndexer() cache.Indexer {
	return recordingIndexer{Indexer: i.SharedIndexInformer.GetIndexer(), rec: i.rec}
}

type recordingIndexer struct {
	cache.Indexer
	rec *readRecorder
}

func (x recordingIndexer) GetByKey(key string) (any, bool, error) {
	item, ok, err := x.Indexer.GetByKey(key)
	rv := ""
	if cm, isCM := item.(*corev1.ConfigMap); ok && isCM {
		rv = cm.ResourceVersion
	}
	x.rec.mu.Lock()
	x.rec.cacheReads = append(x.rec.cacheReads, key+"@"+rv)
	x.rec.mu.Unlock()
	return item, ok, err
}

// reads counts the client's reads of key from its cache that found it at
// rv.
func (r *readRecorder) reads(key, rv string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, read := range r.cacheReads {
		if read == key+"@"+rv {
			n++
		}
	}
	return n
}

func (r *readRecorder) StoreResourceVersion(string, string) {}
func (r *readRecorder) ReadWait(_ string, _ time.Duration, outcome string) {
	r.mu.Lock()
	r.waits = append(r.waits, outcome)
	r.mu.Unlock()
}
func (r *readRecorder) ReadFallback(_, reason string) {
	r.mu.Lock()
	r.fallbacks = append(r.fallbacks, reason)
	r.mu.Unlock()
}

// listOnly makes client-go's reflector list rather than stream (the fake
// watch sends no initial-events-end bookmark).
type listOnly struct{ *cache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

func (r *readRecorder) get() (waits, fallbacks []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.waits...), append([]string(nil), r.fallbacks...)
}

// setup starts an informer over s (listing empty at 10, then s's watch)
// and a Client with bound over them.
func setup(t *testing.T, s *fakeServer, bound time.Duration) (*Client[*corev1.ConfigMap, *corev1.ConfigMapList], cache.SharedIndexInformer, *readRecorder) {
	t.Helper()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return s.w, nil },
	}
	inf := cache.NewSharedIndexInformer(listOnly{lw}, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	rec := &readRecorder{}
	c, err := New[*corev1.ConfigMap, *corev1.ConfigMapList](s, "ns", readsRecorded{SharedIndexInformer: inf, rec: rec}, Options{Bound: bound, Metrics: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return c, inf, rec
}

func cmNamed(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// getAsync runs c.Get(name) and returns its results.
func getAsync(c *Client[*corev1.ConfigMap, *corev1.ConfigMapList], name string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		o, err := c.Get(context.Background(), name)
		ch <- result{o, err}
	}()
	return ch
}

// mustWait checks that read, while the cache does not yet hold the
// client's write, waits (here: until its short context ends) instead of
// answering from the older cache.
func mustWait(t *testing.T, read func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read before the cache holds the own write returned %v; want it to wait", err)
	}
}

type result struct {
	obj *corev1.ConfigMap
	err error
}

func TestGetAfterAnUpdateWaitsForTheCacheToHoldIt(t *testing.T) {
	s := newFakeServer()
	c, inf, rec := setup(t, s, time.Minute)
	ctx := context.Background()
	created, _ := c.Create(ctx, cmNamed("a"), metav1.CreateOptions{})
	s.release()
	if got, err := c.Get(ctx, "a"); err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("Get after create = %v, %v", got, err)
	}
	updated, _ := c.Update(ctx, created, metav1.UpdateOptions{})
	mustWait(t, func(ctx context.Context) error { _, err := c.Get(ctx, "a"); return err })
	before := rec.reads("ns/a", created.ResourceVersion)
	ch := getAsync(c, "a")
	if old, _, _ := inf.GetIndexer().GetByKey("ns/a"); old.(*corev1.ConfigMap).ResourceVersion != created.ResourceVersion {
		t.Fatal("the test's watch did not hold the update back")
	} // a stock lister read now would be stale
	// The update reaches the cache only once the read found the older
	// version there (and so waits).
	testfake.WaitFor(t, "the read to find the older version in the cache", func() bool { return rec.reads("ns/a", created.ResourceVersion) > before })
	s.release()
	r := <-ch
	if r.err != nil || r.obj.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("Get after update = %v, %v; want resourceVersion %s", r.obj, r.err, updated.ResourceVersion)
	}
	if gets, _ := s.counts(); gets != 0 {
		t.Fatalf("%d GETs reached the server, want 0 (the cache caught up within the bound)", gets)
	}
	if w, f := rec.get(); len(w) == 0 || len(f) != 0 {
		t.Fatalf("waits %v fallbacks %v, want a wait that the cache ended, no fallback", w, f)
	}
}

func TestGetPastTheBoundReadsTheServerAndCountsIt(t *testing.T) {
	s := newFakeServer()
	c, _, rec := setup(t, s, 20*time.Millisecond)
	ctx := context.Background()
	created, _ := c.Create(ctx, cmNamed("a"), metav1.CreateOptions{}) // never released
	got, err := c.Get(ctx, "a")
	if err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("Get past the bound = %v, %v; want the server's object at %s", got, err, created.ResourceVersion)
	}
	if gets, _ := s.counts(); gets != 1 {
		t.Fatalf("%d GETs reached the server, want 1", gets)
	}
	if w, f := rec.get(); len(f) != 1 || f[0] != "bound" || len(w) != 1 || w[0] != "server" {
		t.Fatalf("fallbacks %v waits %v, want one %q fallback after one wait", f, w, "bound")
	}
}

func TestGetAfterADeleteWaitsUntilTheCacheNoLongerHoldsIt(t *testing.T) {
	s := newFakeServer()
	c, _, _ := setup(t, s, time.Minute)
	ctx := context.Background()
	c.Create(ctx, cmNamed("a"), metav1.CreateOptions{})
	s.release()
	if _, err := c.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	c.Delete(ctx, "a", metav1.DeleteOptions{})
	mustWait(t, func(ctx context.Context) error { _, err := c.Get(ctx, "a"); return err })
	ch := getAsync(c, "a")
	s.release()
	if r := <-ch; !apierrors.IsNotFound(r.err) {
		t.Fatalf("Get after delete = %v, %v; want NotFound", r.obj, r.err)
	}
	if gets, _ := s.counts(); gets != 0 {
		t.Fatalf("%d GETs reached the server, want 0", gets)
	}
}

func TestListWaitsForTheNewestOwnWriteInTheResource(t *testing.T) {
	s := newFakeServer()
	c, _, _ := setup(t, s, time.Minute)
	ctx := context.Background()
	c.Create(ctx, cmNamed("a"), metav1.CreateOptions{})
	c.Create(ctx, cmNamed("b"), metav1.CreateOptions{})
	mustWait(t, func(ctx context.Context) error { _, err := c.List(ctx, nil); return err })
	ch := make(chan []*corev1.ConfigMap, 1)
	go func() { l, _ := c.List(ctx, nil); ch <- l }()
	s.release()
	if l := <-ch; len(l) != 2 {
		t.Fatalf("List after two creates returned %d objects, want 2", len(l))
	}
	if _, lists := s.counts(); lists != 0 {
		t.Fatalf("%d lists reached the server, want 0", lists)
	}
}

func TestWritesByOthersAreNotWaitedFor(t *testing.T) {
	s := newFakeServer()
	c, _, rec := setup(t, s, time.Minute)
	ctx := context.Background()
	s.Create(ctx, cmNamed("other"), metav1.CreateOptions{}) // another writer, held back
	if _, err := c.Get(ctx, "other"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of an object another client wrote = %v, want the cache's answer (NotFound) at once", err)
	}
	if w, _ := rec.get(); len(w) != 0 {
		t.Fatalf("waited %v for another writer's write", w)
	}
}

func TestAServerWithOpaqueVersionsIsReadLiveAtOnce(t *testing.T) {
	s := newFakeServer()
	s.opaque = true
	c, _, rec := setup(t, s, time.Minute)
	ctx := context.Background()
	c.Create(ctx, cmNamed("a"), metav1.CreateOptions{})
	s.release()
	c.Update(ctx, cmNamed("a"), metav1.UpdateOptions{})
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, f := rec.get(); ctx.Err() != nil || len(f) != 1 || f[0] != "incomparable" {
		t.Fatalf("fallbacks %v after %v, want one %q at once", f, time.Since(start), "incomparable")
	}
}

func TestGetEndsWithItsContext(t *testing.T) {
	s := newFakeServer()
	c, _, _ := setup(t, s, time.Minute)
	c.Create(context.Background(), cmNamed("a"), metav1.CreateOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get whose context ends = %v, want DeadlineExceeded", err)
	}
}

// waitingInformer is an informer that knows what its store reflects (as
// steadywatch's own does), here told by the test: a bookmark.
type waitingInformer struct {
	cache.SharedIndexInformer
	bookmark chan struct{}
}

func (w waitingInformer) WaitForResourceVersion(ctx context.Context, _ string) error {
	select {
	case <-w.bookmark:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestListIsReleasedByTheInformersOwnWaitWithoutAnEvent(t *testing.T) {
	s := newFakeServer()
	_, inf, _ := setup(t, s, time.Minute)
	wi := waitingInformer{SharedIndexInformer: inf, bookmark: make(chan struct{})}
	c, err := New[*corev1.ConfigMap, *corev1.ConfigMapList](s, "ns", wi, Options{Bound: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Create(ctx, cmNamed("a"), metav1.CreateOptions{}) // its event never comes
	mustWait(t, func(ctx context.Context) error { _, err := c.List(ctx, nil); return err })
	done := make(chan error, 1)
	go func() { _, err := c.List(ctx, nil); done <- err }()
	close(wi.bookmark) // the store reflects a newer version (a bookmark)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, lists := s.counts(); lists != 0 {
		t.Fatalf("%d lists reached the server, want 0", lists)
	}
}

// An informer steadywatch built, wrapped by another (shard.New's informer
// embeds one), is looked through: its own wait still releases a read.
func TestListIsReleasedByAWrappedInformersOwnWait(t *testing.T) {
	s := newFakeServer()
	_, inf, _ := setup(t, s, time.Minute)
	wi := waitingInformer{SharedIndexInformer: inf, bookmark: make(chan struct{})}
	wrapped := struct{ cache.SharedIndexInformer }{wi} // hides WaitForResourceVersion from a type assertion
	c, err := New[*corev1.ConfigMap, *corev1.ConfigMapList](s, "ns", wrapped, Options{Bound: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Create(ctx, cmNamed("a"), metav1.CreateOptions{}) // its event never comes
	done := make(chan error, 1)
	go func() { _, err := c.List(ctx, nil); done <- err }()
	close(wi.bookmark)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, lists := s.counts(); lists != 0 {
		t.Fatalf("%d lists reached the server, want 0", lists)
	}
}
