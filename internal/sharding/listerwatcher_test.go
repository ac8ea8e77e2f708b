package sharding_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

	"github.com/steadywatch/steadywatch/internal/capability"
	shard "github.com/steadywatch/steadywatch/internal/sharding"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// fakeServer answers lists with its objects, filtered and echoed only when
// applies is set, and records the shardSelector of every request.
type fakeServer struct {
	mu      sync.Mutex
	applies bool
	echo    string // shardInfo to echo instead of the selector sent ("" = the one sent)
	objs    []corev1.ConfigMap
	sent    []string
	w       *watch.FakeWatcher
}

func newFakeServer(n int, applies bool) *fakeServer {
	s := &fakeServer{applies: applies, w: watch.NewFakeWithChanSize(16, false)}
	for i := range n {
		s.objs = append(s.objs, numberedCM(i))
	}
	return s
}

func numberedCM(i int) corev1.ConfigMap {
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("cm-", i), UID: types.UID(fmt.Sprint("uid-", i)), ResourceVersion: "5"}}
}

func (s *fakeServer) lw() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.sent = append(s.sent, "list:"+o.ShardSelector)
			l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
			sel, err := shard.Parse(o.ShardSelector)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			for _, c := range s.objs {
				if ok, _ := sel.Matches(&c); ok || !s.applies {
					l.Items = append(l.Items, c)
				}
			}
			if s.applies && o.ShardSelector != "" {
				echo := o.ShardSelector
				if s.echo != "" {
					echo = s.echo
				}
				l.ShardInfo = &metav1.ShardInfo{Selector: echo}
			}
			return l, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.sent = append(s.sent, "watch:"+o.ShardSelector)
			return s.w, nil
		},
	}
}

var lowHalf = shard.Selector{Field: shard.FieldUID, Ranges: []shard.Range{{Start: 0, End: 1 << 63}}}

func inLowHalf(n int) int {
	k := 0
	for i := range n {
		c := numberedCM(i)
		if ok, _ := lowHalf.Matches(&c); ok {
			k++
		}
	}
	return k
}

func TestWrapListsTheRangeWhetherTheServerFiltersOrNot(t *testing.T) {
	for _, applies := range []bool{true, false} {
		srv := newFakeServer(60, applies)
		rec := &testfake.Recorder{}
		lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }, Metrics: rec})
		obj, err := lw.List(metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		items := obj.(*corev1.ConfigMapList).Items
		want := shard.ModeServer
		if !applies {
			want = shard.ModeClient
		}
		if len(items) != inLowHalf(60) || lw.Mode() != want || srv.sent[0] != "list:"+lowHalf.String() {
			t.Fatalf("server applies=%v: %d items (want %d), mode %q (want %q), sent %q", applies, len(items), inLowHalf(60), lw.Mode(), want, srv.sent)
		}
		if got := rec.Count(testfake.Fallback, "shard-client-filter"); (got == 1) != !applies {
			t.Fatalf("server applies=%v: %d client-filter fallbacks", applies, got)
		}
	}
}

func TestWrapListsAgainWithoutTheParameterOnAMismatchedEcho(t *testing.T) {
	srv := newFakeServer(60, true)
	srv.echo = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
	rec := &testfake.Recorder{}
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }, Metrics: rec})
	obj, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(obj.(*corev1.ConfigMapList).Items); n != inLowHalf(60) || lw.Mode() != shard.ModeClient ||
		len(srv.sent) != 2 || srv.sent[1] != "list:" || rec.Count(testfake.Fallback, "shard-info-mismatch") != 1 {
		t.Fatalf("%d items, mode %q, sent %q, mismatches %d", n, lw.Mode(), srv.sent, rec.Count(testfake.Fallback, "shard-info-mismatch"))
	}
}

