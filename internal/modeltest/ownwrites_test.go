package modeltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/rvwait"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/readyourwrites"
	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// Own writes: a controller writes through readyourwrites.Client and reads
// back from steadywatch's informer, while the watch lags (every event
// held back a random few milliseconds, in order), watches are cut (the
// informer watches again from its last resourceVersion), another writer
// writes objects of its own and bookmarks come. The invariant: no read
// after a write of the same object (Get) or resource (List) returns
// anything older than the write. Stock reads of the same cache at the same
// moments are counted too: they must see staleness, or the histories did
// not exercise the wait.

// ownServer adapts a steadywatchtest server to the typed client shape.
type ownServer struct {
	s  *cmServer
	ns string
}

func (o ownServer) Create(_ context.Context, obj *corev1.ConfigMap, _ metav1.CreateOptions) (*corev1.ConfigMap, error) {
	obj = obj.DeepCopy()
	obj.Namespace = o.ns
	return o.s.Create(obj)
}

func (o ownServer) Update(_ context.Context, obj *corev1.ConfigMap, _ metav1.UpdateOptions) (*corev1.ConfigMap, error) {
	return o.s.Update(obj.DeepCopy())
}

func (o ownServer) Patch(_ context.Context, name string, _ types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*corev1.ConfigMap, error) {
	cur, ok := o.s.Get(o.ns, name)
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	cur = cur.DeepCopy()
	cur.ResourceVersion = ""
	cur.Data = map[string]string{"patch": string(data)}
	return o.s.Update(cur)
}

func (o ownServer) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	return o.s.Delete(o.ns, name)
}

func (o ownServer) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
	cur, ok := o.s.Get(o.ns, name)
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	return cur, nil
}

func (o ownServer) List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	l, err := o.s.InNamespace(o.ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l.(*corev1.ConfigMapList), nil
}

// laggingLW holds every watch event back by a random delay (up to maxLag,
// in order) and ends a watch cleanly after a random number of events.
type laggingLW struct {
	lw     cache.ListerWatcherWithContext
	maxLag time.Duration
	cutAt  int // end a watch after this many events (0: never)
	mu     sync.Mutex
	rng    *rand.Rand
}

func (l *laggingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.lw.ListWithContext(context.Background(), o)
}

func (l *laggingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.lw.WatchWithContext(context.Background(), o)
	if err != nil {
		return nil, err
	}
	ch := make(chan watch.Event)
	out := watch.NewProxyWatcher(ch)
	go func() {
		defer close(ch) // a clean end of the watch
		defer w.Stop()
		n := 0
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				l.mu.Lock()
				d := time.Duration(l.rng.Int64N(int64(l.maxLag) + 1))
				l.mu.Unlock()
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-out.StopChan():
					t.Stop()
					return
				}
				select {
				case ch <- ev:
				case <-out.StopChan():
					return
				}
				if n++; l.cutAt > 0 && n >= l.cutAt {
					return
				}
			case <-out.StopChan():
				return
			}
		}
	}()
	return out, nil
}

// ownWritesResult is what one history found.
type ownWritesResult struct {
	violations []string
	stockStale int
	reads      int
	fallbacks  int
}

type countingRecorder struct {
	metricsnop.Nop // the methods not recorded here
	mu             sync.Mutex
	fallbacks      int
}

func (*countingRecorder) List(string, string, string)               {}
func (*countingRecorder) Fallback(string, string)                   {}
func (*countingRecorder) Relist(string, string)                     {}
func (*countingRecorder) WatchRestart(string, string)               {}
func (*countingRecorder) Bookmark(string)                           {}
func (*countingRecorder) Items(string, int)                         {}
func (*countingRecorder) ResourceVersionAdvanced(string, time.Time) {}
func (*countingRecorder) ConsistencyCheck(string, string)           {}
func (*countingRecorder) Transition(string, string, string, string) {}
func (*countingRecorder) StoreResourceVersion(string, string)       {}
func (*countingRecorder) ReadWait(string, time.Duration, string)    {}
func (r *countingRecorder) ReadFallback(string, string) {
	r.mu.Lock()
	r.fallbacks++
	r.mu.Unlock()
}

