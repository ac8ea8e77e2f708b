package watchpipe_test

// The watch pipeline's guarantees, written once as one table and run
// against every adopter: the drop-in ListerWatcher (as client-go's
// reflector drives it: a list, then a watch from its resourceVersion) and
// reflector.New. Each case lists a@10 and b@11 at resourceVersion 12 (unless
// it says otherwise), sends its watch events, then a sentinel event at 1000;
// the adopter's outcome is the events it delivered (to client-go, or to the
// reflector's store) before the sentinel, and how the watch went on:
// delivering (the sentinel arrived), ended for a relist (a 410 Expired error
// event to client-go; a new list of the reflector), or ended for a new watch
// without a relist (a stall).

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// How a watch went on after the case's events.
const (
	delivering = "delivering" // the sentinel was delivered
	relists    = "relists"    // the watch ended and a relist follows
	rewatches  = "rewatches"  // the watch ended and a new watch follows, no relist
)

type pipeCase struct {
	name string
	// listRV and items are the list the watch follows (default: 12; a@10, b@11).
	listRV string
	items  []string // "name rv"
	events []string // "TYPE name rv", or "BOOKMARK rv"
	// stall: no sentinel is sent; the stall timeout is short.
	stall bool
	want  []string
	end   string
	// counted is the fallback reason counted (metrics.Recorder.Fallback),
	// once; "" for none.
	counted string
	// filter, if set, is the client-side stage: the adopter's client hands
	// it to the pipeline (watchpipe.FilterSource, as shard.Wrap does).
	filter watchpipe.Filter
}

const (
	stale      = "event-older-than-store"      // the reflector's and the drop-in's reason code
	unparsable = "unparsable-resource-version" // the reflector's and the drop-in's reason code
)

var pipeCases = []pipeCase{
	{
		// A pipe that forgot a DELETED object's version let an older
		// MODIFIED bring the deleted object back.
		name:   "a deleted object does not come back from an older event",
		events: []string{"DELETED b 13", "MODIFIED b 9"},
		want:   []string{"DELETED b 13"}, end: relists, counted: stale,
	},
	{
		name:   "an event at the version of the object's deletion is rejected (tombstone)",
		events: []string{"DELETED b 13", "MODIFIED b 13"},
		want:   []string{"DELETED b 13"}, end: relists, counted: stale,
	},
	{
		name:   "a repeated DELETED at the same version passes",
		events: []string{"DELETED b 13", "DELETED b 13"},
		want:   []string{"DELETED b 13", "DELETED b 13"}, end: delivering,
	},
	{
		name:   "an object re-created after its deletion is delivered",
		events: []string{"DELETED b 13", "ADDED b 14", "MODIFIED b 15"},
		want:   []string{"DELETED b 13", "ADDED b 14", "MODIFIED b 15"}, end: delivering,
	},
	{
		// An older ADDED for a name the cache does not hold must not
		// pass, or the resume point goes back with it.
		name:   "an ADDED older than the watch's snapshot, for an object not held, is rejected",
		events: []string{"ADDED c 3"},
		end:    relists, counted: stale,
	},
	{
		name:   "an ADDED at the watch's snapshot resourceVersion is rejected",
		events: []string{"ADDED c 12"},
		end:    relists, counted: stale,
	},
	{
		name:   "an event older than the object held is rejected",
		events: []string{"MODIFIED a 5"},
		end:    relists, counted: stale,
	},
	{
		name:   "an event older than the newest event the watch delivered is rejected",
		events: []string{"MODIFIED a 15", "ADDED c 14"},
		want:   []string{"MODIFIED a 15"}, end: relists, counted: stale,
	},
	{
		name:   "objects changed at one resourceVersion (one transaction) are delivered",
		events: []string{"MODIFIED a 13", "MODIFIED b 13", "MODIFIED a 13"},
		want:   []string{"MODIFIED a 13", "MODIFIED b 13", "MODIFIED a 13"}, end: delivering,
	},
	{
		name:   "an event whose resourceVersion does not parse, on a server whose versions do, ends the watch",
		events: []string{"MODIFIED a 13", "MODIFIED a garbage"},
		want:   []string{"MODIFIED a 13"}, end: relists, counted: unparsable,
	},
	{
		name:   "a bookmark whose resourceVersion does not parse is dropped",
		events: []string{"BOOKMARK abc", "MODIFIED a 13"},
		want:   []string{"MODIFIED a 13"}, end: delivering, counted: unparsable,
	},
	{
		name:   "a bookmark is delivered and raises the floor",
		events: []string{"BOOKMARK 20", "MODIFIED a 21", "MODIFIED b 18"},
		want:   []string{"BOOKMARK 20", "MODIFIED a 21"}, end: relists, counted: stale,
	},
	{
		name:   "opaque versions compare nothing and drop nothing",
		listRV: "zz", items: []string{"a x1", "b x2"},
		events: []string{"MODIFIED a x0", "BOOKMARK opaque", "DELETED b x1", "ADDED b x0"},
		want:   []string{"MODIFIED a x0", "BOOKMARK opaque", "DELETED b x1", "ADDED b x0"}, end: delivering,
	},
	{
		name:   "the filter stage drops an ADDED it does not keep and delivers a MODIFIED that left as DELETED",
		filter: nameFilter{drop: []string{"x", "b"}},
		events: []string{"ADDED x 13", "MODIFIED b 14", "MODIFIED a 15"},
		want:   []string{"DELETED b 14", "MODIFIED a 15"}, end: delivering,
	},
	{
		name:   "an immutable filter (a shard's hash range) drops every event of an object it does not keep",
		filter: nameFilter{drop: []string{"x"}, immutable: true},
		events: []string{"ADDED x 13", "MODIFIED x 14", "DELETED x 15", "MODIFIED a 16"},
		want:   []string{"MODIFIED a 16"}, end: delivering,
	},
	{
		name:  "a watch that delivers nothing for the stall timeout is ended without a relist",
		stall: true,
		end:   rewatches,
	},
}