func TestWrapWatchDropsEventsOutsideTheRangeAndEndsWhenItChanges(t *testing.T) {
	srv := newFakeServer(0, false)
	rec := &testfake.Recorder{}
	var mu sync.Mutex
	sel := lowHalf
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { mu.Lock(); defer mu.Unlock(); return sel }, Metrics: rec})
	if _, err := lw.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	in, out := oneInOneOut()
	srv.w.Add(&out)
	srv.w.Add(&in)
	select {
	case ev := <-w.ResultChan():
		if ev.Object.(*corev1.ConfigMap).Name != in.Name {
			t.Fatalf("first event delivered is %s, want %s (the one outside the range dropped)", ev.Object.(*corev1.ConfigMap).Name, in.Name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event delivered")
	}
	if rec.Count(testfake.Fallback, "shard-event-outside-range") != 1 {
		t.Fatalf("outside-range fallbacks: %d", rec.Count(testfake.Fallback, "shard-event-outside-range"))
	}
	mu.Lock()
	sel = shard.Selector{Field: shard.FieldUID, Ranges: []shard.Range{{Start: 1 << 63, End: 0}}}
	mu.Unlock()
	lw.RangeChanged()
	ev, ok := <-w.ResultChan()
	if !ok || ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("after RangeChanged: %v %+v, want a 410 Expired error event", ok, ev)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("the watch did not end after its 410")
	}
	if _, err := lw.Watch(metav1.ListOptions{ResourceVersion: "5"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("a watch after the range changed, before a list: %v, want 410 Expired", err)
	}
}

type recordingHandler struct{ adds, deletes []string }

func (r *recordingHandler) OnAdd(obj any, _ bool) {
	r.adds = append(r.adds, obj.(*corev1.ConfigMap).Name)
}
func (r *recordingHandler) OnUpdate(_, _ any) {}
func (r *recordingHandler) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	r.deletes = append(r.deletes, obj.(*corev1.ConfigMap).Name)
}

func TestHandlerDoesNotReportAnObjectThatLeftTheRangeAsDeleted(t *testing.T) {
	rec := &recordingHandler{}
	h := shard.Handler(rec, func() shard.Selector { return lowHalf })
	in, out := oneInOneOut()
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/" + out.Name, Obj: &out})
	h.OnDelete(&in)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/" + in.Name, Obj: &in})
	if len(rec.deletes) != 2 || rec.deletes[0] != in.Name || rec.deletes[1] != in.Name {
		t.Fatalf("deletes delivered %v, want only %s twice", rec.deletes, in.Name)
	}
}

func TestWaitCoversWaitsForAListOfTheRange(t *testing.T) {
	srv := newFakeServer(10, true)
	var mu sync.Mutex
	sel := lowHalf
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { mu.Lock(); defer mu.Unlock(); return sel }})
	if _, err := lw.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	whole := shard.Selector{Field: shard.FieldUID, Ranges: []shard.Range{{Start: 0, End: 0}}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := shard.WaitCovers(ctx, lw, whole); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitCovers before the list of the whole range: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- shard.WaitCovers(context.Background(), lw, whole) }()
	mu.Lock()
	sel = whole
	mu.Unlock()
	if _, err := lw.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitCovers after the list: %v", err)
	}
}

func TestWrapWithNoSlicesHoldsNothing(t *testing.T) {
	srv := newFakeServer(20, true)
	nothing, ok := shard.SelectorOf(shard.FieldUID, nil, 24)
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return nothing }})
	obj, err := lw.List(metav1.ListOptions{})
	if ok || err != nil || len(obj.(*corev1.ConfigMapList).Items) != 0 {
		t.Fatalf("no slices: ok %v, err %v, %d items held", ok, err, len(obj.(*corev1.ConfigMapList).Items))
	}
}

