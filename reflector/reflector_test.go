package reflector

// Unit tests of the state machine's transitions against a scripted fake
// Client. They prove the decision logic only; the behaviour against real
// apiservers is proven in e2e/reflector.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ---- fakes ----

// fakeClient is the shared scripted fake (testfake.Client): the n-th list
// is answered by ListFn, the n-th watch by WatchFn or, when it is nil, by a
// watch.RaceFreeFakeWatcher the test gets from watcherOf.
type fakeClient = testfake.Client

// watcherOf returns the i-th watch fc opened without its WatchFn.
func watcherOf(t *testing.T, fc *fakeClient, i int) *watch.RaceFreeFakeWatcher {
	t.Helper()
	w, ok := fc.Watcher(i, 5*time.Second)
	if !ok {
		t.Fatalf("timed out waiting for: watch #%d opened", i)
	}
	return w
}

// ---- helpers ----

// transitionedFor reports whether rec saw a transition made for reason.
func transitionedFor(rec *testfake.Recorder, reason string) bool {
	return slices.ContainsFunc(rec.Labels(testfake.Transition), func(s string) bool { return strings.HasSuffix(s, ": "+reason) })
}

func cmList(rv string, items ...*corev1.ConfigMap) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, it := range items {
		l.Items = append(l.Items, *it)
	}
	return l
}

