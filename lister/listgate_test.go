package lister

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// blockingLists is a Client whose collection lists (limit != 1) block until
// released, counting how many are in flight at once; limit=1 lists answer
// at once.
type blockingLists struct {
	key         string // requestKey: "" never shares
	fail        error  // every collection list's answer, when set
	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	sent        int
	entered     chan struct{} // one value per collection list sent
	proceed     chan struct{} // one value lets one list answer
}

func newBlockingLists() *blockingLists {
	return &blockingLists{entered: make(chan struct{}, 64), proceed: make(chan struct{}, 64)}
}

func (b *blockingLists) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	if o.Limit == 1 {
		return list, nil
	}
	b.mu.Lock()
	b.sent++
	b.inFlight++
	b.maxInFlight = max(b.maxInFlight, b.inFlight)
	b.mu.Unlock()
	b.entered <- struct{}{}
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	select {
	case <-b.proceed:
		if b.fail != nil {
			return nil, b.fail
		}
		list.Items = []corev1.ConfigMap{*cm("a", "9")}
		return list, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *blockingLists) requestKey() string { return b.key }

func (b *blockingLists) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errors.New("no watch")
}

func (b *blockingLists) counts() (sent, maxInFlight int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent, b.maxInFlight
}

// waitFor polls cond until it holds; it fails the test after 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestListGateBoundsConcurrentListRequests(t *testing.T) {
	c := newBlockingLists()
	gate := NewListGate(2)
	const listers = 6
	errs := make(chan error, listers)
	for range listers {
		go func() {
			_, _, err := New(c, Options{ListGate: gate}).List(context.Background(), MostRecent())
			errs <- err
		}()
	}
	// Two lists are sent; the four others wait for a slot, without a request.
	<-c.entered
	<-c.entered
	waitFor(t, "four queued lists", func() bool { return gate.Stats().Queued == 4 })
	if sent, _ := c.counts(); sent != 2 {
		t.Fatalf("%d lists sent while the gate has 2 slots", sent)
	}
	for i := range listers {
		c.proceed <- struct{}{}
		if err := <-errs; err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
	}
	sent, maxInFlight := c.counts()
	if sent != listers || maxInFlight != 2 {
		t.Fatalf("sent %d lists, at most %d at once; want %d, 2", sent, maxInFlight, listers)
	}
	st := gate.Stats()
	if st.Admitted != listers || st.Waited != 4 || st.MaxInFlight != 2 || st.InFlight != 0 || st.Queued != 0 || st.WaitTime <= 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestListGateLeavesSingleObjectReadsAlone(t *testing.T) {
	c := newBlockingLists()
	gate := NewListGate(1)
	done := listAsync(c, gate, MostRecent())
	<-c.entered // the gate's one slot is held
	l := New(c, Options{ListGate: gate})
	if _, _, err := l.CurrentResourceVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, ok := ExpectedInitialEvents(context.Background(), c, metav1.ListOptions{}); !ok || n != 0 {
		t.Fatalf("count list: %d, %v", n, ok)
	}
	if _, _, err := l.List(context.Background(), MostRecent().WithLimit(1)); err != nil {
		t.Fatal(err)
	}
	if st := gate.Stats(); st.Admitted != 1 || st.Queued != 0 {
		t.Fatalf("limit=1 reads took or waited for a slot: %+v", st)
	}
	c.proceed <- struct{}{}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestListGateWaitEndsWithTheContextWithoutARequest(t *testing.T) {
	c := newBlockingLists()
	gate := NewListGate(1)
	done := listAsync(c, gate, MostRecent())
	<-c.entered
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, _, err := New(c, Options{ListGate: gate}).List(ctx, MostRecent())
		waited <- err
	}()
	waitFor(t, "a queued list", func() bool { return gate.Stats().Queued == 1 })
	cancel()
	err := <-waited
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if sent, _ := c.counts(); sent != 1 {
		t.Fatalf("%d lists sent; the cancelled one must send none", sent)
	}
	c.proceed <- struct{}{}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	if st := gate.Stats(); st.Queued != 0 || st.InFlight != 0 || st.Admitted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestListGateHeldByAStreamingListUntilItsInitialEventsEnd(t *testing.T) {
	gate := NewListGate(1)
	fw := watch.NewRaceFreeFake()
	sc := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	rec := &gateRecorder{}
	srv := staticServer(compat.Yes, compat.Yes)
	w, err := NewListerWatcher(sc, Options{Server: srv, ListGate: gate, Metrics: rec, DisableInitialEventsCount: true}).
		WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if st := gate.Stats(); st.InFlight != 1 {
		t.Fatalf("the streaming list holds no slot: %+v", st)
	}
	// A list of another lister waits while the stream sends its collection.
	c := newBlockingLists()
	listed := make(chan error, 1)
	go func() {
		_, _, err := New(c, Options{ListGate: gate, Metrics: rec, Name: "waiting"}).List(context.Background(), MostRecent())
		listed <- err
	}()
	waitFor(t, "the list to queue", func() bool { return gate.Stats().Queued == 1 })
	fw.Add(cm("a", "5"))
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Added {
		t.Fatalf("got %v", ev.Type)
	}
	if sent, _ := c.counts(); sent != 0 {
		t.Fatal("a list was sent before the stream's initial events ended")
	}
	fw.Action(watch.Bookmark, endBookmark("6"))
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Bookmark {
		t.Fatalf("got %v", ev.Type)
	}
	<-c.entered // the end bookmark freed the slot
	c.proceed <- struct{}{}
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
	gate := NewListGate(1)
	for name, watchFn := range map[string]func(metav1.ListOptions) (watch.Interface, error){
		"open fails": func(metav1.ListOptions) (watch.Interface, error) { return nil, errors.New("connection refused") },
		"closed before the end bookmark": func(metav1.ListOptions) (watch.Interface, error) {
			return testfake.NewWatch([]watch.Event{{Type: watch.Added, Object: cm("a", "5")}}, true), nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			sc := &scripted{t: t, watchFn: watchFn}
			lw := NewListerWatcher(sc, Options{Server: staticServer(compat.Yes, compat.Yes), ListGate: gate, DisableInitialEventsCount: true})
			w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
			if err == nil {
				for range w.ResultChan() {
				}
			}
			waitFor(t, "the slot to be freed", func() bool { return gate.Stats().InFlight == 0 })
		})
	}
}