// nameFilter keeps the objects whose names are not in drop.
type nameFilter struct {
	drop      []string
	immutable bool
}

func (f nameFilter) Keep(m metav1.Object) bool { return !slices.Contains(f.drop, m.GetName()) }
func (f nameFilter) Immutable() bool           { return f.immutable }

// filteringClient hands its filter to the pipeline that adopts it.
type filteringClient struct {
	*testfake.Client
	f watchpipe.Filter
}

func (c filteringClient) PipelineFilter() interface{ Keep(m metav1.Object) bool } { return c.f }

// adopted is the client an adopter is built on: client, or client with the
// case's filter.
func (c pipeCase) adopted(client *testfake.Client) lister.Client {
	if c.filter != nil {
		return filteringClient{client, c.filter}
	}
	return client
}

// adopter runs one case and returns what it delivered and how it went on.
type adopter struct {
	name string
	run  func(t *testing.T, c pipeCase, client *testfake.Client, rec *fallbacks) (delivered []string, end string)
}

var adopters = []adopter{
	{"drop-in ListerWatcher", runListerWatcher},
	{"reflector.New", reflectorOutcome},
}

func TestPipelineGuaranteesOnEveryAdopter(t *testing.T) {
	for _, a := range adopters {
		for _, c := range pipeCases {
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				client := &testfake.Client{T: t, ListFn: testfake.Answers(testfake.Returns(c.list(), nil))}
				rec := &fallbacks{}
				got, end := a.run(t, c, client, rec)
				if !slices.Equal(got, c.want) || end != c.end {
					t.Fatalf("delivered %q and %s; want %q and %s", got, end, c.want, c.end)
				}
				var want []string
				if c.counted != "" {
					want = []string{c.counted}
				}
				if got := rec.get(); !slices.Equal(got, want) {
					t.Fatalf("fallbacks counted %q, want %q", got, want)
				}
			})
		}
	}
}

func (c pipeCase) list() *corev1.ConfigMapList {
	rv, items := c.listRV, c.items
	if rv == "" {
		rv, items = "12", []string{"a 10", "b 11"}
	}
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, it := range items {
		f := strings.Fields(it)
		l.Items = append(l.Items, *testfake.ConfigMap(f[0], f[1]))
	}
	return l
}

// feed sends the case's events (and the sentinel) on the first watch.
func feed(t *testing.T, c pipeCase, client *testfake.Client) {
	t.Helper()
	fw, ok := client.Watcher(0, 5*time.Second)
	if !ok {
		t.Fatal("no watch opened within 5s")
	}
	evs := c.events
	if !c.stall {
		evs = append(slices.Clone(evs), "ADDED sentinel 1000")
	}
	for _, e := range evs {
		f := strings.Fields(e)
		if f[0] == "BOOKMARK" {
			fw.Action(watch.Bookmark, testfake.ConfigMap("", f[1]))
			continue
		}
		fw.Action(watch.EventType(f[0]), testfake.ConfigMap(f[1], f[2]))
	}
}

