package reflector

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// A relist the server answers in one response (no PaginateLists, no
// streaming list) goes to a store it fills object by object as the
// response is decoded (lister.ItemByItem): the store holds the first
// objects before the rest of the body is sent, so the old contents and
// the whole new list are never held at once. These tests run
// reflector.New over lister.FromClientset against a wire server.

// oneResponseServer answers a typed ConfigMap client: the limit=1 probes,
// the first sync (initial), the first watch with 410, then each relist
// from relists (the last one repeated), and later watches by waiting.
type oneResponseServer struct {
	t       *testing.T
	proto   bool
	initial *corev1.ConfigMapList
	relists []relistAnswer
	lists   atomic.Int32
	watches atomic.Int32
	// scopePages: a limit=1 list is the first page of the list at its
	// resourceVersion (or of the current one), as an apiserver answers a
	// scope check, not an empty list.
	scopePages bool
	probes     atomic.Int32 // limit=1 lists at a resourceVersion (scope checks)
}

// relistAnswer is one relist's answer: its body up to the cut before item
// cutAt (0: whole) is sent, then the server waits for release (nil: none),
// then sends the rest, or aborts the response (abort).
type relistAnswer struct {
	list       *corev1.ConfigMapList
	itemsFirst bool
	cutAt      int
	sent       chan struct{} // closed once the first part is sent
	release    chan struct{}
	abort      bool
}

func (s *oneResponseServer) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ct := "application/json"
	if s.proto {
		ct = "application/vnd.kubernetes.protobuf"
	}
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		if s.watches.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGone)
			_ = json.NewEncoder(w).Encode(testfake.Gone().ErrStatus)
			return
		}
		<-r.Context().Done()
		return
	case q.Get("limit") == "1" && s.scopePages && s.firstPage(w, q.Get("resourceVersion"), ct):
		if q.Get("resourceVersion") != "" {
			s.probes.Add(1)
		}
		return
	case q.Get("limit") == "1":
		rv := s.initial.ResourceVersion
		if s.lists.Load() > 0 {
			rv = s.relists[len(s.relists)-1].list.ResourceVersion
		}
		body, _ := testfake.ListBody(s.t, cmList(rv), s.proto, false)
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(body)
		return
	}
	n := int(s.lists.Add(1))
	w.Header().Set("Content-Type", ct)
	if n == 1 {
		body, _ := testfake.ListBody(s.t, s.initial, s.proto, false)
		_, _ = w.Write(body)
		return
	}
	a := s.relists[min(n-2, len(s.relists)-1)]
	body, cuts := testfake.ListBody(s.t, a.list, s.proto, a.itemsFirst)
	cut := len(body)
	if a.cutAt > 0 {
		cut = cuts[a.cutAt]
	}
	_, _ = w.Write(body[:cut])
	w.(http.Flusher).Flush()
	if a.sent != nil {
		close(a.sent)
	}
	if a.abort {
		panic(http.ErrAbortHandler) // the client reads an unexpected EOF
	}
	if a.release != nil {
		select {
		case <-a.release:
		case <-r.Context().Done():
			return
		}
	}
	_, _ = w.Write(body[cut:])
}

// firstPage answers the limit=1 page of the list served at rv ("": the
// current one), if any.
func (s *oneResponseServer) firstPage(w http.ResponseWriter, rv, ct string) bool {
	lists := []*corev1.ConfigMapList{s.initial}
	for _, a := range s.relists {
		lists = append(lists, a.list)
	}
	if rv == "" {
		rv = s.initial.ResourceVersion
		if s.lists.Load() > 0 {
			rv = s.relists[len(s.relists)-1].list.ResourceVersion
		}
	}
	for _, l := range lists {
		if l.ResourceVersion != rv || len(l.Items) == 0 {
			continue
		}
		page := cmList(rv, &l.Items[0])
		if rest := int64(len(l.Items) - 1); rest > 0 {
			page.Continue, page.RemainingItemCount = "next", &rest
		}
		body, _ := testfake.ListBody(s.t, page, s.proto, false)
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(body)
		return true
	}
	return false
}

