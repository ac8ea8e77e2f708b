package steadywatchtest_test

// Tests that run client-go and the SDK's public API against the server.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

func served(s *cmServer, verb string) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Verb == verb {
			out = append(out, r.Served)
		}
	}
	return out
}

// TestStockInformerSyncsBehindFakeClientset: a client-go informer factory
// over a fake clientset with the server installed syncs, lists once (Any,
// as client-go's reflector asks), watches from the list's resourceVersion
// and sees later writes.
func TestStockInformerSyncsBehindFakeClientset(t *testing.T) {
	s := withObjects(t, steadywatchtest.Faults{}, "a", "b")
	cs := fake.NewClientset()
	s.Install(&cs.Fake, "configmaps")
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("ns"))
	cms := factory.Core().V1().ConfigMaps()
	inf := cms.Informer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if got, _ := cms.Lister().List(labels.Everything()); len(got) != 2 {
		t.Fatalf("informer has %d objects, want 2", len(got))
	}
	s.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}})
	testfake.WaitFor(t, "the informer sees c", func() bool { _, err := cms.Lister().ConfigMaps("ns").Get("c"); return err == nil })
	reqs := s.Requests()
	if reqs[0].Verb != "list" || reqs[0].Namespace != "ns" || reqs[0].Served != "Any" {
		t.Errorf("first request %+v, want a list of ns at Any", reqs[0])
	}
	if w := reqs[1]; w.Verb != "watch" || w.Served != "WatchFrom" || w.ResourceVersion != "2" {
		t.Errorf("second request %+v, want a watch from 2", w)
	}
}

// TestStockInformerStreamsItsInitialList: client-go v0.37 informers over a
// plain cache.ListerWatcher stream their initial list; the server answers
// with the annotated bookmark, so the informer syncs without any list.
func TestStockInformerStreamsItsInitialList(t *testing.T) {
	s := withObjects(t, steadywatchtest.Faults{}, "a", "b")
	inf := cache.NewSharedIndexInformer(s.ListerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	testfake.RunInformer(t, inf)
	testfake.WaitFor(t, "informer synced", inf.HasSynced)
	if n := len(inf.GetStore().List()); n != 2 {
		t.Errorf("store has %d objects, want 2", n)
	}
	if got := served(s, "watch"); len(got) == 0 || got[0] != "StreamingList" {
		t.Errorf("watches %v, want a streaming list first", got)
	}
	if n := s.Count("list"); n != 0 {
		t.Errorf("%d lists, want none (the stream replaced the list)", n)
	}
}

// TestV118StockHangsSteadywatchSyncs reproduces the field failure in one
// line (Faults: V118): the stock informer waits for an end bookmark that
// never comes; the SDK's informer detects it and lists instead.
func TestV118StockHangsSteadywatchSyncs(t *testing.T) {
	s := withObjects(t, steadywatchtest.V118(), "a", "b")
	stock := cache.NewSharedIndexInformer(s.ListerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	testfake.RunInformer(t, stock)
	testfake.WaitFor(t, "the stock informer's streaming list is open", func() bool { return s.Watches() == 1 })
	// An absence can only be shown over some time: 200ms is 10x what the
	// SDK's informer below needs.
	time.Sleep(200 * time.Millisecond)
	if stock.HasSynced() {
		t.Fatal("stock informer synced without the initial-events-end bookmark")
	}

	s2 := withObjects(t, steadywatchtest.V118(), "a", "b")
	sdk := reflector.NewSharedIndexInformerWithOptions(s2.ListerWatcher(), &corev1.ConfigMap{},
		cache.SharedIndexInformerOptions{}, lister.Options{InitialEventsTimeout: 20 * time.Millisecond})
	testfake.RunInformer(t, sdk)
	testfake.WaitFor(t, "steadywatch informer synced", sdk.HasSynced)
	if got := served(s2, "list"); len(got) == 0 {
		t.Errorf("no list after the streaming list was found ignored (requests %v)", s2.Requests())
	}
}

// TestListerSemantics runs lister.New(...).List for each semantic against a
// well-behaved server and a v1.18 one: the SDK serves the same snapshot on
// both (KEP-2523's backward-compatibility rules), the raw server does not.
func TestListerSemantics(t *testing.T) {
	for _, f := range []struct {
		name   string
		faults steadywatchtest.Faults
	}{{"current", steadywatchtest.Faults{}}, {"v1.18", steadywatchtest.V118()}} {
		for _, tc := range []struct {
			name      string
			q         lister.Query
			rv, items string
		}{
			{"MostRecent", lister.MostRecent(), "5", "a@4 c@3"},
			{"MostRecent paginated", lister.MostRecent().WithLimit(1), "5", "a@4 c@3"},
			{"Any", lister.Any(), "5", "a@4 c@3"},
			{"NotOlderThan", lister.NotOlderThan("3"), "5", "a@4 c@3"},
			{"Exact", lister.Exact("3"), "3", "a@1 b@2 c@3"},
			{"Exact paginated", lister.Exact("3").WithLimit(1), "3", "a@1 b@2 c@3"},
		} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				s := history(t, steadywatchtest.Options{Faults: f.faults})
				l := lister.New(s, knobs.WithLister(lister.Options{}, knobs.Lister{Policy: fastPolicy()}))
				obj, rec, err := l.List(context.Background(), tc.q)
				if err != nil {
					t.Fatalf("list: %v (requests %+v)", err, s.Requests())
				}
				if rec.ServedResourceVersion != tc.rv || items(t, obj) != tc.items {
					t.Errorf("served %s %q, want %s %q", rec.ServedResourceVersion, items(t, obj), tc.rv, tc.items)
				}
			})
		}
	}
}