func TestWrapStreamingListTakesTheCurrentRangeAndCountsAsListed(t *testing.T) {
	srv := newFakeServer(0, false)
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }})
	yes := true
	w, err := lw.Watch(metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.sent[0]; got != "watch:"+lowHalf.String() {
		t.Fatalf("streaming list sent %q, want the current range", got)
	}
	in, out := oneInOneOut()
	srv.w.Add(&out)
	srv.w.Add(&in)
	end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "6", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	srv.w.Action(watch.Bookmark, end)
	listed, next := lw.Listed()
	if ev := <-w.ResultChan(); ev.Object.(*corev1.ConfigMap).Name != in.Name {
		t.Fatalf("first streamed event %s, want %s", ev.Object.(*corev1.ConfigMap).Name, in.Name)
	}
	if ev := <-w.ResultChan(); ev.Type != watch.Bookmark {
		t.Fatalf("then %v, want the end bookmark", ev.Type)
	}
	if !listed.Equal(lowHalf) {
		select {
		case <-next:
		case <-time.After(10 * time.Second):
			t.Fatal("the streaming list never counted as listed")
		}
	}
	if got, _ := lw.Listed(); !got.Equal(lowHalf) || lw.Mode() != shard.ModeClient {
		t.Fatalf("after the end bookmark: listed %q, mode %q", got.String(), lw.Mode())
	}
}

// oneInOneOut returns a ConfigMap inside lowHalf and one outside it.
func oneInOneOut() (in, out corev1.ConfigMap) {
	for i := 0; in.Name == "" || out.Name == ""; i++ {
		c := numberedCM(i)
		if ok, _ := lowHalf.Matches(&c); ok {
			in = c
		} else {
			out = c
		}
	}
	return in, out
}

// observations records what a sharded ListerWatcher tells its Server.
type observations struct {
	mu  sync.Mutex
	got []capability.Support
}

func (o *observations) Capabilities(context.Context) capability.Capabilities {
	return capability.Capabilities{}
}
func (o *observations) Observe(ob capability.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ob.Capability == shard.Capability {
		o.got = append(o.got, ob.Support)
	}
}

