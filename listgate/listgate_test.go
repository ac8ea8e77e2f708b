package listgate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/metrics"
)

type listResult struct {
	obj    runtime.Object
	shared bool
	err    error
}

// listAsync starts one list of b with opts through g, named name.
func listAsync(ctx context.Context, g *Gate, b *testfake.BlockingLists, opts metav1.ListOptions, name string, rec metrics.Recorder) <-chan listResult {
	out := make(chan listResult, 1)
	go func() {
		obj, shared, err := g.List(ctx, name, rec, b, opts, func(ctx context.Context) (runtime.Object, error) { return b.List(ctx, opts) })
		out <- listResult{obj, shared, err}
	}()
	return out
}

var (
	mostRecent = metav1.ListOptions{}
	anyRV      = metav1.ListOptions{ResourceVersion: "0"}
)

// recorder records the metrics.Recorder listgate calls.
type recorder struct {
	metricsnop.Nop
	mu      sync.Mutex
	waits   []string
	shared  []string
	overdue []string
}

func (r *recorder) ListGateWait(name string, waited time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if waited > 0 {
		r.waits = append(r.waits, name)
	}
}

func (r *recorder) ListGateShared(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shared = append(r.shared, name)
}

func (r *recorder) ListGateOverdue(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overdue = append(r.overdue, name)
}

func (r *recorder) calls() (waits, shared, overdue []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.waits...), append([]string(nil), r.shared...), append([]string(nil), r.overdue...)
}

// keyedLists is a blocking client whose lists are named key (its
// RequestKey): the gate shares identical lists of the same key.
func keyedLists(key string) *testfake.BlockingLists {
	b := testfake.NewBlockingLists()
	b.Key = key
	return b
}

func TestBoundsConcurrentListRequests(t *testing.T) {
	b := testfake.NewBlockingLists()
	g := New(2)
	rec := &recorder{}
	const readers = 6
	var results []<-chan listResult
	for range readers {
		results = append(results, listAsync(context.Background(), g, b, mostRecent, "r", rec))
	}
	// Two lists are sent; the four others wait for a slot, without a request.
	<-b.Entered
	<-b.Entered
	testfake.WaitFor(t, "four queued lists", func() bool { return g.Stats().Queued == 4 })
	if sent, _ := b.Counts(); sent != 2 {
		t.Fatalf("%d lists sent while the gate has 2 slots", sent)
	}
	for range readers {
		b.Proceed <- struct{}{}
	}
	for i, ch := range results {
		if r := <-ch; r.err != nil || r.shared {
			t.Fatalf("list %d: %v, shared %v", i, r.err, r.shared)
		}
	}
	sent, maxInFlight := b.Counts()
	if sent != readers || maxInFlight != 2 {
		t.Fatalf("sent %d lists, at most %d at once; want %d, 2", sent, maxInFlight, readers)
	}
	st := g.Stats()
	if st.Admitted != readers || st.Waited != 4 || st.MaxInFlight != 2 || st.InFlight != 0 || st.Queued != 0 || st.WaitTime <= 0 {
		t.Fatalf("stats %+v", st)
	}
	if waits, _, _ := rec.calls(); len(waits) != 4 {
		t.Fatalf("ListGateWait reported %v, want 4 waits", waits)
	}
}