// appliedStore is a callStore that also reports each Add and Update on a
// channel.
type appliedStore struct {
	*callStore
	applied chan string
}

func newAppliedStore() *appliedStore {
	return &appliedStore{callStore: newCallStore(), applied: make(chan string, 1000)}
}

func (s *appliedStore) Add(obj any) error {
	err := s.callStore.Add(obj)
	s.applied <- s.last()
	return err
}

func (s *appliedStore) Update(obj any) error {
	err := s.callStore.Update(obj)
	s.applied <- s.last()
	return err
}

func (s *appliedStore) last() string { c := s.since(s.count() - 1); return c[0] }

// waitApplied reads the store's applied calls until want arrives.
func (s *appliedStore) waitApplied(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second) // a bound for a failure, not a synchronisation
	for {
		select {
		case c := <-s.applied:
			if c == want {
				return
			}
		case <-timeout:
			t.Fatalf("the store got no %q while the rest of the list's body was held back; calls %q", want, s.since(0))
		}
	}
}

func oneResponseReflector(t *testing.T, s *oneResponseServer, store cacheStore) (*Reflector, *testfake.Recorder) {
	t.Helper()
	c, o, rec := oneResponseClient(t, s)
	r := New(c, &corev1.ConfigMap{}, store, o)
	if r.objects == nil {
		t.Fatal("the store is not filled object by object")
	}
	run(t, r)
	return r, rec
}

// wireConfigMaps is lister.FromClientset's client of ConfigMaps in "ns",
// over the wire to serve.
func wireConfigMaps(t *testing.T, serve http.HandlerFunc) lister.Client {
	t.Helper()
	cfg, _ := testfake.WireServer(t, false, serve)
	cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// oneResponseClient serves s over the wire to a lister.Client of
// ConfigMaps in "ns", with fast options (unpaginated lists, a millisecond
// backoff) that record to the returned recorder.
func oneResponseClient(t *testing.T, s *oneResponseServer) (lister.Client, Options, *testfake.Recorder) {
	t.Helper()
	c := wireConfigMaps(t, s.serve)
	rec := &testfake.Recorder{}
	o := fastOptions(rec)
	o.PaginateLists = false
	knobs.ListerOf(&o.Lister).Policy.Backoff = policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	return c, o, rec
}

type cacheStore interface {
	Add(any) error
	Update(any) error
	Delete(any) error
	List() []any
	ListKeys() []string
	Get(any) (any, bool, error)
	GetByKey(string) (any, bool, error)
	Replace([]any, string) error
	Resync() error
}

var encodings = []struct {
	name  string
	proto bool
}{{"protobuf", true}, {"json", false}}

func TestOneResponseRelistAppliesObjectsAsDecoded(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			relist := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"), testfake.ConfigMap("d", "18")), cutAt: 2,
				sent: make(chan struct{}), release: make(chan struct{})}
			s := &oneResponseServer{t: t, proto: enc.proto, initial: cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")), relists: []relistAnswer{relist}}
			store := newAppliedStore()
			r, _ := oneResponseReflector(t, s, store)
			relistAppliedAsDecoded(t, r, store, relist)
		})
	}
}