func bookmark(rv string, initialEnd bool) *corev1.ConfigMap {
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if initialEnd {
		o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return o
}

// fastOptions keeps backoffs short so tests run in milliseconds.
// fastOptions: short backoffs, and MostRecent lists paginated from the
// first attempt (PaginateLists), so a test of the relist logic sees one
// list request per list; the default (served from the watch cache after a
// limit=1 probe) has tests of its own (TestInitialListFromWatchCache...).
func fastOptions(rec *testfake.Recorder) Options {
	return knobs.WithReflector(Options{Lister: lister.Options{Name: "test", Metrics: rec}, PaginateLists: true}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
}

// run starts r and returns a stop function that cancels it and waits for Run to return.
// Every transition it makes is checked against the decision table
// (watchRows).
func run(t *testing.T, r *Reflector) (stop func()) {
	t.Helper()
	watchRows(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return within 5s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// cmServer is the steadywatchtest apiserver of ConfigMaps that tests needing
// real resourceVersion semantics run against.
type cmServer = steadywatchtest.Server[*corev1.ConfigMap]

// newServer returns a server with faults f holding objs, each written at
// its resourceVersion, the store then at resourceVersion rv; its watches end
// at cleanup.
func newServer(t *testing.T, f steadywatchtest.Faults, rv string, objs ...*corev1.ConfigMap) *cmServer {
	t.Helper()
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{Faults: f})
	t.Cleanup(srv.Close)
	for _, o := range objs {
		writeAt(t, srv, o)
	}
	advanceTo(t, srv, rv)
	return srv
}

// advanceTo moves the server's resourceVersion on to rv.
func advanceTo(t *testing.T, srv *cmServer, rv string) {
	t.Helper()
	want, _ := strconv.ParseUint(rv, 10, 64)
	now, _ := strconv.ParseUint(srv.ResourceVersion(), 10, 64)
	if want < now {
		t.Fatalf("server at %d, past %d", now, want)
	}
	srv.Advance(want - now)
}

// writeAt creates or replaces obj so that it is stored at its resourceVersion.
func writeAt(t *testing.T, srv *cmServer, obj *corev1.ConfigMap) {
	t.Helper()
	n, _ := strconv.ParseUint(obj.ResourceVersion, 10, 64)
	advanceTo(t, srv, strconv.FormatUint(n-1, 10))
	obj = obj.DeepCopy()
	obj.ResourceVersion = ""
	if got, err := srv.Apply(obj); err != nil || got.ResourceVersion != strconv.FormatUint(n, 10) {
		t.Fatalf("write %s at %d: %v", obj.Name, n, err)
	}
}

// watchRequest waits for the server's i-th watch request and returns it.
func watchRequest(t *testing.T, srv *cmServer, i int) steadywatchtest.Request {
	t.Helper()
	var got []steadywatchtest.Request
	testfake.WaitFor(t, "watch #"+fmt.Sprint(i)+" opened", func() bool {
		got = requestsOf(srv, "watch")
		return len(got) > i
	})
	return got[i]
}

// requestsOf returns the server's requests of verb, in order.
func requestsOf(srv *cmServer, verb string) []steadywatchtest.Request {
	var out []steadywatchtest.Request
	for _, r := range srv.Requests() {
		if r.Verb == verb {
			out = append(out, r)
		}
	}
	return out
}

// emptyAt answers every list with an empty list at resourceVersion rv.
func emptyAt(rv string) func(int, metav1.ListOptions) (runtime.Object, error) {
	return func(int, metav1.ListOptions) (runtime.Object, error) { return cmList(rv), nil }
}

// startWatching runs newR over fc into store and returns it with its first watch.
func startWatching(t *testing.T, fc *fakeClient, store cache.ReflectorStore, o Options) (*Reflector, *watch.RaceFreeFakeWatcher) {
	t.Helper()
	r := newR(fc, &corev1.ConfigMap{}, store, o)
	run(t, r)
	return r, watcherOf(t, fc, 0)
}

// stallWatch starts a reflector with StallTimeout stall over a fakeClient
// listing at resourceVersion 10 and returns them with its first watch.
func stallWatch(t *testing.T, stall time.Duration) (*fakeClient, *testfake.Recorder, *Reflector, *watch.RaceFreeFakeWatcher) {
	t.Helper()
	fc := &fakeClient{ListFn: emptyAt("10")}
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	o.Lister.StallTimeout = stall
	r, w := startWatching(t, fc, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	return fc, rec, r, w
}

// relistAfterGone runs newR over fc into store, answers its first watch
// with 410 Gone, waits for the watch after the relist and returns the
// reflector with fc's lists so far.
func relistAfterGone(t *testing.T, fc *fakeClient, store cache.ReflectorStore) (*Reflector, []metav1.ListOptions) {
	t.Helper()
	r := newR(fc, &corev1.ConfigMap{}, store, fastOptions(&testfake.Recorder{}))
	run(t, r)
	watcherOf(t, fc, 0).Error(&testfake.Gone().ErrStatus)
	watcherOf(t, fc, 1)
	return r, fc.Lists()
}

// consistencyAt15 runs newR over fc with o, moves it to resourceVersion 15
// with a bookmark and returns its first consistency report.
func consistencyAt15(t *testing.T, fc *fakeClient, o Options) ConsistencyReport {
	t.Helper()
	r, w := startWatching(t, fc, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	w.Action(watch.Bookmark, bookmark("15", false))
	var rep ConsistencyReport
	testfake.WaitFor(t, "a consistency report", func() bool { var ok bool; rep, ok = r.LastConsistencyCheck(); return ok })
	return rep
}

func storeKeys(s cache.Store) []string { k := s.ListKeys(); slices.Sort(k); return k }

// ---- tests ----

func TestInitialListIsMostRecentPaginatedThenWatchFromListRV(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{}, "10", testfake.ConfigMap("a", "5"), testfake.ConfigMap("b", "7"))
	rec := &testfake.Recorder{}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := newR(srv, &corev1.ConfigMap{}, store, fastOptions(rec))
	run(t, r)

	wo := watchRequest(t, srv, 0).Options
	l := requestsOf(srv, "list")[0].Options
	if l.ResourceVersion != "" || l.Limit != documentedPageSize || l.ResourceVersionMatch != "" {
		t.Fatalf("initial list options = %+v; want MostRecent (RV \"\") with limit %d", l, documentedPageSize)
	}
	if wo.ResourceVersion != "10" || !wo.AllowWatchBookmarks || wo.TimeoutSeconds == nil ||
		*wo.TimeoutSeconds < 300 || *wo.TimeoutSeconds > 600 || wo.SendInitialEvents != nil {
		t.Fatalf("watch options = %+v; want RV 10, bookmarks, timeout in [300,600]s, no sendInitialEvents", wo)
	}
	if got := storeKeys(store); !slices.Equal(got, []string{"ns/a", "ns/b"}) || !r.HasSynced() {
		t.Fatalf("store = %v synced=%v; want [ns/a ns/b] synced", got, r.HasSynced())
	}
	writeAt(t, srv, testfake.ConfigMap("a", "11"))
	testfake.WaitFor(t, "RV 11 after MODIFIED", func() bool { return r.LastSyncResourceVersion() == "11" })
	if err := srv.Delete("ns", "b"); err != nil || srv.ResourceVersion() != "12" {
		t.Fatalf("delete b at %s: %v", srv.ResourceVersion(), err)
	}
	advanceTo(t, srv, "15")
	srv.Bookmark()
	testfake.WaitFor(t, "RV 15 after BOOKMARK", func() bool { return r.LastSyncResourceVersion() == "15" })
	if got := storeKeys(store); !slices.Equal(got, []string{"ns/a"}) {
		t.Fatalf("store after delete = %v", got)
	}
	if s := r.State(); s.Phase != PhaseWatching || s.Items != 1 {
		t.Fatalf("State() = %+v; want Watching with 1 item", s)
	}
	if got := rec.Labels(testfake.Transition); !slices.Equal(got[:3], []string{
		"Stopped->InitialList: start", "InitialList->StartingWatch: listed", "StartingWatch->Watching: watch-opened"}) {
		t.Fatalf("transitions = %v", got)
	}
}

func TestAnyInitialSemanticIsOptIn(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{}, "10")
	o := fastOptions(&testfake.Recorder{})
	o.InitialListSemantic = fallback.Any
	r := newR(srv, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	watchRequest(t, srv, 0)
	if l := requestsOf(srv, "list")[0].Options; l.ResourceVersion != "0" {
		t.Fatalf("initial list RV = %q; want \"0\" (Any)", l.ResourceVersion)
	}
}

// watchGoneTwice runs a reflector (fastOptions, reporting to rec; its lists
// sent by the lister when throughLister, else straight to the client, see
// newR) whose watch from a bookmark at 15 ends with a 410 and whose relist
// NotOlderThan(15) is answered 410 too; it returns the client once the
// watch after the MostRecent relist (at 30) is open, with its three lists:
// the initial one, NotOlderThan(15) and MostRecent.
func watchGoneTwice(t *testing.T, rec *testfake.Recorder, throughLister bool) *fakeClient {
	t.Helper()
	fc := &fakeClient{ListFn: testfake.Answers(
		testfake.Returns(cmList("10", testfake.ConfigMap("a", "5")), nil),
		testfake.Returns(nil, testfake.Gone()), // NotOlderThan(15) is unavailable too
		testfake.Returns(cmList("30", testfake.ConfigMap("a", "25")), nil),
	)}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	newReflector := newR
	if throughLister {
		newReflector = New
	}
	r := newReflector(fc, &corev1.ConfigMap{}, store, fastOptions(rec))
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Action(watch.Bookmark, bookmark("15", false))
	testfake.WaitFor(t, "RV 15", func() bool { return r.LastSyncResourceVersion() == "15" })
	w.Error(&testfake.Gone().ErrStatus)
	watcherOf(t, fc, 1)
	if lists := fc.Lists(); len(lists) != 3 {
		t.Fatalf("lists = %+v; want 3 (initial, NotOlderThan(15), MostRecent)", lists)
	}
	return fc
}

func TestWatchGoneRelistsNotOlderThanThenMostRecent(t *testing.T) {
	rec := &testfake.Recorder{}
	fc := watchGoneTwice(t, rec, false)
	lists := fc.Lists()
	if lists[1].ResourceVersion != "15" || lists[1].Limit != 0 {
		t.Fatalf("first relist = %+v; want NotOlderThan(15) unpaginated (watch cache)", lists[1])
	}
	if lists[2].ResourceVersion != "" {
		t.Fatalf("second relist = %+v; want MostRecent (RV \"\")", lists[2])
	}
	if got := fc.Watches()[1].ResourceVersion; got != "30" {
		t.Fatalf("watch after relist from %q; want 30", got)
	}
	if got := rec.Labels(testfake.Relist); !slices.Equal(got, []string{"watch-gone"}) {
		t.Fatalf("relists = %v; want one watch-gone relist (the MostRecent retry is the same relist)", got)
	}
}

func TestStaleListIsNeverApplied(t *testing.T) {
	fc := &fakeClient{ListFn: testfake.Answers(
		testfake.Returns(cmList("20", testfake.ConfigMap("a", "20")), nil),
		testfake.Returns(cmList("12", testfake.ConfigMap("old", "11")), nil), // a lagging server, older than the store
		testfake.Returns(cmList("25", testfake.ConfigMap("a", "20"), testfake.ConfigMap("b", "24")), nil),
	)}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, lists := relistAfterGone(t, fc, store)
	if len(lists) != 3 || lists[1].ResourceVersion != "20" || lists[2].ResourceVersion != "20" {
		t.Fatalf("lists = %+v; want initial, NotOlderThan(20) (served 12: rejected), NotOlderThan(20) again", lists)
	}
	if got := storeKeys(store); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Fatalf("store = %v; the stale list (ns/old) must never have replaced it", got)
	}
	if rv := r.LastSyncResourceVersion(); rv != "25" {
		t.Fatalf("RV = %q; want 25", rv)
	}
}

func TestTooLargeHonoursRetryAfterThenMostRecent(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		switch n {
		case 0:
			return cmList("10"), nil
		case 1:
			return nil, testfake.TooLarge(1)
		default:
			return cmList("40"), nil
		}
	}}
	_, lists := relistAfterGone(t, fc, cache.NewStore(cache.MetaNamespaceKeyFunc))
	if len(lists) != 3 || lists[1].ResourceVersion != "10" || lists[2].ResourceVersion != "" {
		t.Fatalf("lists = %+v; want initial, NotOlderThan(10) -> too large, MostRecent", lists)
	}
	mu.Lock()
	waited := at[2].Sub(at[1])
	mu.Unlock()
	if waited < 950*time.Millisecond {
		t.Fatalf("waited %v between the too-large answer and the next list; want the server's Retry-After (1s)", waited)
	}
}

func TestWatchTooLargeRetriesWatchWithoutRelist(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("10")}
	fc.WatchFn = func(n int, o metav1.ListOptions) (watch.Interface, error) {
		if n == 0 {
			return nil, testfake.TooLarge(0)
		}
		return fc.OpenWatch(), nil
	}
	rec := &testfake.Recorder{}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(rec))
	run(t, r)
	watcherOf(t, fc, 0)
	if ws := fc.Watches(); len(ws) != 2 || ws[1].ResourceVersion != "10" {
		t.Fatalf("watches = %+v; want a second watch from 10", ws)
	}
	if n := len(fc.Lists()); n != 1 {
		t.Fatalf("lists = %d; a too-large watch must not relist at once", n)
	}
}