func (o *observations) list() []capability.Support {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

// stream opens a streaming list on lw, feeds it objs and the
// initial-events-end bookmark, and drains it until that bookmark.
func stream(t *testing.T, srv *fakeServer, lw *shard.ListerWatcher, objs ...corev1.ConfigMap) {
	t.Helper()
	srv.mu.Lock()
	srv.w = watch.NewFakeWithChanSize(len(objs)+1, false)
	fw := srv.w
	srv.mu.Unlock()
	yes := true
	// The channel of the next completed list, taken before the stream can
	// end: taken after the end bookmark was sent, it could already be the
	// channel of the list after this one (seen under load).
	_, next := lw.Listed()
	w, err := lw.Watch(metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range objs {
		fw.Add(&objs[i])
	}
	fw.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "6", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	for ev := range w.ResultChan() {
		if ev.Type == watch.Bookmark {
			break
		}
	}
	select {
	case <-next:
	case <-time.After(10 * time.Second):
		t.Fatal("the streaming list never counted as listed")
	}
}

// A stream never decides that the server filters, and a request that
// carried no shardSelector (a replica holding no slice yet) decides nothing:
// only a list's shardInfo, or an event outside the range of a request that
// carried the selector, changes the belief. Otherwise a replica that started
// with no slice on a server that filters stayed in client mode for good.
func TestWrapModeIsDecidedOnlyByEvidence(t *testing.T) {
	srv := newFakeServer(60, true)
	obs := &observations{}
	nothing, _ := shard.SelectorOf(shard.FieldUID, nil, 24)
	var mu sync.Mutex
	sel := nothing
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { mu.Lock(); defer mu.Unlock(); return sel }, Server: obs})
	in, out := oneInOneOut()

	// No slice yet: the stream carries no shardSelector and the server sends
	// everything; the client drops it all, which proves nothing.
	stream(t, srv, lw, in, out)
	if m := lw.Mode(); m != "" || len(obs.list()) != 0 {
		t.Fatalf("after a stream sent without a shardSelector: mode %q, observed %v; want no belief", m, obs.list())
	}
	if _, err := lw.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := lw.Mode(); m != "" || len(obs.list()) != 0 {
		t.Fatalf("after a list sent without a shardSelector: mode %q, observed %v; want no belief", m, obs.list())
	}

	// A slice: a stream of the range, filtered by the server, proves nothing
	// about the server either.
	mu.Lock()
	sel = lowHalf
	mu.Unlock()
	lw.RangeChanged()
	stream(t, srv, lw, in)
	if m := lw.Mode(); m != "" || len(obs.list()) != 0 {
		t.Fatalf("after a stream with only in-range events: mode %q, observed %v; want no belief", m, obs.list())
	}
	// A list answer's shardInfo does.
	if _, err := lw.List(metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if m, o := lw.Mode(), obs.list(); m != shard.ModeServer || !slices.Equal(o, []capability.Support{capability.Yes}) {
		t.Fatalf("after a list whose shardInfo echoed the selector: mode %q, observed %v", m, o)
	}
	stream(t, srv, lw, in)
	if m := lw.Mode(); m != shard.ModeServer {
		t.Fatalf("a stream with only in-range events changed the mode to %q", m)
	}
	// An event outside the range of a request that carried the selector
	// proves the server does not filter.
	stream(t, srv, lw, in, out)
	if m, o := lw.Mode(), obs.list(); m != shard.ModeClient || !slices.Equal(o, []capability.Support{capability.Yes, capability.No}) {
		t.Fatalf("after a stream with an event outside the range sent: mode %q, observed %v", m, o)
	}
}

// nextObject returns the next object event of w, skipping bookmarks.
func nextObject(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			if ev.Type != watch.Bookmark {
				return ev
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
	}
}

// Under the drop-in ListerWatcher the range is the watch pipeline's Filter
// stage: shard.Wrap's own watch forwards every event, and the pipeline drops
// those outside the range (counted once, the mode updated).
func TestWrapUnderTheDropInListerWatcherFiltersInThePipeline(t *testing.T) {
	srv := newFakeServer(60, false)
	rec := &testfake.Recorder{}
	slw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }, Metrics: rec})
	dl := lister.Wrap(slw, lister.Options{Name: "test", StallTimeout: -1})
	if _, err := dl.List(metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	w, err := dl.Watch(metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in, out := oneInOneOut()
	in.ResourceVersion, out.ResourceVersion = "7", "6"
	srv.w.Add(&out)
	srv.w.Add(&in)
	if ev := nextObject(t, w); ev.Object.(*corev1.ConfigMap).Name != in.Name {
		t.Fatalf("first event delivered is %s %s, want %s (the one outside the range dropped)", ev.Type, ev.Object.(*corev1.ConfigMap).Name, in.Name)
	}
	if n := rec.Count(testfake.Fallback, "shard-event-outside-range"); n != 1 || slw.Mode() != shard.ModeClient {
		t.Fatalf("outside-range fallbacks %d (want 1), mode %q", n, slw.Mode())
	}

	forwardsEverything(t, srv, slw)
}

// forwardsEverything checks that slw's own watches no longer filter: a
// watch pipeline runs the range as its Filter stage.
func forwardsEverything(t *testing.T, srv *fakeServer, slw *shard.ListerWatcher) {
	t.Helper()
	srv.mu.Lock()
	srv.w = watch.NewFakeWithChanSize(2, false)
	fw := srv.w
	srv.mu.Unlock()
	raw, err := slw.Watch(metav1.ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Stop()
	_, out := oneInOneOut()
	fw.Add(&out)
	if ev := nextObject(t, raw); ev.Object.(*corev1.ConfigMap).Name != out.Name {
		t.Fatalf("shard.Wrap's watch under a pipeline delivered %s, want %s forwarded", ev.Object.(*corev1.ConfigMap).Name, out.Name)
	}
}

// Under reflector.New (through lister.FromListerWatcher) too: the store
// holds exactly the range, from the list and from the watch.
func TestWrapUnderReflectorNewFiltersInThePipeline(t *testing.T) {
	srv := newFakeServer(60, false)
	rec := &testfake.Recorder{}
	slw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }, Metrics: rec})
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := reflector.New(lister.FromListerWatcher(slw), &corev1.ConfigMap{}, store, reflector.Options{
		Lister: lister.Options{Name: "test", StallTimeout: -1, DisableStreamingList: true},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Two objects created after the list: one in the range, one outside.
	var in2, out2 corev1.ConfigMap
	for i := 60; in2.Name == "" || out2.Name == ""; i++ {
		c := numberedCM(i)
		if ok, _ := lowHalf.Matches(&c); ok {
			in2 = c
		} else {
			out2 = c
		}
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for ; ; <-tick.C {
		srv.mu.Lock()
		watching := len(srv.sent) > 0 && srv.sent[len(srv.sent)-1] == "watch:"+lowHalf.String()
		srv.mu.Unlock()
		if watching {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reflector opened no watch within 10s")
		}
	}
	out2.ResourceVersion, in2.ResourceVersion = "6", "7"
	srv.w.Add(&out2)
	srv.w.Add(&in2)
	for ; len(store.ListKeys()) != inLowHalf(60)+1; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d objects, want %d", len(store.ListKeys()), inLowHalf(60)+1)
		}
	}
	for _, o := range store.List() {
		if ok, _ := lowHalf.Matches(o.(*corev1.ConfigMap)); !ok {
			t.Fatalf("%s held outside the range", o.(*corev1.ConfigMap).Name)
		}
	}
	if n := rec.Count(testfake.Fallback, "shard-event-outside-range"); n != 1 {
		t.Fatalf("outside-range fallbacks %d, want 1", n)
	}
	forwardsEverything(t, srv, slw)
}

