package shard_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/sharding"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/shard"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

const objects = 24

func newServer(t *testing.T) *steadywatchtest.Server[*corev1.ConfigMap] {
	t.Helper()
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	for i := range objects {
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm-" + strconv.Itoa(i)}})
	}
	return srv
}

// recorder records what an informer's handler receives.
type recorder struct {
	mu      sync.Mutex
	added   map[string]int
	updated map[string]int
	deleted []string
}

func newRecorder() *recorder { return &recorder{added: map[string]int{}, updated: map[string]int{}} }

func (r *recorder) OnAdd(obj any, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added[obj.(*corev1.ConfigMap).Name]++
}

func (r *recorder) OnUpdate(_, obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updated[obj.(*corev1.ConfigMap).Name]++
}

func (r *recorder) OnDelete(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	r.deleted = append(r.deleted, obj.(*corev1.ConfigMap).Name)
}

// spread gives each object a uid hashed from the test server's (whose
// sequential uids share their FNV-1a high bits, so they would fall in two
// slices): real uids are random.
func spread(o *corev1.ConfigMap) *corev1.ConfigMap {
	if !strings.HasPrefix(string(o.UID), "spread-") {
		o.UID = types.UID(fmt.Sprintf("spread-%x", sha256.Sum256([]byte(o.UID))))
	}
	return o
}

func spreadLW(srv *steadywatchtest.Server[*corev1.ConfigMap]) cache.ListerWatcher {
	lw := cache.ToListerWatcherWithContext(srv.InNamespace("default").ListerWatcher())
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l, err := lw.ListWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			for i := range l.(*corev1.ConfigMapList).Items {
				spread(&l.(*corev1.ConfigMapList).Items[i])
			}
			return l, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := lw.WatchWithContext(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if c, ok := ev.Object.(*corev1.ConfigMap); ok {
					spread(c)
				}
				return ev, true
			}), nil
		},
	}
}