func TestLetsSingleObjectListsPass(t *testing.T) {
	b := keyedLists("configmaps")
	g := New(1)
	done := listAsync(context.Background(), g, b, mostRecent, "holder", nil)
	<-b.Entered // the gate's one slot is held
	if r := <-listAsync(context.Background(), g, b, metav1.ListOptions{Limit: 1}, "count", nil); r.err != nil || r.shared {
		t.Fatalf("limit=1 list: %v, shared %v", r.err, r.shared)
	}
	if st := g.Stats(); st.Admitted != 1 || st.Queued != 0 {
		t.Fatalf("a limit=1 list took or waited for a slot: %+v", st)
	}
	b.Proceed <- struct{}{}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestWaitEndsWithTheContextWithoutARequest(t *testing.T) {
	b := testfake.NewBlockingLists()
	g := New(1)
	done := listAsync(context.Background(), g, b, mostRecent, "first", nil)
	<-b.Entered
	ctx, cancel := context.WithCancel(context.Background())
	waited := listAsync(ctx, g, b, mostRecent, "second", nil)
	testfake.WaitFor(t, "a queued list", func() bool { return g.Stats().Queued == 1 })
	cancel()
	if r := <-waited; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", r.err)
	}
	if sent, _ := b.Counts(); sent != 1 {
		t.Fatalf("%d lists sent; the cancelled one must send none", sent)
	}
	b.Proceed <- struct{}{}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	if st := g.Stats(); st.Queued != 0 || st.InFlight != 0 || st.Admitted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestNilGateAdmitsAtOnce(t *testing.T) {
	var g *Gate
	release, err := g.Acquire(context.Background(), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
	b := testfake.NewBlockingLists()
	b.Proceed <- struct{}{}
	if r := <-listAsync(context.Background(), g, b, mostRecent, "x", nil); r.err != nil || r.shared {
		t.Fatalf("list through a nil gate: %v, shared %v", r.err, r.shared)
	}
	if st := g.Stats(); st != (Stats{}) {
		t.Fatalf("stats %+v", st)
	}
	if got := New(0).Stats().Slots; got != 1 {
		t.Fatalf("New(0) has %d slots, want 1", got)
	}
}

func TestServesIdenticalQueuedListsWithOneRequest(t *testing.T) {
	b := keyedLists("configmaps")
	g := New(1)
	rec := &recorder{}
	first := listAsync(context.Background(), g, b, mostRecent, "first", rec)
	<-b.Entered // sent; the others queue behind it
	var waiting []<-chan listResult
	for range 5 {
		waiting = append(waiting, listAsync(context.Background(), g, b, mostRecent, "queued", rec))
	}
	// One of the five waits for the slot, four attach to it (a MostRecent
	// read may share a request sent after it was made, not the one in
	// flight).
	testfake.WaitFor(t, "one queued read, four attached", func() bool { return g.Stats().Queued == 1 && g.Stats().Attached == 4 })
	b.Proceed <- struct{}{}
	if r := <-first; r.err != nil || r.shared {
		t.Fatalf("first: %v, shared %v", r.err, r.shared)
	}
	<-b.Entered
	b.Proceed <- struct{}{}
	seen := map[runtime.Object]bool{}
	shared := 0
	for _, ch := range waiting {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if l := r.obj.(*corev1.ConfigMapList); len(l.Items) != 1 || l.ResourceVersion != "10" {
			t.Fatalf("list %+v", r.obj)
		}
		if seen[r.obj] {
			t.Fatal("two readers got the same list object: each must get its own copy")
		}
		seen[r.obj] = true
		if r.shared {
			shared++
		}
	}
	if sent, _ := b.Counts(); sent != 2 || shared != 4 {
		t.Fatalf("sent %d requests, %d lists shared; want 2, 4", sent, shared)
	}
	if st := g.Stats(); st.Shared != 4 || st.Admitted != 2 || st.Attached != 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, sh, _ := rec.calls(); len(sh) != 4 {
		t.Fatalf("ListGateShared reported %v, want 4", sh)
	}
}

func TestJoinsAnInFlightRequestOnlyWhereTheSemanticAllows(t *testing.T) {
	b := keyedLists("configmaps")
	g := New(3)
	anyRead := listAsync(context.Background(), g, b, anyRV, "any", nil)
	<-b.Entered
	// resourceVersion "0": the answer in flight satisfies it.
	joined := listAsync(context.Background(), g, b, anyRV, "any", nil)
	testfake.WaitFor(t, "the Any read to attach", func() bool { return g.Stats().Attached == 1 })
	// MostRecent: the answer in flight may predate it; it sends its own.
	recent := listAsync(context.Background(), g, b, mostRecent, "recent", nil)
	<-b.Entered
	b.Proceed <- struct{}{}
	b.Proceed <- struct{}{}
	var shared []bool
	for _, ch := range []<-chan listResult{anyRead, joined, recent} {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		shared = append(shared, r.shared)
	}
	if sent, _ := b.Counts(); sent != 2 || !shared[1] || shared[0] || shared[2] {
		t.Fatalf("sent %d requests (shared %v), want 2 (the second Any shared, MostRecent its own)", sent, shared)
	}
	if st := g.Stats(); st.Shared != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSharesOnlySuccessesAndOnlyBetweenIdenticalRequests(t *testing.T) {
	b := keyedLists("configmaps")
	b.Fail = errors.New("forbidden")
	g := New(1)
	other := keyedLists("secrets") // another client: never shared with b's
	first := listAsync(context.Background(), g, b, mostRecent, "first", nil)
	<-b.Entered
	x, y := listAsync(context.Background(), g, b, mostRecent, "x", nil), listAsync(context.Background(), g, b, mostRecent, "y", nil)
	testfake.WaitFor(t, "one queued read, one attached", func() bool { return g.Stats().Queued == 1 && g.Stats().Attached == 1 })
	o := listAsync(context.Background(), g, other, mostRecent, "other", nil)
	testfake.WaitFor(t, "two queued reads", func() bool { return g.Stats().Queued == 2 })
	b.Proceed <- struct{}{} // first fails
	if r := <-first; r.err == nil {
		t.Fatal("first: want its error")
	}
	<-b.Entered             // x (or y) sends, the other attached
	b.Proceed <- struct{}{} // fails too: the attached one sends its own
	<-other.Entered
	other.Proceed <- struct{}{}
	<-b.Entered
	b.Proceed <- struct{}{}
	for _, ch := range []<-chan listResult{x, y} {
		if r := <-ch; r.err == nil || r.shared {
			t.Fatalf("want each reader's own error, got %v, shared %v", r.err, r.shared)
		}
	}
	if r := <-o; r.err != nil || r.shared {
		t.Fatalf("other client: %v, shared %v", r.err, r.shared)
	}
	if sent, _ := b.Counts(); sent != 3 {
		t.Fatalf("b sent %d requests, want 3", sent)
	}
	if st := g.Stats(); st.Shared != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestNeverSharesUnkeyedOrDifferentRequests(t *testing.T) {
	unkeyed := testfake.NewBlockingLists() // RequestKey "": never shared
	keyed := keyedLists("configmaps")
	g := New(1)
	holder := listAsync(context.Background(), g, keyed, mostRecent, "holder", nil)
	<-keyed.Entered
	u1, u2 := listAsync(context.Background(), g, unkeyed, mostRecent, "u", nil), listAsync(context.Background(), g, unkeyed, mostRecent, "u", nil)
	// Same client, other parameters: another request.
	sel := listAsync(context.Background(), g, keyed, metav1.ListOptions{LabelSelector: "a=b"}, "sel", nil)
	plain := listAsync(context.Background(), g, keyed, mostRecent, "plain", nil)
	testfake.WaitFor(t, "four queued reads", func() bool { return g.Stats().Queued == 4 })
	if n := g.Stats().Attached; n != 0 {
		t.Fatalf("%d reads attached to another's request", n)
	}
	for range 3 {
		keyed.Proceed <- struct{}{}
		unkeyed.Proceed <- struct{}{}
	}
	for _, ch := range []<-chan listResult{holder, u1, u2, sel, plain} {
		if r := <-ch; r.err != nil || r.shared {
			t.Fatalf("%v, shared %v", r.err, r.shared)
		}
	}
	if st := g.Stats(); st.Shared != 0 || st.Admitted != 5 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAdmitsTheNextReadWhenOneOutlivesTheHoldBound(t *testing.T) {
	const hold = time.Second // long enough for the checks below to run within b's own bound
	g := New(1, WithMaxHold(hold))
	rec := &recorder{}
	stuck, other := testfake.NewBlockingLists(), testfake.NewBlockingLists()
	a := listAsync(context.Background(), g, stuck, mostRecent, "stuck", rec) // a list the server (or a proxy) leaves without an answer
	<-stuck.Entered
	start := time.Now()
	b := listAsync(context.Background(), g, other, mostRecent, "b", rec)
	testfake.WaitFor(t, "b to queue", func() bool { return g.Stats().Queued == 1 })
	c := listAsync(context.Background(), g, other, mostRecent, "c", rec)
	testfake.WaitFor(t, "c to queue", func() bool { return g.Stats().Queued == 2 })
	// After the hold bound the stuck list no longer counts: b is sent, c
	// still waits for the one slot (b's).
	select {
	case <-other.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("b was never admitted while the first list held its slot without an answer")
	}
	if waited := time.Since(start); waited < hold-50*time.Millisecond {
		t.Fatalf("b admitted after %v, before the hold bound %v", waited, hold)
	}
	st := g.Stats()
	if st.Overdue != 1 || st.OverdueInFlight != 1 || st.InFlight != 1 || st.Queued != 1 {
		t.Fatalf("stats after the hold bound %+v", st)
	}
	// The metric is recorded after the gate's lock is released, so it may
	// come just after b was admitted.
	testfake.WaitFor(t, "ListGateOverdue(stuck)", func() bool { _, _, got := rec.calls(); return len(got) > 0 })
	if _, _, got := rec.calls(); len(got) != 1 || got[0] != "stuck" {
		t.Fatalf("ListGateOverdue calls %v, want [stuck]", got)
	}
	// The late list ends: its slot was handed on already, so c still waits
	// for b's.
	stuck.Proceed <- struct{}{}
	if r := <-a; r.err != nil {
		t.Fatal(r.err)
	}
	if st := g.Stats(); st.OverdueInFlight != 0 || st.InFlight != 1 || st.Queued != 1 {
		t.Fatalf("the late list's end freed a slot it no longer held: %+v", st)
	}
	other.Proceed <- struct{}{}
	<-other.Entered
	other.Proceed <- struct{}{}
	for _, ch := range []<-chan listResult{b, c} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if _, most := other.Counts(); most != 1 {
		t.Fatalf("%d of b and c in flight at once, want 1", most)
	}
	if st := g.Stats(); st.InFlight != 0 || st.OverdueInFlight != 0 || st.Queued != 0 || st.Overdue != 1 {
		t.Fatalf("final stats %+v", st)
	}
}

func TestHoldBoundAppliesToStreamsAndCanBeTurnedOff(t *testing.T) {
	if g := New(1); g.maxHold != defaultMaxHold {
		t.Fatalf("default hold bound %v, want %v", g.maxHold, defaultMaxHold)
	}
	if g := New(1, WithMaxHold(0)); g.maxHold != defaultMaxHold {
		t.Fatalf("WithMaxHold(0) gives %v, want the default", g.maxHold)
	}
	// Acquire (streaming lists): a stream holding its slot past the bound
	// lets the next read in; its own release later is harmless.
	g := New(1, WithMaxHold(20*time.Millisecond))
	release1, err := g.Acquire(context.Background(), "stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release2, err := g.Acquire(ctx, "next", nil)
	if err != nil {
		t.Fatalf("the next read was not admitted past the hold bound: %v", err)
	}
	release1()
	release1()
	// The next read may have outlived its own 20ms bound by now.
	if st := g.Stats(); st.InFlight+st.OverdueInFlight != 1 || st.Overdue < 1 {
		t.Fatalf("stats %+v", st)
	}
	release2()
	if st := g.Stats(); st.InFlight != 0 || st.OverdueInFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Turned off: a read holding its slot keeps it.
	off := New(1, WithMaxHold(-1))
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