func TestNormalCloseResumesFromLastRVWithoutRelist(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{}, "10")
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	o.knobs.ShortWatch = time.Nanosecond
	r := newR(srv, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	watchRequest(t, srv, 0)
	writeAt(t, srv, testfake.ConfigMap("x", "12"))
	srv.Close() // the server closed the watch (timeout)
	if got := watchRequest(t, srv, 1).Options.ResourceVersion; got != "12" {
		t.Fatalf("second watch from %q; want 12 (last event)", got)
	}
	if n := srv.Count("list"); n != 1 {
		t.Fatalf("lists = %d; want 1 (a normal close never relists)", n)
	}
	if got := rec.Labels(testfake.WatchRestart); !slices.Equal(got, []string{"watch-closed"}) {
		t.Fatalf("watch restarts = %v", got)
	}
}

func TestShortWatchBacksOffBeforeRestart(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("10")}
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	o.knobs.Backoff = policy.Backoff{Initial: 200 * time.Millisecond, Max: 200 * time.Millisecond}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	watcherOf(t, fc, 0).Stop() // closed at once, no event
	start := time.Now()
	watcherOf(t, fc, 1)
	if d := time.Since(start); d < 90*time.Millisecond { // 200ms with jitter factor 0.5 => >= 100ms
		t.Fatalf("restarted a short-lived watch after %v; want a backoff", d)
	}
	if got := rec.Labels(testfake.WatchRestart); len(got) == 0 || got[0] != "short-watch" {
		t.Fatalf("watch restarts = %v; want short-watch", got)
	}
}