// playOwnWrites plays one generated history of own writes and reads.
func playOwnWrites(t *testing.T, stream uint64, ops int) ownWritesResult {
	rng := rand.New(rand.NewPCG(stream, 41))
	const ns = "own"
	s := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{GroupResource: corev1.Resource("configmaps")})
	defer s.Close()
	lw := &laggingLW{lw: cache.ToListerWatcherWithContext(s.InNamespace(ns).ListerWatcher()), maxLag: time.Duration(1+rng.IntN(8)) * time.Millisecond,
		cutAt: rng.IntN(12), rng: rand.New(rand.NewPCG(stream, 7))}
	inf := reflector.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{},
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}, lister.Options{})
	rec := &countingRecorder{}
	// A bound short enough that some reads fall back to the server.
	bound := time.Duration(2+rng.IntN(30)) * time.Millisecond
	c, err := readyourwrites.New(readyourwrites.TypedClient[*corev1.ConfigMap, *corev1.ConfigMapList](ownServer{s, ns}), ns, inf, readyourwrites.Options{Bound: bound, Metrics: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { inf.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	// Another writer: its own objects, and bookmarks.
	wg.Go(func() {
		orng := rand.New(rand.NewPCG(stream, 99))
		for i := 0; ctx.Err() == nil; i++ {
			name := "other-" + strconv.Itoa(orng.IntN(3))
			if _, err := s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
				_ = s.Delete(ns, name)
			}
			if orng.IntN(4) == 0 {
				s.Bookmark()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(orng.IntN(3)) * time.Millisecond):
			}
		}
	})

	var res ownWritesResult
	mine := map[string]string{} // name -> last own write's resourceVersion; "" = deleted
	names := []string{"a", "b", "c"}
	check := func(op, name string, obj *corev1.ConfigMap, getErr error) {
		w, wrote := mine[name]
		switch {
		case !wrote:
		case w == "" && getErr == nil && obj != nil:
			res.violations = append(res.violations, fmt.Sprintf("%s %s after its own delete returned it at %s", op, name, obj.ResourceVersion))
		case w != "" && (obj == nil || !rvwait.AtLeast(obj.ResourceVersion, w)):
			got := "nothing"
			if obj != nil {
				got = obj.ResourceVersion
			}
			res.violations = append(res.violations, fmt.Sprintf("%s %s after its own write at %s returned %s (err %v)", op, name, w, got, getErr))
		}
	}
	stockCheck := func(name string) {
		w, wrote := mine[name]
		if !wrote {
			return
		}
		obj, ok, _ := inf.GetIndexer().GetByKey(ns + "/" + name)
		if (w == "" && ok) || (w != "" && (!ok || !rvwait.AtLeast(obj.(*corev1.ConfigMap).ResourceVersion, w))) {
			res.stockStale++
		}
	}
	for range ops {
		name := names[rng.IntN(len(names))]
		switch rng.IntN(6) {
		case 0, 1: // write: create, update or patch, or delete
			cur, ok := s.Get(ns, name)
			var out *corev1.ConfigMap
			var err error
			switch {
			case !ok:
				out, err = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			case rng.IntN(3) == 0:
				if err = c.Delete(ctx, name, metav1.DeleteOptions{}); err == nil {
					mine[name] = ""
				}
			case rng.IntN(2) == 0:
				out, err = c.Patch(ctx, name, types.MergePatchType, []byte(strconv.Itoa(rng.IntN(100))), metav1.PatchOptions{})
			default:
				cur = cur.DeepCopy()
				cur.Data = map[string]string{"n": strconv.Itoa(rng.IntN(100))}
				out, err = c.Update(ctx, cur, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("stream %d: own write of %s: %v", stream, name, err)
			}
			if out != nil {
				mine[name] = out.ResourceVersion
			}
			stockCheck(name)
		case 2, 3, 4:
			obj, err := c.Get(ctx, name)
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("stream %d: Get %s: %v", stream, name, err)
			}
			res.reads++
			if err != nil {
				obj = nil
			}
			check("Get", name, obj, err)
		case 5:
			items, err := c.List(ctx, nil)
			if err != nil {
				t.Fatalf("stream %d: List: %v", stream, err)
			}
			res.reads++
			byName := map[string]*corev1.ConfigMap{}
			for _, it := range items {
				byName[it.Name] = it
			}
			for _, n := range names {
				check("List", n, byName[n], nil)
			}
		}
	}
	rec.mu.Lock()
	res.fallbacks = rec.fallbacks
	rec.mu.Unlock()
	return res
}

func TestOwnWritesAreNeverReadOlder(t *testing.T) {
	histories, ops := 40, 60
	if testing.Short() {
		histories = 10
	}
	var stale, reads, fallbacks int
	for i := range histories {
		stream := uint64(1000 + i)
		res := playOwnWrites(t, stream, ops)
		for _, v := range res.violations {
			t.Errorf("stream %d: %s", stream, v)
		}
		stale += res.stockStale
		reads += res.reads
		fallbacks += res.fallbacks
	}
	t.Logf("%d histories of %d operations: %d reads, none older than an own write; %d fell back to the server; a stock read of the same cache right after an own write was stale %d times",
		histories, ops, reads, fallbacks, stale)
	if stale == 0 {
		t.Error("no stock read was stale: the histories did not make the cache lag behind the writes")
	}
	if fallbacks == 0 {
		t.Error("no read fell back to the server: the histories did not reach the bound")
	}
}
