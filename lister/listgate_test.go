package lister

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/watchpipe"

	"github.com/steadywatch/steadywatch/internal/knobs"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/listgate"
)

func TestListGateLeavesSingleObjectReadsAlone(t *testing.T) {
	c := testfake.NewBlockingLists()
	gate := listgate.New(1)
	done := listAsync(c, gate, MostRecent())
	<-c.Entered // the gate's one slot is held
	l := New(c, Options{ListGate: gate})
	if _, _, err := l.CurrentResourceVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, ok := watchpipe.ExpectedInitialEvents(context.Background(), c, metav1.ListOptions{}); !ok || n != 0 {
		t.Fatalf("count list: %d, %v", n, ok)
	}
	if _, _, err := l.List(context.Background(), MostRecent().WithLimit(1)); err != nil {
		t.Fatal(err)
	}
	if st := gate.Stats(); st.Admitted != 1 || st.Queued != 0 {
		t.Fatalf("limit=1 reads took or waited for a slot: %+v", st)
	}
	c.Proceed <- struct{}{}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestListGateHeldByAStreamingListUntilItsInitialEventsEnd(t *testing.T) {
	gate := listgate.New(1)
	fw := watch.NewRaceFreeFake()
	sc := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	rec := &gateRecorder{}
	srv := staticServer(capability.Yes, capability.Yes)
	w, err := NewListerWatcher(sc, knobs.WithLister(Options{Server: srv, ListGate: gate, Metrics: rec}, knobs.Lister{DisableInitialEventsCount: true})).
		WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if st := gate.Stats(); st.InFlight != 1 {
		t.Fatalf("the streaming list holds no slot: %+v", st)
	}
	// A list of another lister waits while the stream sends its collection.
	c := testfake.NewBlockingLists()
	listed := make(chan error, 1)
	go func() {
		_, _, err := New(c, Options{ListGate: gate, Metrics: rec, Name: "waiting"}).List(context.Background(), MostRecent())
		listed <- err
	}()
	testfake.WaitFor(t, "the list to queue", func() bool { return gate.Stats().Queued == 1 })
	fw.Add(testfake.ConfigMap("a", "5"))
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Added {
		t.Fatalf("got %v", ev.Type)
	}
	if sent, _ := c.Counts(); sent != 0 {
		t.Fatal("a list was sent before the stream's initial events ended")
	}
	fw.Action(watch.Bookmark, endBookmark("6"))
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Bookmark {
		t.Fatalf("got %v", ev.Type)
	}
	<-c.Entered // the end bookmark freed the slot
	c.Proceed <- struct{}{}
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	if st := gate.Stats(); st.Admitted != 2 || st.Waited != 1 || st.MaxInFlight != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := rec.waits(); len(got) != 1 || got[0] != "waiting" {
		t.Fatalf("ListGateWait reported %v, want [waiting]", got)
	}
}

func TestListGateReleasedWhenAStreamingListFails(t *testing.T) {
	gate := listgate.New(1)
	for name, watchFn := range map[string]func(metav1.ListOptions) (watch.Interface, error){
		"open fails": func(metav1.ListOptions) (watch.Interface, error) { return nil, errors.New("connection refused") },
		"closed before the end bookmark": func(metav1.ListOptions) (watch.Interface, error) {
			return testfake.NewWatch([]watch.Event{{Type: watch.Added, Object: testfake.ConfigMap("a", "5")}}, true), nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			sc := &scripted{t: t, watchFn: watchFn}
			lw := NewListerWatcher(sc, knobs.WithLister(Options{Server: staticServer(capability.Yes, capability.Yes), ListGate: gate}, knobs.Lister{DisableInitialEventsCount: true}))
			w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
			if err == nil {
				for range w.ResultChan() {
				}
			}
			testfake.WaitFor(t, "the slot to be freed", func() bool { return gate.Stats().InFlight == 0 })
		})
	}
}

// gateRecorder records ListGateWait calls (metrics.Recorder).
type gateRecorder struct {
	countingRecorder
	gmu   sync.Mutex
	names []string
}

func (r *gateRecorder) ListGateWait(name string, waited time.Duration) {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	if waited > 0 {
		r.names = append(r.names, name)
	}
}

func (r *gateRecorder) ListGateShared(string) {}

func (r *gateRecorder) ListGateOverdue(string) {}

func (r *gateRecorder) waits() []string {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	return append([]string(nil), r.names...)
}

// listAsync starts a List of q by a new Lister over c sharing gate.
func listAsync(c Client, gate *listgate.Gate, q Query) <-chan listResult {
	out := make(chan listResult, 1)
	go func() {
		obj, rec, err := New(c, Options{ListGate: gate}).List(context.Background(), q)
		out <- listResult{obj, rec, err}
	}()
	return out
}

type listResult struct {
	obj runtime.Object
	rec *Record
	err error
}

func TestListGateServesIdenticalQueuedListsWithOneRequest(t *testing.T) {
	c := testfake.NewBlockingLists()
	c.Key = "configmaps"
	gate := listgate.New(1)
	first := listAsync(c, gate, MostRecent())
	<-c.Entered // sent; the others queue behind it
	var waiting []<-chan listResult
	for range 5 {
		waiting = append(waiting, listAsync(c, gate, MostRecent()))
	}
	// One of the five waits for the slot, four attach to it (a MostRecent
	// read may share a request sent after it was made, not the one in
	// flight).
	testfake.WaitFor(t, "one queued read, four attached", func() bool { return gate.Stats().Queued == 1 && gate.Stats().Attached == 4 })
	c.Proceed <- struct{}{}
	if r := <-first; r.err != nil || r.rec.Requests[0].Shared {
		t.Fatalf("first: %v, %+v", r.err, r.rec.Requests)
	}
	<-c.Entered
	c.Proceed <- struct{}{}
	seen := map[runtime.Object]bool{}
	shared := 0
	for _, ch := range waiting {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.obj.(*corev1.ConfigMapList).Items) != 1 || r.rec.ServedResourceVersion != "10" {
			t.Fatalf("list %+v", r.obj)
		}
		if seen[r.obj] {
			t.Fatal("two readers got the same list object: each must get its own copy")
		}
		seen[r.obj] = true
		if r.rec.Requests[0].Shared {
			shared++
		}
	}
	if sent, _ := c.Counts(); sent != 2 || shared != 4 {
		t.Fatalf("sent %d requests, %d lists shared; want 2, 4", sent, shared)
	}
	if st := gate.Stats(); st.Shared != 4 || st.Admitted != 2 {
		t.Fatalf("stats %+v", st)
	}
}