func TestStalledWatchIsRestartedWithoutRelist(t *testing.T) {
	fc, rec, _, w := stallWatch(t, 100*time.Millisecond)
	w.Action(watch.Bookmark, bookmark("11", false))
	watcherOf(t, fc, 1) // nothing more arrives: stalled
	if got := fc.Watches()[1].ResourceVersion; got != "11" {
		t.Fatalf("restart from %q; want 11", got)
	}
	if !w.IsStopped() {
		t.Fatal("the stalled watch was not stopped")
	}
	if n := len(fc.Lists()); n != 1 {
		t.Fatalf("lists = %d; a stall must not relist", n)
	}
	if got := rec.Labels(testfake.WatchRestart); len(got) == 0 || got[0] != "stalled" {
		t.Fatalf("watch restarts = %v; want stalled", got)
	}
}

func TestSyntheticAddedEventsDoNotAdvanceRV(t *testing.T) {
	// A list without a resourceVersion makes the watch start at "": the
	// server replays synthetic ADDED events in no RV order.
	fc := &fakeClient{ListFn: emptyAt("")}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, w := startWatching(t, fc, store, fastOptions(&testfake.Recorder{}))
	w.Add(testfake.ConfigMap("b", "50"))
	w.Add(testfake.ConfigMap("a", "30"))
	testfake.WaitFor(t, "2 items", func() bool { return len(store.ListKeys()) == 2 })
	if rv := r.LastSyncResourceVersion(); rv != "" {
		t.Fatalf("RV = %q after synthetic ADDED events; want unchanged", rv)
	}
	w.Modify(testfake.ConfigMap("a", "60"))
	testfake.WaitFor(t, "RV 60", func() bool { return r.LastSyncResourceVersion() == "60" })
}

type fakeServer struct {
	mu   sync.Mutex
	caps capability.Capabilities
	obs  []capability.Observation
}

func (s *fakeServer) Capabilities(context.Context) capability.Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *fakeServer) Observe(o capability.Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs = append(s.obs, o)
	s.caps.Support[o.Capability] = o.Support
}

func streamingServer() *fakeServer {
	return &fakeServer{caps: capability.Capabilities{Support: map[capability.Capability]capability.Support{
		capability.StreamingList: capability.Yes, capability.ResourceVersionMatch: capability.Yes}}}
}

func TestStreamingListWhereSupported(t *testing.T) {
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) {
		return nil, fmt.Errorf("no list expected")
	}}
	srv := streamingServer()
	o := fastOptions(&testfake.Recorder{})
	o.Lister.Server = srv
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, w := startWatching(t, fc, store, o)
	wo := fc.Watches()[0]
	if wo.SendInitialEvents == nil || !*wo.SendInitialEvents || wo.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan ||
		wo.ResourceVersion != "" || !wo.AllowWatchBookmarks {
		t.Fatalf("streaming watch options = %+v", wo)
	}
	w.Add(testfake.ConfigMap("a", "31"))
	w.Add(testfake.ConfigMap("b", "29"))
	if r.HasSynced() {
		t.Fatal("synced before the initial-events-end bookmark")
	}
	w.Action(watch.Bookmark, bookmark("40", true))
	testfake.WaitFor(t, "synced at 40", func() bool { return r.HasSynced() && r.LastSyncResourceVersion() == "40" })
	w.Modify(testfake.ConfigMap("a", "41")) // the same watch goes on
	testfake.WaitFor(t, "RV 41", func() bool { return r.LastSyncResourceVersion() == "41" })
	lists := 0
	for _, o := range fc.Lists() {
		if o.Limit != 1 { // limit=1: the guard's count of the initial events
			lists++
		}
	}
	if n := len(fc.Watches()); n != 1 || lists != 0 {
		t.Fatalf("watches=%d lists=%d; want the streaming watch reused and no list", n, lists)
	}
	if got := storeKeys(store); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Fatalf("store = %v", got)
	}
}