func describe(t watch.EventType, obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return string(t) + " ?"
	}
	if t == watch.Bookmark {
		return "BOOKMARK " + m.GetResourceVersion()
	}
	return string(t) + " " + m.GetName() + " " + m.GetResourceVersion()
}

// runListerWatcher drives the drop-in ListerWatcher as client-go's
// reflector does: a list, then a watch from its resourceVersion.
func runListerWatcher(t *testing.T, c pipeCase, client *testfake.Client, rec *fallbacks) ([]string, string) {
	o := lister.Options{StallTimeout: -1, Metrics: rec}
	if c.stall {
		o.StallTimeout = 50 * time.Millisecond
	}
	lw := lister.NewListerWatcher(c.adopted(client), o)
	ctx := context.Background()
	list, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	rv, _, _ := testfake.ListRV(t, list)
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	feed(t, c, client)
	var got []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			switch {
			case !ok:
				return got, rewatches
			case ev.Type == watch.Error:
				if !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
					t.Fatalf("error event %v, want 410 Expired", ev.Object)
				}
				return got, relists
			}
			if d := describe(ev.Type, ev.Object); d == "ADDED sentinel 1000" {
				return got, delivering
			} else {
				got = append(got, d)
			}
		case <-timeout:
			t.Fatalf("no outcome within 10s; delivered %q", got)
		}
	}
}

// recordingStore records what a reflector applies to its store.
type recordingStore struct {
	cache.Store
	mu  sync.Mutex
	ops []string
}

func (s *recordingStore) record(t watch.EventType, obj any) {
	s.mu.Lock()
	s.ops = append(s.ops, describe(t, obj.(runtime.Object)))
	s.mu.Unlock()
}

func (s *recordingStore) Add(obj any) error { s.record(watch.Added, obj); return s.Store.Add(obj) }
func (s *recordingStore) Update(obj any) error {
	s.record(watch.Modified, obj)
	return s.Store.Update(obj)
}
func (s *recordingStore) Delete(obj any) error {
	s.record(watch.Deleted, obj)
	return s.Store.Delete(obj)
}
func (s *recordingStore) Bookmark(rv string) error {
	s.record(watch.Bookmark, testfake.ConfigMap("", rv))
	return nil
}

func (s *recordingStore) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops)
}

// reflectorOutcome runs c through reflector.New and returns what reached
// its store and how the pipe ended.
func reflectorOutcome(t *testing.T, c pipeCase, client *testfake.Client, rec *fallbacks) ([]string, string) {
	store := &recordingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	o := knobs.WithReflector(reflector.Options{PaginateLists: true, Lister: lister.Options{Name: "test", StallTimeout: -1, Metrics: rec}}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if c.stall {
		o.Lister.StallTimeout = 50 * time.Millisecond
	}
	r := reflector.New(c.adopted(client), &corev1.ConfigMap{}, store, o)
	defer testfake.Start(t, context.Background(), r.Run)()
	feed(t, c, client)
	// The outcome is read once it shows; cancelling then waits for Run, so
	// what was counted is complete.
	deadline := time.Now().Add(10 * time.Second)
	for tick := time.NewTicker(time.Millisecond); ; <-tick.C {
		ops := store.snapshot()
		if i := slices.Index(ops, "ADDED sentinel 1000"); i >= 0 {
			return ops[:i], delivering
		}
		switch {
		case len(client.Lists()) >= 2:
			return ops, relists
		case len(client.Watches()) >= 2:
			return ops, rewatches
		case time.Now().After(deadline):
			t.Fatalf("no outcome within 10s; applied %q", ops)
		}
	}
}

// fallbacks counts the watch pipeline's fallback reasons an adopter
// reports (not the list's, of the relist that follows).
type fallbacks struct {
	metricsnop.Nop
	mu      sync.Mutex
	reasons []string
}

func (f *fallbacks) Fallback(_, reason string) {
	if reason != stale && reason != unparsable {
		return
	}
	f.mu.Lock()
	f.reasons = append(f.reasons, reason)
	f.mu.Unlock()
}

func (f *fallbacks) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reasons)
}