func fastPolicy() policy.Policy {
	return policy.Policy{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Jitter: -1, MaxRetries: 2}}
}

// TestGetExactOnV118: a v1.18 server answers the single-name list from the
// newest revision; lister.GetExact notices and scans the collection at the
// resourceVersion, so the object comes back as it was there.
func TestGetExactOnV118(t *testing.T) {
	for _, f := range []steadywatchtest.Faults{{}, steadywatchtest.V118()} {
		s := history(t, steadywatchtest.Options{Faults: f})
		obj, rec, err := lister.New(s, knobs.WithLister(lister.Options{}, knobs.Lister{Policy: fastPolicy()})).GetExact(context.Background(), "a", "3")
		if err != nil {
			t.Fatalf("faults %+v: GetExact: %v", f, err)
		}
		if rv := obj.(*corev1.ConfigMap).ResourceVersion; rv != "1" {
			t.Errorf("faults %+v: a at resourceVersion %s, want 1 (as it was at 3)", f, rv)
		}
		scanned := false
		for _, e := range rec.Fallbacks {
			scanned = scanned || e.Reason == "get-exact-name-list-not-exact-scan-collection"
		}
		if scanned != (f != steadywatchtest.Faults{}) {
			t.Errorf("faults %+v: collection scan %v, want it only on v1.18", f, scanned)
		}
	}
}

// TestListerRule1OnV118: NotOlderThan with a limit is legacy Exact on v1.18,
// so a compacted resourceVersion is 410; the lister retries newer (rule 1)
// and never serves older data.
func TestListerRule1OnV118(t *testing.T) {
	s := history(t, steadywatchtest.Options{Faults: steadywatchtest.V118()})
	if err := s.Compact("4"); err != nil {
		t.Fatal(err)
	}
	_, rec, err := lister.New(s, knobs.WithLister(lister.Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), lister.NotOlderThan("3").WithLimit(1))
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if rec.ServedResourceVersion != "5" || len(rec.Fallbacks) == 0 {
		t.Errorf("served %s with fallbacks %v, want 5 after a rule 1 fallback", rec.ServedResourceVersion, rec.Fallbacks)
	}
	if got := s.Requests()[0]; got.Served != "Exact" || got.Code != 410 {
		t.Errorf("first request %+v, want the server's legacy Exact answered 410", got)
	}
}

// TestListerRestartsOnExpiredContinue: a compaction between two pages
// expires the token; ListPages restarts the list (never stitches).
func TestListerRestartsOnExpiredContinue(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	var pages []string
	restarts, compacted := 0, false
	rec, err := lister.New(s, knobs.WithLister(lister.Options{}, knobs.Lister{Policy: fastPolicy()})).ListPages(context.Background(), lister.MostRecent().WithLimit(1),
		func(p runtime.Object) error {
			pages = append(pages, items(t, p))
			if !compacted {
				compacted = true
				touch(t, s, "c")
				return s.Compact("")
			}
			return nil
		}, lister.OnRestart(func(fallback.Event) error { restarts++; pages = nil; return nil }))
	if err != nil {
		t.Fatalf("ListPages: %v", err)
	}
	if restarts != 1 || rec.Restarts != 1 || strings.Join(pages, ",") != "a@4,c@6" || rec.ServedResourceVersion != "6" {
		t.Errorf("restarts %d/%d pages %v served %s, want 1 restart, pages a@4,c@6 at 6", restarts, rec.Restarts, pages, rec.ServedResourceVersion)
	}
}