func TestStreamingListIgnoredBySilentServerFallsBackToList(t *testing.T) {
	// v1.18 ignores sendInitialEvents: ADDED events, then silence, never the end bookmark.
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) {
		return cmList("20", testfake.ConfigMap("a", "5")), nil
	}}
	srv := streamingServer()
	o := fastOptions(&testfake.Recorder{})
	o.Lister.Server = srv
	o.Lister.InitialEventsTimeout = 150 * time.Millisecond
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := newR(fc, &corev1.ConfigMap{}, store, o)
	start := time.Now()
	run(t, r)
	w := watcherOf(t, fc, 0)
	w.Add(testfake.ConfigMap("a", "5"))
	testfake.WaitFor(t, "synced by a list", r.HasSynced)
	took := time.Since(start)
	if took > 2*time.Second {
		t.Fatalf("sync took %v; want about InitialEventsTimeout", took)
	}
	if !w.IsStopped() {
		t.Fatal("the ignored streaming watch was not stopped")
	}
	srv.mu.Lock()
	obs := slices.Clone(srv.obs)
	srv.mu.Unlock()
	if len(obs) != 1 || obs[0].Capability != capability.StreamingList || obs[0].Support != capability.No {
		t.Fatalf("observations = %+v; want StreamingList=No", obs)
	}
	watcherOf(t, fc, 1)
	if wo := fc.Watches()[1]; wo.SendInitialEvents != nil || wo.ResourceVersion != "20" {
		t.Fatalf("watch after fallback = %+v; want a plain watch from 20", wo)
	}
}

func TestStreamingListPlainBookmarkMeansIgnored(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("20")}
	o := fastOptions(&testfake.Recorder{})
	o.Lister.Server = streamingServer()
	o.Lister.InitialEventsTimeout = time.Hour // detection must not depend on the timeout
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	watcherOf(t, fc, 0).Action(watch.Bookmark, bookmark("19", false))
	testfake.WaitFor(t, "synced by a list", r.HasSynced)
}

type bookmarkStore struct {
	cache.Store
	mu        sync.Mutex
	bookmarks []string
	updates   []string
}

func (b *bookmarkStore) Bookmark(rv string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bookmarks = append(b.bookmarks, rv)
	return nil
}

func (b *bookmarkStore) UpdateResourceVersion(rv string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.updates = append(b.updates, rv)
}

func TestBookmarksReachBookmarkStoreAndRVUpdater(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{}, "10")
	rec := &testfake.Recorder{}
	store := &bookmarkStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	r := newR(srv, &corev1.ConfigMap{}, store, fastOptions(rec))
	run(t, r)
	watchRequest(t, srv, 0)
	for _, rv := range []string{"13", "17"} {
		advanceTo(t, srv, rv)
		srv.Bookmark()
	}
	testfake.WaitFor(t, "RV 17", func() bool { return r.LastSyncResourceVersion() == "17" })
	store.mu.Lock()
	defer store.mu.Unlock()
	if !slices.Equal(store.bookmarks, []string{"13", "17"}) || !slices.Equal(store.updates, []string{"10", "13", "17"}) {
		t.Fatalf("bookmarks=%v updates=%v", store.bookmarks, store.updates)
	}
	if n := len(rec.Labels(testfake.Bookmark)); n != 2 {
		t.Fatalf("bookmark metric = %d; want 2", n)
	}
}

func TestFeedsDeltaFIFO(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{}, "10", testfake.ConfigMap("a", "5"))
	known := cache.NewStore(cache.MetaNamespaceKeyFunc)
	fifo := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, KnownObjects: known, EmitDeltaTypeReplaced: true})
	r := newR(srv, &corev1.ConfigMap{}, fifo, fastOptions(&testfake.Recorder{}))
	run(t, r)
	watchRequest(t, srv, 0)
	writeAt(t, srv, testfake.ConfigMap("b", "11"))
	var got []string
	for len(got) < 2 {
		_, err := fifo.Pop(func(obj any, _ bool) error {
			for _, d := range obj.(cache.Deltas) {
				got = append(got, string(d.Type)+":"+d.Object.(*corev1.ConfigMap).Name)
				_ = known.Add(d.Object)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"Replaced:a", "Added:b"}) || !fifo.HasSynced() {
		t.Fatalf("deltas = %v synced=%v", got, fifo.HasSynced())
	}
	fifo.Close()
}

func TestConsistencyCheckReportsDifferingKeys(t *testing.T) {
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		if o.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			if o.ResourceVersion != "15" {
				return nil, fmt.Errorf("exact list at %q, want 15", o.ResourceVersion)
			}
			return cmList("15", testfake.ConfigMap("a", "5"), testfake.ConfigMap("c", "14"), testfake.ConfigMap("d", "9")), nil
		}
		return cmList("10", testfake.ConfigMap("a", "5"), testfake.ConfigMap("b", "7"), testfake.ConfigMap("d", "8")), nil
	}}
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	o.Lister.Server = &fakeServer{caps: capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.ResourceVersionMatch: capability.Yes}}}
	o.ConsistencyCheckInterval = time.Millisecond
	rep := consistencyAt15(t, fc, o)
	if rep.Result() != "mismatch" || !slices.Equal(rep.Missing, []string{"ns/c"}) ||
		!slices.Equal(rep.Extra, []string{"ns/b"}) || !slices.Equal(rep.Differ, []string{"ns/d"}) || rep.ResourceVersion != "15" {
		t.Fatalf("report = %+v", rep)
	}
	// The check's goroutine counts it just after publishing the report.
	testfake.WaitFor(t, "the consistency metric", func() bool { return len(rec.Labels(testfake.ConsistencyCheck)) > 0 })
	if got := rec.Labels(testfake.ConsistencyCheck); !slices.Equal(got, []string{"mismatch"}) {
		t.Fatalf("consistency metric = %v", got)
	}
}