// relistAppliedAsDecoded checks the relist of relist (ns/a at 1, ns/b at 15,
// ns/d at 18, served at 20, after an initial list at 10 of ns/a, ns/b and
// ns/c; the server holds back its end after two items): the store holds
// ns/a and ns/b before the rest of the body is written, the reflector
// claims 20 only once the list is complete, and the relist's calls are the
// updates, add and delete of a Replace of the same list.
func relistAppliedAsDecoded(t *testing.T, r *Reflector, store *appliedStore, relist relistAnswer) {
	t.Helper()
	select {
	case <-relist.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("no relist")
	}
	first := slices.Index(store.since(0), "bookmark @10") + 1
	// The server holds back ns/d: ns/a and ns/b must be in the
	// store already.
	store.waitApplied(t, "update ns/b@15")
	if rv := r.LastSyncResourceVersion(); rv != "10" {
		t.Fatalf("midway, LastSyncResourceVersion = %q; want 10", rv)
	}
	close(relist.release)
	testfake.WaitFor(t, "the relist at 20", func() bool { return r.LastSyncResourceVersion() == "20" })
	want := []string{"update ns/a@1", "update ns/b@15", "add ns/d@18", "delete ns/c@3", "bookmark @20"}
	if got := sortTail(store.since(first)); !slices.Equal(got, want) {
		t.Fatalf("relist calls %q; want %q", got, want)
	}
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/d"}) {
		t.Fatalf("store = %v; want the relist's objects", keys)
	}
}

// Items that come before the list's metadata are held until it arrives:
// the list's resourceVersion is checked before any of them is applied. A
// list older than the store (and than the NotOlderThan the relist asks)
// applies nothing: the lister's engine refuses it from its metadata and
// its retry completes the relist, which never sees it (no *StaleListError).
func TestOneResponseRelistItemsBeforeMetadata(t *testing.T) {
	for _, enc := range encodings {
		for _, stale := range []bool{false, true} {
			name := enc.name
			if stale {
				name += "/stale"
			}
			t.Run(name, func(t *testing.T) {
				good := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15")), itemsFirst: true}
				relists := []relistAnswer{good}
				if stale {
					relists = []relistAnswer{{list: cmList("5", testfake.ConfigMap("a", "1"), testfake.ConfigMap("x", "4")), itemsFirst: true}, good}
				}
				s := &oneResponseServer{t: t, proto: enc.proto, initial: cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("c", "3")), relists: relists}
				store := newAppliedStore()
				r, rec := oneResponseReflector(t, s, store)
				testfake.WaitFor(t, "the relist at 20", func() bool { return r.LastSyncResourceVersion() == "20" })
				calls := store.since(0)
				if slices.ContainsFunc(calls, func(c string) bool { return strings.Contains(c, "ns/x") }) {
					t.Fatalf("calls %q: an object of the stale list was applied", calls)
				}
				if transitionedFor(rec, "stale-list") {
					t.Fatalf("transitions %v: the reflector rejected a list; the lister's engine refuses an older answer itself", rec.Labels(testfake.Transition))
				}
				if got := rec.Labels(testfake.Relist); len(got) != 1 {
					t.Fatalf("relists %v; want one (the lister retried the older answer within it)", got)
				}
				if n, want := s.lists.Load(), int32(1+len(relists)); n != want {
					t.Fatalf("%d lists; want %d", n, want)
				}
				if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
					t.Fatalf("store = %v; want a and b", keys)
				}
			})
		}
	}
}

// A relist NotOlderThan the store's resourceVersion answered older (a
// server that ignores resourceVersionMatch, a lagging member; KEP-2523),
// its metadata first as an apiserver writes it: the lister's engine
// refuses the answer from its metadata before any object reaches the
// store, and retries it within the same relist; the reflector sees no
// stale list (no *StaleListError, no "stale-list").
func TestOneResponseRelistOlderAnswerRetriedByLister(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			older := relistAnswer{list: cmList("5", testfake.ConfigMap("a", "1"), testfake.ConfigMap("x", "4"))}
			good := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"))}
			s := &oneResponseServer{t: t, proto: enc.proto, initial: cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("c", "3")), relists: []relistAnswer{older, good}}
			store := newAppliedStore()
			r, rec := oneResponseReflector(t, s, store)
			testfake.WaitFor(t, "the relist at 20", func() bool { return r.LastSyncResourceVersion() == "20" })
			if slices.ContainsFunc(store.since(0), func(c string) bool { return strings.Contains(c, "ns/x") }) {
				t.Fatalf("calls %q: an object of the older answer was applied", store.since(0))
			}
			if transitionedFor(rec, "stale-list") {
				t.Fatalf("transitions %v: the reflector rejected a stale list; the lister's engine refuses it itself", rec.Labels(testfake.Transition))
			}
			if got := rec.Labels(testfake.Relist); len(got) != 1 {
				t.Fatalf("relists %v; want one (the lister retried the older answer within it)", got)
			}
			if n := s.lists.Load(); n != 3 {
				t.Fatalf("%d lists; want 3 (the first sync, the older answer, its retry)", n)
			}
			if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b"}) {
				t.Fatalf("store = %v; want a and b", keys)
			}
		})
	}
}