func start(ctx context.Context, t *testing.T, srv *steadywatchtest.Server[*corev1.ConfigMap], leases coordinationclient.LeasesGetter, id string) (*shard.Informer, *recorder, context.CancelFunc) {
	t.Helper()
	inf, err := shard.New(spreadLW(srv), &corev1.ConfigMap{}, shard.Options{
		Leases: leases, Namespace: "ops", Group: "widgets", Identity: id, LeaseDuration: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return inf, rec, cancel
}

func settled(infs ...*shard.Informer) bool {
	for _, inf := range infs {
		v := inf.View()
		if len(v.Members) != len(infs) || !slices.Equal(v.Acting, v.Desired) {
			return false
		}
	}
	return true
}

func storedCM(srv *steadywatchtest.Server[*corev1.ConfigMap], i int) *corev1.ConfigMap {
	o, _ := srv.Get("default", "cm-"+strconv.Itoa(i))
	return spread(o)
}

func TestNewRejectsOptionsItCannotRunWith(t *testing.T) {
	srv := newServer(t)
	leases := fake.NewClientset().CoordinationV1()
	for name, o := range map[string]shard.Options{
		"no Leases":             {Namespace: "ops", Group: "g"},
		"no Namespace":          {Leases: leases, Group: "g"},
		"no Group":              {Leases: leases, Namespace: "ops"},
		"LeaseDuration too low": {Leases: leases, Namespace: "ops", Group: "g", LeaseDuration: time.Second},
	} {
		if _, err := shard.New(srv.ListerWatcher(), &corev1.ConfigMap{}, o); !errors.Is(err, shard.ErrInvalidOptions) {
			t.Errorf("%s: err = %v, want ErrInvalidOptions", name, err)
		}
	}
	if _, err := shard.New(srv.ListerWatcher(), &corev1.ConfigMap{}, shard.Options{Leases: leases, Namespace: "ops", Group: "g"}); err != nil {
		t.Errorf("defaults (Identity: the host name): %v", err)
	}
}

// A replica that joins takes part of the objects: the first replica's
// handler is not told they were deleted, the new owner's handler receives
// them, and a real deletion still reaches the owner.
func TestObjectsThatMoveAreNotDeletedAndTheNewOwnerIsTold(t *testing.T) {
	srv := newServer(t)
	leases := fake.NewClientset().CoordinationV1()
	a, recA, _ := start(context.Background(), t, srv, leases, "a")
	testfake.WaitFor(t, "a alone owns everything", func() bool { return settled(a) && len(a.View().Acting) == 24 })
	b, recB, _ := start(context.Background(), t, srv, leases, "b")
	testfake.WaitFor(t, "a and b split the slices", func() bool {
		return settled(a, b) && len(a.GetStore().List())+len(b.GetStore().List()) == objects
	})
	recA.mu.Lock()
	if len(recA.deleted) > 0 {
		t.Errorf("a's handler was told %v were deleted; they only moved to b", recA.deleted)
	}
	recA.mu.Unlock()
	var bOwns []string
	for i := range objects {
		o := storedCM(srv, i)
		if done, owned := b.Owns(o); owned {
			done()
			bOwns = append(bOwns, o.Name)
		}
	}
	if len(bOwns) == 0 {
		t.Fatal("b owns nothing")
	}
	// The store holds them before the handler is called (client-go's
	// informer hands each change to its handlers after the indexer):
	// wait for the calls.
	notReceived := func() []string {
		recB.mu.Lock()
		defer recB.mu.Unlock()
		var missing []string
		for _, n := range bOwns {
			if recB.added[n]+recB.updated[n] == 0 {
				missing = append(missing, n)
			}
		}
		return missing
	}
	testfake.WaitFor(t, "b's handler receives every object b owns", func() bool { return len(notReceived()) == 0 })

	// A real deletion still reaches the owner's handler.
	if err := srv.Delete("default", bOwns[0]); err != nil {
		t.Fatal(err)
	}
	testfake.WaitFor(t, "b's handler is told of a real deletion", func() bool {
		recB.mu.Lock()
		defer recB.mu.Unlock()
		return slices.Contains(recB.deleted, bOwns[0])
	})
}

// An object moves to another replica only after the reconcile its old
// owner runs on it ends (done is called); the other moving objects do not
// wait for it. When the new owner starts on it, its handler receives an
// update for it: the object is in its cache already and no event of its own
// may come.
func TestAnObjectMovesOnlyAfterItsReconcileEnds(t *testing.T) {
	srv := newServer(t)
	leases := fake.NewClientset().CoordinationV1()
	a, _, _ := start(context.Background(), t, srv, leases, "a")
	testfake.WaitFor(t, "a alone owns everything", func() bool { return settled(a) && len(a.GetStore().List()) == objects })
	// Hold one reconcile on every object: one of them is bound to move.
	var dones []func()
	for i := range objects {
		done, owned := a.Owns(storedCM(srv, i))
		if !owned {
			t.Fatalf("a does not own cm-%d", i)
		}
		dones = append(dones, done)
	}
	b, recB, _ := start(context.Background(), t, srv, leases, "b")
	testfake.WaitFor(t, "b is assigned slices", func() bool { return len(b.View().Desired) > 0 && len(a.View().Members) == 2 })
	// Release all but one running reconcile: b then acts on every assigned
	// slice except the held object's.
	var held *corev1.ConfigMap
	for i := range objects {
		o := storedCM(srv, i)
		if held == nil && slices.Contains(b.View().Desired, sliceOf(o)) {
			held = o
			continue
		}
		dones[i]()
	}
	if held == nil {
		t.Fatal("no object moves to b")
	}
	testfake.WaitFor(t, "b acts on every other assigned slice", func() bool {
		v := b.View()
		return len(v.Acting) >= len(v.Desired)-1
	})
	if done, owned := b.Owns(held); owned {
		done()
		t.Fatalf("b owns %s while a's reconcile of it still runs", held.Name)
	}
	for _, done := range dones {
		done() // a second call does nothing
	}
	testfake.WaitFor(t, "b owns the held object once a's reconcile ended", func() bool {
		done, owned := b.Owns(held)
		done()
		return owned
	})
	if done, owned := a.Owns(held); owned {
		done()
		t.Fatalf("a and b both own %s", held.Name)
	}
	testfake.WaitFor(t, "b's handler receives the held object once b owns it", func() bool {
		recB.mu.Lock()
		defer recB.mu.Unlock()
		return recB.updated[held.Name] > 0
	})
}

// sliceOf is the slice (of 24) o's uid hashes into.
func sliceOf(o *corev1.ConfigMap) int {
	h := sharding.Hash(string(o.UID))
	for i := range 24 {
		if sharding.Slice(i, 24).Contains(h) {
			return i
		}
	}
	return -1
}