// The Filter stage runs on every event: it must not allocate.
func TestPipelineFilterDoesNotAllocate(t *testing.T) {
	srv := newFakeServer(0, false)
	slw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }})
	f := slw.PipelineFilter()
	if _, err := slw.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := slw.Watch(metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in, _ := oneInOneOut()
	if n := testing.AllocsPerRun(100, func() { f.Keep(&in) }); n != 0 {
		t.Fatalf("Keep allocates %v times per event", n)
	}
}

// Only a list a cache can be filled from counts as listed: not the limit=1
// list sent beside a streaming list to count its objects, nor a page with a
// continue token. Otherwise WaitCovers let a new owner act before its cache
// held the range.
func TestOnlyACompleteListCountsAsListed(t *testing.T) {
	srv := newFakeServer(10, true)
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }})
	if _, err := lw.List(metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := lw.Listed(); !got.Empty() || lw.Mode() != shard.ModeServer {
		t.Fatalf("after a limit=1 list: listed %q (want nothing yet), mode %q (want server: its shardInfo is evidence)", got.String(), lw.Mode())
	}
	if _, err := lw.List(metav1.ListOptions{Limit: 500}); err != nil {
		t.Fatal(err)
	}
	if got, _ := lw.Listed(); !got.Equal(lowHalf) {
		t.Fatalf("after a complete list: listed %q", got.String())
	}
}

// Before the first list the cache holds nothing, whatever the range.
func TestWaitCoversWaitsForTheFirstList(t *testing.T) {
	srv := newFakeServer(10, true)
	lw := shard.Wrap(srv.lw(), shard.WrapOptions{Selector: func() shard.Selector { return lowHalf }})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := shard.WaitCovers(ctx, lw, lowHalf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitCovers before any list: %v, want it to wait", err)
	}
	done := make(chan error, 1)
	go func() { done <- shard.WaitCovers(context.Background(), lw, lowHalf) }()
	if _, err := lw.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitCovers after the list: %v", err)
	}
}