// An answer whose objects were applied and that then fails (the connection
// is cut midway) is retried by the lister as a new snapshot (OnRestart):
// the objects only the failed answer held are deleted at the end of the
// one that completes.
func TestOneResponseRelistCutMidwayRestarts(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			cut := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("x", "16"), testfake.ConfigMap("b", "15")), cutAt: 2, abort: true, sent: make(chan struct{})}
			good := relistAnswer{list: cmList("20", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "15"), testfake.ConfigMap("d", "18"))}
			s := &oneResponseServer{t: t, proto: enc.proto, initial: cmList("10", testfake.ConfigMap("a", "1"), testfake.ConfigMap("b", "2"), testfake.ConfigMap("c", "3")), relists: []relistAnswer{cut, good}}
			store := newAppliedStore()
			r, rec := oneResponseReflector(t, s, store)
			testfake.WaitFor(t, "the relist at 20", func() bool { return r.LastSyncResourceVersion() == "20" })
			calls := store.since(0)
			if !slices.Contains(calls, "add ns/x@16") || !slices.Contains(calls, "delete ns/x@16") {
				t.Fatalf("calls %q; want ns/x applied from the cut answer, then deleted", calls)
			}
			if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a", "ns/b", "ns/d"}) {
				t.Fatalf("store = %v; want a, b and d", keys)
			}
			if got := rec.Labels(testfake.Relist); len(got) != 1 {
				t.Fatalf("relists %v; want one (the lister retried the cut answer within it)", got)
			}
		})
	}
}

// A list of Options.List, the caller's own function, is checked by no
// lister engine: the reflector holds it to the NotOlderThan it asks. The
// first sync lists NotOlderThan the limit=1 read's resourceVersion (30);
// an answer at 20 is rejected as stale before anything is applied, and
// the next list completes the sync.
func TestOwnListHeldToTheNotOlderThanAsked(t *testing.T) {
	fc := &fakeClient{ListFn: func(int, metav1.ListOptions) (runtime.Object, error) { return cmList("30"), nil }}
	var calls []fallback.Query
	var mu sync.Mutex
	o := fastOptions(&testfake.Recorder{})
	rec := o.Lister.Metrics.(*testfake.Recorder)
	o.PaginateLists = false
	o.List = func(_ context.Context, q fallback.Query) (runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, q)
		if len(calls) == 1 {
			return cmList("20", testfake.ConfigMap("x", "19")), nil
		}
		return cmList("30", testfake.ConfigMap("a", "25")), nil
	}
	store := newCallStore()
	r := New(fc, &corev1.ConfigMap{}, store, o)
	run(t, r)
	testfake.WaitFor(t, "the sync at 30", func() bool { return r.LastSyncResourceVersion() == "30" })
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0] != lister.NotOlderThan("30") {
		t.Fatalf("List calls %v; want NotOlderThan(30) twice", calls)
	}
	if !transitionedFor(rec, "stale-list") {
		t.Fatalf("transitions %v; want the answer at 20 rejected as stale (%s)", rec.Labels(testfake.Transition), "stale-list")
	}
	if keys := storeKeys(store); !slices.Equal(keys, []string{"ns/a"}) {
		t.Fatalf("store = %v; want only a (nothing of the answer at 20)", keys)
	}
}