func TestConsistencyCheckNotExactIsAnErrorNotAMismatch(t *testing.T) {
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		if o.ResourceVersion == "15" { // a legacy server ignoring Exact serves the newest state
			return cmList("18"), nil
		}
		return cmList("10"), nil
	}}
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	o.ConsistencyCheckInterval = time.Millisecond
	rep := consistencyAt15(t, fc, o)
	if rep.Result() != "error" || rep.Err == nil || !strings.Contains(rep.Err.Error(), "served at 18") {
		t.Fatalf("report = %+v; want an error (not exact)", rep)
	}
	// Legacy form: no resourceVersionMatch (Unknown capability), a limit so the server reads it as Exact.
	var exact *metav1.ListOptions
	for _, l := range fc.Lists() {
		if l.ResourceVersion == "15" {
			exact = &l
		}
	}
	if exact == nil || exact.ResourceVersionMatch != "" || exact.Limit == 0 {
		t.Fatalf("exact list options = %+v; want legacy Exact (RV + limit, no match)", exact)
	}
}

func TestRunTwiceIsANoOpAndStopClosesWatch(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("10")}
	r := newR(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
	stop := run(t, r)
	w := watcherOf(t, fc, 0)
	r.Run(context.Background()) // returns at once: already running
	stop()
	if !w.IsStopped() {
		t.Fatal("watch still open after Run returned")
	}
	if s := r.State(); s.Phase != PhaseStopped {
		t.Fatalf("phase after stop = %s", s.Phase)
	}
}

func TestUnexpectedTypeIsIgnored(t *testing.T) {
	fc := &fakeClient{ListFn: emptyAt("10")}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r, w := startWatching(t, fc, store, fastOptions(&testfake.Recorder{}))
	w.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "11"}})
	w.Add(testfake.ConfigMap("a", "12"))
	testfake.WaitFor(t, "RV 12", func() bool { return r.LastSyncResourceVersion() == "12" })
	if got := storeKeys(store); !slices.Equal(got, []string{"ns/a"}) {
		t.Fatalf("store = %v; want only the ConfigMap", got)
	}
}

// newR is New with the minimal built-in executor instead of the lister, so
// these tests see the state machine's own decisions, not the lister's
// fallbacks (which package lister tests).
func newR(c Client, expected runtime.Object, store cache.ReflectorStore, o Options) *Reflector {
	r := New(c, expected, store, o)
	r.list = r.clientList
	return r
}

func TestDefaultExecutorIsTheLister(t *testing.T) {
	srv := newServer(t, steadywatchtest.Faults{}, "10", testfake.ConfigMap("a", "5"))
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := New(srv, &corev1.ConfigMap{}, store, fastOptions(&testfake.Recorder{}))
	run(t, r)
	if got := watchRequest(t, srv, 0).Options.ResourceVersion; got != "10" || !r.HasSynced() || len(store.ListKeys()) != 1 {
		t.Fatalf("watch from %q synced=%v items=%d; want a lister-made sync at 10", got, r.HasSynced(), len(store.ListKeys()))
	}
}

// The pages of the initial list grow (500, 1000, 2000, 4000): 7,500 objects
// take 4 requests instead of 15, which is what keeps a client at client-go's
// default rate limit (5 requests/s after a burst of 10) from waiting on its
// own limiter. MaxPageSize < 0 keeps every page at PageSize.
func TestInitialListPagesGrowToMaxPageSize(t *testing.T) {
	for _, c := range []struct {
		max  int64
		want []int64
	}{
		{0, []int64{500, 1000, 2000, 4000}},
		{-1, slices.Repeat([]int64{500}, 15)},
		{1500, []int64{500, 1000, 1500, 1500, 1500, 1500}},
	} {
		srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
		for i := range 7500 {
			srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i)}})
		}
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		o := fastOptions(&testfake.Recorder{})
		knobs.ListerOf(&o.Lister).MaxPageSize = c.max
		r := New(srv, &corev1.ConfigMap{}, store, o)
		stop := run(t, r)
		testfake.WaitFor(t, "synced", r.HasSynced)
		stop()
		srv.Close()
		var limits []int64
		for _, l := range requestsOf(srv, "list") {
			limits = append(limits, l.Options.Limit)
		}
		if !slices.Equal(limits, c.want) || len(store.ListKeys()) != 7500 {
			t.Errorf("MaxPageSize %d: list limits %v, %d objects; want %v, 7500", c.max, limits, len(store.ListKeys()), c.want)
		}
	}
}

