package reflector_test

// Per-event CPU and allocations of steadywatch's watch path
// against raw client-go, on the same pre-built events, so the ratio measures
// only the code between the watch channel and the store.
//
//	go test -run '^$' -bench '^BenchmarkReflectorWatchEvent$' -benchmem -count 6 ./reflector | tee new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl new.txt
//
// impl=clientgo:            cache.Reflector over a plain cache.ListWatch (the floor)
// impl=clientgo+swlister:   cache.Reflector over lister.NewListerWatcher (what
//                           reflector.NewSharedIndexInformer and the
//                           InformerFor adoption run)
// impl=steadywatch:         reflector.New (the state-machine reflector)

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// prebuiltKeys is the number of distinct objects the events cycle over.
const prebuiltKeys = 1000

// prebuiltEvents builds n MODIFIED events over prebuiltKeys objects with increasing
// resourceVersions starting after "1" (the list's RV).
func prebuiltEvents(n int) []watch.Event {
	evs := make([]watch.Event, n)
	for i := range evs {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:            "cm-" + strconv.Itoa(i%prebuiltKeys),
				Namespace:       "bench",
				ResourceVersion: strconv.Itoa(i + 2),
			},
			Data: map[string]string{"k": "v"},
		}
		evs[i] = watch.Event{Type: watch.Modified, Object: cm}
	}
	return evs
}

// prebuiltWatchClient lists an empty collection at RV "1" and hands out one watch with
// the events; later watches (none are expected) never send anything.
type prebuiltWatchClient struct {
	evs    []watch.Event
	served atomic.Bool
}

func (c *prebuiltWatchClient) List(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (c *prebuiltWatchClient) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		// Like a server with the WatchList gate off: every contender then
		// lists and watches, so all of them take the same path.
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{field.Forbidden(field.NewPath("sendInitialEvents"), "disabled")})
	}
	if c.served.CompareAndSwap(false, true) {
		return testfake.NewWatch(c.evs, false), nil
	}
	return testfake.NewWatch(nil, false), nil
}

// countingStore signals done once want events have been applied.
type countingStore struct {
	cache.Store
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (s *countingStore) bump() {
	if s.n.Add(1) == s.want {
		close(s.done)
	}
}

func (s *countingStore) Add(obj any) error {
	err := s.Store.Add(obj)
	s.bump()
	return err
}

func (s *countingStore) Update(obj any) error {
	err := s.Store.Update(obj)
	s.bump()
	return err
}

func newCountingStore(want int) *countingStore {
	return &countingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), want: int64(want), done: make(chan struct{})}
}

type eventRunner func(ctx context.Context, c *prebuiltWatchClient, store *countingStore)

func BenchmarkReflectorWatchEvent(b *testing.B) {
	runners := []struct {
		name string
		run  eventRunner
	}{
		{"clientgo", func(ctx context.Context, c *prebuiltWatchClient, store *countingStore) {
			lw := &cache.ListWatch{
				ListWithContextFunc:  c.List,
				WatchFuncWithContext: c.Watch,
			}
			cache.NewReflector(lw, &corev1.ConfigMap{}, store, 0).RunWithContext(ctx)
		}},
		{"clientgo+swlister", func(ctx context.Context, c *prebuiltWatchClient, store *countingStore) {
			lw := lister.NewListerWatcher(c, lister.Options{})
			cache.NewReflector(lw, &corev1.ConfigMap{}, store, 0).RunWithContext(ctx)
		}},
		{"steadywatch", func(ctx context.Context, c *prebuiltWatchClient, store *countingStore) {
			reflector.New(c, &corev1.ConfigMap{}, store, reflector.Options{}).Run(ctx)
		}},
	}
	for _, r := range runners {
		b.Run("impl="+r.name, func(b *testing.B) {
			evs := prebuiltEvents(b.N)
			c := &prebuiltWatchClient{evs: evs}
			store := newCountingStore(b.N)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			b.ReportAllocs()
			b.ResetTimer()
			go func() { defer close(done); r.run(ctx, c, store) }()
			select {
			case <-store.done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("only %d of %d events reached the store", store.n.Load(), b.N)
			}
			b.StopTimer()
			cancel()
			<-done
			if got := store.n.Load(); got != int64(b.N) {
				b.Fatalf("store saw %d events, want %d", got, b.N)
			}
			if len(store.List()) != min(b.N, prebuiltKeys) {
				b.Fatalf("store holds %d objects, want %d", len(store.List()), min(b.N, prebuiltKeys))
			}
		})
	}
}