// gateRecorder records ListGateWait calls (metrics.ListGateRecorder).
type gateRecorder struct {
	countingRecorder
	gmu     sync.Mutex
	names   []string
	overdue []string
}

func (r *gateRecorder) ListGateWait(name string, waited time.Duration) {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	if waited > 0 {
		r.names = append(r.names, name)
	}
}

func (r *gateRecorder) ListGateShared(string) {}

func (r *gateRecorder) ListGateOverdue(name string) {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	r.overdue = append(r.overdue, name)
}

func (r *gateRecorder) overdues() []string {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	return append([]string(nil), r.overdue...)
}

func (r *gateRecorder) waits() []string {
	r.gmu.Lock()
	defer r.gmu.Unlock()
	return append([]string(nil), r.names...)
}

func TestNilListGateAdmitsAtOnce(t *testing.T) {
	var g *ListGate
	release, err := g.Acquire(context.Background(), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if st := g.Stats(); st != (ListGateStats{}) {
		t.Fatalf("stats %+v", st)
	}
	if got := NewListGate(0).Stats().Slots; got != 1 {
		t.Fatalf("NewListGate(0) has %d slots, want 1", got)
	}
}

// attached counts the readers attached to another's request, queued or
// in flight.
func attached(g *ListGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, fl := range g.pending {
		n += fl.followers
	}
	for _, fl := range g.joinable {
		n += fl.followers
	}
	return n
}

// listAsync starts a List of q by a new Lister over c sharing gate.
func listAsync(c Client, gate *ListGate, q Query) <-chan listResult {
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
	c := newBlockingLists()
	c.key = "configmaps"
	gate := NewListGate(1)
	first := listAsync(c, gate, MostRecent())
	<-c.entered // sent; the others queue behind it
	var waiting []<-chan listResult
	for range 5 {
		waiting = append(waiting, listAsync(c, gate, MostRecent()))
	}
	// One of the five waits for the slot, four attach to it (a MostRecent
	// read may share a request sent after it was made, not the one in
	// flight).
	waitFor(t, "one queued read, four attached", func() bool { return gate.Stats().Queued == 1 && attached(gate) == 4 })
	c.proceed <- struct{}{}
	if r := <-first; r.err != nil || r.rec.Requests[0].Shared {
		t.Fatalf("first: %v, %+v", r.err, r.rec.Requests)
	}
	<-c.entered
	c.proceed <- struct{}{}
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
	if sent, _ := c.counts(); sent != 2 || shared != 4 {
		t.Fatalf("sent %d requests, %d lists shared; want 2, 4", sent, shared)
	}
	if st := gate.Stats(); st.Shared != 4 || st.Admitted != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestListGateJoinsAnInFlightRequestOnlyWhereTheSemanticAllows(t *testing.T) {
	c := newBlockingLists()
	c.key = "configmaps"
	gate := NewListGate(3)
	anyRead := listAsync(c, gate, Any())
	<-c.entered
	// resourceVersion "0": the answer in flight satisfies it.
	joined := listAsync(c, gate, Any())
	waitFor(t, "the Any read to attach", func() bool { return attached(gate) == 1 })
	// MostRecent: the answer in flight may predate it; it sends its own.
	recent := listAsync(c, gate, MostRecent())
	<-c.entered
	c.proceed <- struct{}{}
	c.proceed <- struct{}{}
	for _, ch := range []<-chan listResult{anyRead, joined, recent} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if sent, _ := c.counts(); sent != 2 {
		t.Fatalf("sent %d requests, want 2 (Any shared, MostRecent its own)", sent)
	}
	if st := gate.Stats(); st.Shared != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestListGateSharesOnlySuccessesAndOnlyBetweenIdenticalRequests(t *testing.T) {
	c := newBlockingLists()
	c.key = "configmaps"
	c.fail = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("boom")) // never retried
	gate := NewListGate(1)
	other := newBlockingLists()
	other.key = "secrets" // another client: never shared with c's
	first := listAsync(c, gate, MostRecent())
	<-c.entered
	a, b := listAsync(c, gate, MostRecent()), listAsync(c, gate, MostRecent())
	waitFor(t, "one queued read, one attached", func() bool { return gate.Stats().Queued == 1 && attached(gate) == 1 })
	o := listAsync(other, gate, MostRecent())
	waitFor(t, "two queued reads", func() bool { return gate.Stats().Queued == 2 })
	c.proceed <- struct{}{} // first fails
	if r := <-first; r.err == nil {
		t.Fatal("first: want its error")
	}
	<-c.entered             // a (or b) sends, the other attached
	c.proceed <- struct{}{} // fails too: the attached one sends its own
	<-other.entered
	other.proceed <- struct{}{}
	<-c.entered
	c.proceed <- struct{}{}
	for _, ch := range []<-chan listResult{a, b} {
		if r := <-ch; r.err == nil || r.rec.Requests[0].Shared {
			t.Fatalf("want each reader's own error, got %v, %+v", r.err, r.rec.Requests)
		}
	}
	if r := <-o; r.err != nil || r.rec.Requests[0].Shared {
		t.Fatalf("other client: %v", r.err)
	}
	if sent, _ := c.counts(); sent != 3 {
		t.Fatalf("c sent %d requests, want 3", sent)
	}
	if st := gate.Stats(); st.Shared != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestListGateAdmitsTheNextReadWhenOneOutlivesTheHoldBound(t *testing.T) {
	const hold = 300 * time.Millisecond
	gate := NewListGate(1, WithMaxHold(hold))
	rec := &gateRecorder{}
	stuck, other := newBlockingLists(), newBlockingLists()
	list := func(c Client, name string) <-chan error {
		out := make(chan error, 1)
		go func() {
			_, _, err := New(c, Options{ListGate: gate, Metrics: rec, Name: name}).List(context.Background(), MostRecent())
			out <- err
		}()
		return out
	}
	a := list(stuck, "stuck") // a list the server (or a proxy) leaves without an answer
	<-stuck.entered
	start := time.Now()
	b := list(other, "b")
	waitFor(t, "b to queue", func() bool { return gate.Stats().Queued == 1 })
	c := list(other, "c")
	waitFor(t, "c to queue", func() bool { return gate.Stats().Queued == 2 })
	// After the hold bound the stuck list no longer counts: b is sent, c
	// still waits for the one slot (b's).
	select {
	case <-other.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("b was never admitted while the first list held its slot without an answer")
	}
	if waited := time.Since(start); waited < hold-50*time.Millisecond {
		t.Fatalf("b admitted after %v, before the hold bound %v", waited, hold)
	}
	st := gate.Stats()
	if st.Overdue != 1 || st.OverdueInFlight != 1 || st.InFlight != 1 || st.Queued != 1 {
		t.Fatalf("stats after the hold bound %+v", st)
	}
	if got := rec.overdues(); len(got) != 1 || got[0] != "stuck" {
		t.Fatalf("ListGateOverdue calls %v, want [stuck]", got)
	}
	// The late list ends: its slot was handed on already, so c still waits
	// for b's.
	stuck.proceed <- struct{}{}
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if st := gate.Stats(); st.OverdueInFlight != 0 || st.InFlight != 1 || st.Queued != 1 {
		t.Fatalf("the late list's end freed a slot it no longer held: %+v", st)
	}
	other.proceed <- struct{}{}
	<-other.entered
	other.proceed <- struct{}{}
	for _, ch := range []<-chan error{b, c} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if _, most := other.counts(); most != 1 {
		t.Fatalf("%d of b and c in flight at once, want 1", most)
	}
	if st := gate.Stats(); st.InFlight != 0 || st.OverdueInFlight != 0 || st.Queued != 0 || st.Overdue != 1 {
		t.Fatalf("final stats %+v", st)
	}
}

func TestListGateHoldBoundAppliesToStreamsAndCanBeTurnedOff(t *testing.T) {
	if g := NewListGate(1); g.maxHold != DefaultListGateMaxHold {
		t.Fatalf("default hold bound %v, want %v", g.maxHold, DefaultListGateMaxHold)
	}
	if g := NewListGate(1, WithMaxHold(0)); g.maxHold != DefaultListGateMaxHold {
		t.Fatalf("WithMaxHold(0) gives %v, want the default", g.maxHold)
	}
	// Acquire (streaming lists): a stream holding its slot past the bound
	// lets the next read in; its own release later is harmless.
	gate := NewListGate(1, WithMaxHold(20*time.Millisecond))
	release1, err := gate.Acquire(context.Background(), "stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release2, err := gate.Acquire(ctx, "next", nil)
	if err != nil {
		t.Fatalf("the next read was not admitted past the hold bound: %v", err)
	}
	release1()
	release1()
	if st := gate.Stats(); st.InFlight != 1 || st.OverdueInFlight != 0 || st.Overdue < 1 {
		t.Fatalf("stats %+v", st)
	}
	release2()
	if st := gate.Stats(); st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Turned off: a read holding its slot keeps it.
	off := NewListGate(1, WithMaxHold(-1))
	hold, err := off.Acquire(context.Background(), "stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if _, err := off.Acquire(short, "next", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("without a hold bound the next read got %v, want to wait until its context ended", err)
	}
	hold()
	if st := off.Stats(); st.Overdue != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}