// Pages grow only while they stay within lister.Options.MaxPageBytes: with
// objects of about 2 KiB and 1 MiB allowed, every page after the first asks
// for no more than 1 MiB of them (and never fewer than PageSize).
func TestInitialListPagesGrowWithinMaxPageBytes(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	defer srv.Close()
	data := strings.Repeat("x", 2000)
	for i := range 3000 {
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i)}, Data: map[string]string{"d": data}})
	}
	size := (&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm-00000"}, Data: map[string]string{"d": data}}).Size()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	o := fastOptions(&testfake.Recorder{})
	o.PaginateLists = true
	knobs.ListerOf(&o.Lister).MaxPageBytes = 1 << 20
	r := New(srv, &corev1.ConfigMap{}, store, o)
	stop := run(t, r)
	testfake.WaitFor(t, "synced", r.HasSynced)
	stop()
	var limits []int64
	for _, l := range requestsOf(srv, "list") {
		limits = append(limits, l.Options.Limit)
	}
	within := max(int64(500), int64(1<<20)/int64(size)+1)
	for i, l := range limits {
		if l < 500 || l > within {
			t.Fatalf("page %d asked for %d objects of about %d bytes; want 500..%d (limits %v)", i, l, size, within, limits)
		}
	}
	if len(store.ListKeys()) != 3000 || len(limits) < 4 {
		t.Fatalf("%d objects in %d pages %v", len(store.ListKeys()), len(limits), limits)
	}
}

// By default a MostRecent list is served from the watch cache: without
// knowing the server, a limit=1 MostRecent read gives the current
// resourceVersion and the list is NotOlderThan it, in one response (no
// pages, which would each be read from etcd before v1.34); where the server
// reads consistent lists from its cache (1.31+), one unpaginated MostRecent
// list; where it reads them from etcd (before v1.31), whose watch cache
// can lag, MostRecent in pages. PaginateLists restores pages.
func TestInitialListFromWatchCache(t *testing.T) {
	for _, c := range []struct {
		name string
		o    func(*Options)
		want []string // resourceVersion/limit of each list request
	}{
		{"server unknown", func(*Options) {}, []string{"/1", "7500/0"}},
		{"consistent lists from cache", func(o *Options) {
			o.Lister.Server = capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.ConsistentListFromCache: capability.Yes}})
		}, []string{"/0"}},
		{"PaginateLists", func(o *Options) { o.PaginateLists = true }, []string{"/500", "/1000", "/2000", "/4000"}},
		// Before v1.31 a quiet resource's watch cache can lag the etcd
		// revision others' writes reach: no list at the probe's version.
		{"consistent lists from etcd", func(o *Options) {
			o.Lister.Server = capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.ConsistentListFromCache: capability.No}})
		}, []string{"/500", "/1000", "/2000", "/4000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
			defer srv.Close()
			for i := range 7500 {
				srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i)}})
			}
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			o := knobs.WithReflector(Options{Lister: lister.Options{Name: "test"}}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
			c.o(&o)
			r := New(srv, &corev1.ConfigMap{}, store, o)
			stop := run(t, r)
			testfake.WaitFor(t, "synced", r.HasSynced)
			stop()
			var got []string
			for _, l := range requestsOf(srv, "list") {
				got = append(got, fmt.Sprintf("%s/%d", l.Options.ResourceVersion, l.Options.Limit))
			}
			if !slices.Equal(got, c.want) || len(store.ListKeys()) != 7500 || r.LastSyncResourceVersion() != "7500" {
				t.Errorf("lists %v, %d objects at %q; want %v, 7500 at 7500", got, len(store.ListKeys()), r.LastSyncResourceVersion(), c.want)
			}
		})
	}
}

// The cache behind the probe's resourceVersion (too large, an HA member
// whose cache lags) only delays the list: the lister retries it after the
// server's Retry-After, and the store syncs at what the server serves.
func TestInitialListFromWatchCacheBehind(t *testing.T) {
	fc := &fakeClient{ListFn: func(n int, o metav1.ListOptions) (runtime.Object, error) {
		switch n {
		case 0: // the probe
			return cmList("10", testfake.ConfigMap("a", "5")), nil
		case 1: // NotOlderThan(10): the cache is behind
			return nil, testfake.TooLarge(0)
		}
		return cmList("12", testfake.ConfigMap("a", "5")), nil
	}}
	o := knobs.WithReflector(Options{Lister: lister.Options{Name: "test"}}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	r := New(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	run(t, r)
	testfake.WaitFor(t, "synced", r.HasSynced)
	var got []string
	for _, l := range fc.Lists() {
		got = append(got, fmt.Sprintf("%s/%d", l.ResourceVersion, l.Limit))
	}
	// After the 504, one consistent limit=1 read checks that 10 exists (it
	// does: this member lags), then the list is sent again.
	if want := []string{"/1", "10/0", "/1", "10/0"}; !slices.Equal(got[:min(4, len(got))], want) || r.LastSyncResourceVersion() != "12" {
		t.Fatalf("lists %v at %q; want %v at 12", got, r.LastSyncResourceVersion(), want)
	}
}

// syncedRVRecorder checks, at every metric call (each made on the
// reflector's goroutine, between the steps of a sync), that r never shows
// HasSynced without the resourceVersion the store was synced at.
type syncedRVRecorder struct {
	metricsnop.Nop
	r      *Reflector
	mu     sync.Mutex
	broken []string
}

func (c *syncedRVRecorder) check(call string) {
	if c.r.HasSynced() && c.r.LastSyncResourceVersion() == "" {
		c.mu.Lock()
		c.broken = append(c.broken, call)
		c.mu.Unlock()
	}
}

func (c *syncedRVRecorder) List(string, string, string) { c.check("List") }
func (c *syncedRVRecorder) Items(string, int)           { c.check("Items") }
func (c *syncedRVRecorder) ResourceVersionAdvanced(string, time.Time) {
	c.check("ResourceVersionAdvanced")
}
func (c *syncedRVRecorder) Transition(_, from, to, _ string) {
	c.check("Transition " + from + ">" + to)
}

// A caller that waits for HasSynced (as cache.WaitForCacheSync does) and
// then reads LastSyncResourceVersion gets the synced list's, never "".
func TestHasSyncedOnlyWithTheSyncedResourceVersion(t *testing.T) {
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) {
		return cmList("12", testfake.ConfigMap("a", "5")), nil
	}}
	rec := &syncedRVRecorder{}
	o := fastOptions(nil)
	o.Lister.Metrics = rec
	r := New(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
	rec.r = r
	stop := run(t, r)
	watcherOf(t, fc, 0)
	stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.broken) > 0 || r.LastSyncResourceVersion() != "12" {
		t.Fatalf("synced without a resourceVersion at %v; at the end %q, want 12", rec.broken, r.LastSyncResourceVersion())
	}
}