// TestReflectorSyncsAndRecoversFromGone: the SDK's reflector syncs, follows
// writes, and after its watch ends and its resourceVersion is compacted (the
// re-watch gets a 410 inside the stream) relists NotOlderThan and converges.
func TestReflectorSyncsAndRecoversFromGone(t *testing.T) {
	s := history(t, steadywatchtest.Options{})
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := reflector.New(s, &corev1.ConfigMap{}, store, knobs.WithReflector(reflector.Options{}, knobs.Reflector{Backoff: fastBackoff}))
	testfake.Start(t, context.Background(), r.Run)
	testfake.WaitFor(t, "reflector synced", r.HasSynced)
	keys := func() string { return strings.Join(store.ListKeys(), ",") }
	testfake.WaitFor(t, "store a,c", func() bool { return sameSet(keys(), "ns/a,ns/c") })
	testfake.WaitFor(t, "the reflector watches", func() bool { return s.Watches() == 1 })

	s.Close() // the watch ends ...
	s.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}})
	if err := s.Compact(""); err != nil { // ... and its resourceVersion is compacted
		t.Fatal(err)
	}
	testfake.WaitFor(t, "store a,c,d", func() bool { return sameSet(keys(), "ns/a,ns/c,ns/d") })
	var gone, relist bool
	for _, q := range s.Requests() {
		gone = gone || (q.Verb == "watch" && q.Served == "WatchFrom" && q.ResourceVersion == "5")
		relist = relist || (gone && q.Verb == "list" && q.Served == "NotOlderThan")
	}
	if !relist {
		t.Errorf("no NotOlderThan relist after the watch from 5 was gone; requests %+v", s.Requests())
	}
}

// TestReflectorStreamingList: told the server streams lists, the SDK's
// reflector syncs from one streaming watch; when the server drops the end
// bookmark (gravitational/teleport#64188) it gives up after
// InitialEventsTimeout and lists instead of hanging.
func TestReflectorStreamingList(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults steadywatchtest.Faults
		// timeout: InitialEventsTimeout. The well-behaved server's stream
		// must not depend on it (a loaded machine can leave 20ms between
		// two events); the one without an end bookmark waits it out.
		timeout time.Duration
		lists   bool
	}{
		{"well-behaved: no list", steadywatchtest.Faults{}, 5 * time.Second, false},
		{"DropBookmarks: falls back to a list", steadywatchtest.Faults{DropBookmarks: true}, 20 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case its own Server: a fallback is recorded in it.
			streams := capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes}})
			s := history(t, steadywatchtest.Options{Faults: tc.faults})
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			r := reflector.New(s, &corev1.ConfigMap{}, store, knobs.WithReflector(reflector.Options{Lister: lister.Options{Server: streams, InitialEventsTimeout: tc.timeout}}, knobs.Reflector{Backoff: fastBackoff}))
			testfake.Start(t, context.Background(), r.Run)
			testfake.WaitFor(t, "reflector synced", r.HasSynced)
			if keys := strings.Join(store.ListKeys(), ","); !sameSet(keys, "ns/a,ns/c") {
				t.Errorf("store %s, want ns/a,ns/c", keys)
			}
			if got := served(s, "watch"); len(got) == 0 || got[0] != "StreamingList" {
				t.Errorf("watches %v, want a streaming list first", got)
			}
			lists := false
			for _, rq := range s.Requests() {
				// limit=1: the guard's count of the initial events, not a list of the data.
				lists = lists || rq.Verb == "list" && rq.Options.Limit != 1
			}
			if lists != tc.lists {
				t.Errorf("lists sent: %v, want %v (requests %+v)", lists, tc.lists, s.Requests())
			}
		})
	}
}

func sameSet(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	if len(as) != len(bs) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range as {
		seen[x] = true
	}
	for _, x := range bs {
		if !seen[x] {
			return false
		}
	}
	return true
}

// TestListerStopsOnRepeatedContinueToken: a server that hands back the token
// it was given (apache/iceberg-go#1484) must not keep a list running: before
// the lister detected repeated tokens it paged until its context ended (about
// 60,000 requests in 2s); now the repeat ends it with ErrBrokenPagination.
func TestListerStopsOnRepeatedContinueToken(t *testing.T) {
	s := history(t, steadywatchtest.Options{Faults: steadywatchtest.Faults{RepeatContinueToken: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := lister.New(s, knobs.WithLister(lister.Options{}, knobs.Lister{Policy: fastPolicy()})).List(ctx, lister.MostRecent().WithLimit(1))
	if !errors.Is(err, lister.ErrBrokenPagination) || ctx.Err() != nil || s.Count("list") > 10 {
		t.Errorf("error %v after %d lists, want an error before the context ends and at most 10 lists", err, s.Count("list"))
	}
}

// fastBackoff keeps the reflector's retries milliseconds apart.
var fastBackoff = policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}