// A list answered at resourceVersion "0" leaves nothing to resume a watch
// from: a watch from "0" is "get state and start at most recent" (Kubernetes
// API Concepts, "Resource versions") and never deletes an object the store
// holds and the server no longer has. When the watch ends, the reflector
// lists again (after a backoff delay) instead of watching from "0" again.
func TestWatchFromZeroIsNeverResumed(t *testing.T) {
	fc := &fakeClient{ListFn: func(n int, _ metav1.ListOptions) (runtime.Object, error) {
		if n == 0 {
			return cmList("0", testfake.ConfigMap("gone", "1")), nil
		}
		return cmList("7", testfake.ConfigMap("kept", "3")), nil
	}}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rec := &testfake.Recorder{}
	_, w := startWatching(t, fc, store, fastOptions(rec))
	w.Add(testfake.ConfigMap("kept", "3")) // synthetic ADDED: "gone" was deleted meanwhile
	testfake.WaitFor(t, "kept held", func() bool { return len(store.ListKeys()) == 2 })
	w.Stop() // the watch from "0" is cut
	watcherOf(t, fc, 1)
	if n := len(fc.Lists()); n != 2 {
		t.Fatalf("lists = %d; want a relist before the second watch", n)
	}
	if got := fc.Watches()[1].ResourceVersion; got != "7" {
		t.Fatalf("second watch from %q; want 7 (the relist's)", got)
	}
	if got := store.ListKeys(); !slices.Equal(got, []string{"ns/kept"}) {
		t.Fatalf("store holds %v; want [ns/kept]", got)
	}
	if got := rec.Labels(testfake.Relist); !slices.Equal(got, []string{"no-resume-version"}) {
		t.Fatalf("relists = %v; want [%s]", got, "no-resume-version")
	}
}

// Through the default lister, a 410 on the relist NotOlderThan(rv) falls
// back to one MostRecent list at once: no limit=1 read and NotOlderThan
// retry at a newer resourceVersion (rule 1 of KEP-2523 is for paginated
// lists a legacy server answered as Exact; the reflector's lists at a
// resourceVersion are unpaginated unless PaginateLists, as here).
func TestWatchGoneRelistGoneFallsBackToMostRecentThroughLister(t *testing.T) {
	fc := watchGoneTwice(t, &testfake.Recorder{}, true)
	lists := fc.Lists()
	if lists[1].ResourceVersion != "15" {
		t.Fatalf("first relist = %+v; want NotOlderThan(15)", lists[1])
	}
	if lists[2].ResourceVersion != "" || lists[2].Limit != lists[1].Limit {
		t.Fatalf("after its 410: %+v; want one MostRecent list, paginated as the relist was (PaginateLists)", lists[2])
	}
	if got := fc.Watches()[1].ResourceVersion; got != "30" {
		t.Fatalf("watch after relist from %q; want 30", got)
	}
}

// documentedPageSize is lister.Options.PageSize's documented default.
const documentedPageSize int64 = 500

// Selectors set once in Options.Lister reach every request of reflector.New:
// lists, the streaming list, its count and every watch; so only matching
// objects ever enter the store.
func TestReflectorSelectorsReachEveryRequest(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", stream), func(t *testing.T) {
			e := newEnv(t, &probe{})
			o := Options{Lister: lister.Options{LabelSelector: "half=yes", FieldSelector: "metadata.namespace=ns"}}
			if stream {
				o.Lister.Server = streams()
			}
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := New(e.client, &corev1.ConfigMap{}, store, o)
			e.run(r, func() bool { return r.HasSynced() && e.srv.Watches() > 0 }, 5*time.Second)
			reqs := e.srv.Requests()
			if len(reqs) == 0 || !r.HasSynced() {
				t.Fatalf("not synced, %d requests", len(reqs))
			}
			for _, q := range reqs {
				if q.Options.LabelSelector != "half=yes" || q.Options.FieldSelector != "metadata.namespace=ns" {
					t.Errorf("%s %s sent without the selectors: label %q field %q", q.Verb, q.Served, q.Options.LabelSelector, q.Options.FieldSelector)
				}
			}
			if n := len(store.ListKeys()); n != 5 {
				t.Errorf("store holds %d objects, want the 5 that match", n)
			}
		})
	}
}
