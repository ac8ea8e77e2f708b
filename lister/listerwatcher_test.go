package lister

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

func endBookmark(rv string) *corev1.ConfigMap {
	o := testfake.ConfigMap("", rv)
	o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return o
}

// recv reads one event or fails after d.
func recv(t *testing.T, w watch.Interface, d time.Duration) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
	}
	return watch.Event{}, false
}

func TestListerWatcherListIsOneCompleteList(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){page("9", "c", "a"), page("9", "", "b")}}
	lw := NewListerWatcher(c, Options{})
	// What client-go's reflector sends first: RV "0" with the pager's limit.
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "x=y"})
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*corev1.ConfigMapList)
	if l.Continue != "" || l.ResourceVersion != "9" || !slices.Equal(names(l), []string{"a", "b"}) {
		t.Fatalf("list %+v", l.ListMeta)
	}
	calls := c.calls()
	if calls[0] != (metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "x=y"}) ||
		calls[1] != (metav1.ListOptions{Limit: 500, Continue: "c", LabelSelector: "x=y"}) {
		t.Fatalf("sent %+v", calls)
	}
	// Invalid wire options are rejected before any request.
	if _, err := lw.List(metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: "Exact"}); !apierrorsOrInvalid(err) {
		t.Fatalf("invalid options: %v", err)
	}
	if len(c.calls()) != 2 {
		t.Fatal("request sent for invalid options")
	}
}

func apierrorsOrInvalid(err error) bool { return errors.Is(err, fallback.ErrInvalidQuery) }

func TestStreamingListRefusedWithoutRequestWhenUnsupported(t *testing.T) {
	c := &scripted{t: t}
	lw := NewListerWatcher(c, Options{Server: staticServer(capability.Unknown, capability.No)})
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	if w != nil || !errors.Is(err, ErrStreamingListUnsupported) || len(c.watchCalls()) != 0 {
		t.Fatalf("w %v err %v watches %d", w, err, len(c.watchCalls()))
	}
	// client-go reads IsWatchListSemanticsUnSupported once, for the
	// informer's whole life: a belief about the server (which expires) is
	// decided per request above instead.
	if lw.IsWatchListSemanticsUnSupported() {
		t.Fatal("a server belief must not disable watch-list for the informer's life")
	}
	if NewListerWatcher(c, Options{}).IsWatchListSemanticsUnSupported() {
		t.Fatal("unknown support must not disable watch-list (the guard verifies)")
	}
	// An inner client that declares it (client-go's fake clientsets) is forwarded.
	if !NewListerWatcher(declaring{c}, Options{}).IsWatchListSemanticsUnSupported() {
		t.Fatal("the inner client's declaration is not forwarded")
	}
}

func TestGuardedStreamEndsWhenInitialEventsEndNeverArrives(t *testing.T) {
	srv := capability.Static(capability.Capabilities{})
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	lw := NewListerWatcher(c, Options{Server: srv, InitialEventsTimeout: 100 * time.Millisecond})
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	// Timed from before the last event is sent: the quiet bound runs from
	// its arrival, so it ends no sooner than 100ms after start, however
	// late this goroutine sees the event.
	start := time.Now()
	fw.Add(testfake.ConfigMap("a", "5")) // a v1.18 server: ADDED events, never the bookmark
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Added {
		t.Fatalf("event %v", ev.Type)
	}
	ev, ok := recv(t, w, 2*time.Second)
	if !ok || ev.Type != watch.Error {
		t.Fatalf("want an error event, got %v %v", ev.Type, ok)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Fatalf("ended after %v, before the quiet bound", el)
	}
	serr := apierrors.FromObject(ev.Object)
	if apierrors.IsResourceExpired(serr) || apierrors.IsTooManyRequests(serr) || apierrors.IsTimeout(serr) {
		t.Fatalf("error %v would make client-go retry the stream", serr)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("channel not closed after the error")
	}
	if !fw.IsStopped() {
		t.Fatal("inner watch not stopped")
	}
	if got := srv.Capabilities(context.Background()).Get(capability.StreamingList); got != capability.No {
		t.Fatalf("streaming list support %v", got)
	}
}

func TestGuardedStreamPassesThroughAfterInitialEventsEnd(t *testing.T) {
	srv := capability.Static(capability.Capabilities{})
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	w, err := NewListerWatcher(c, Options{Server: srv, InitialEventsTimeout: 50 * time.Millisecond}).
		WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fw.Add(testfake.ConfigMap("a", "5"))
	fw.Action(watch.Bookmark, endBookmark("6"))
	for _, want := range []watch.EventType{watch.Added, watch.Bookmark} {
		if ev, _ := recv(t, w, time.Second); ev.Type != want {
			t.Fatalf("got %v want %v", ev.Type, want)
		}
	}
	// Well past the quiet bound, a later change still arrives and no error does.
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("unexpected event %v after the bookmark", ev.Type)
	case <-time.After(200 * time.Millisecond):
	}
	fw.Modify(testfake.ConfigMap("a", "7"))
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Modified {
		t.Fatalf("got %v", ev.Type)
	}
	if got := srv.Capabilities(context.Background()).Get(capability.StreamingList); got != capability.Yes {
		t.Fatalf("streaming list support %v", got)
	}
}

func TestGuardedStreamNonAddedBeforeEndIsEvidence(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	w, _ := NewListerWatcher(c, Options{InitialEventsTimeout: time.Minute}).
		WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	fw.Action(watch.Bookmark, testfake.ConfigMap("", "9")) // a periodic bookmark, no annotation
	if ev, _ := recv(t, w, time.Second); ev.Type != watch.Error {
		t.Fatalf("got %v", ev.Type)
	}
}

// The real client-go v0.37.2 reflector (WatchListClient on by default) over a
// server that ignores sendInitialEvents, as v1.18 does: the guard ends the
// stream, the reflector falls back to a list and syncs; it never hangs.
func TestClientGoReflectorFallsBackToListInsteadOfHanging(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Skip("WatchListClient is off in this client-go; the streaming path is not exercised")
	}
	srv := capability.Static(capability.Capabilities{})
	// v1.18 serves a streaming list as a plain watch: ADDED events, then
	// silence, never the end bookmark.
	c := newServer(t, steadywatchtest.V118(), testfake.ConfigMap("a", ""), testfake.ConfigMap("b", ""))
	c.Advance(8) // the store at resourceVersion 10
	watches := func() (streams, plain int) {
		for _, r := range c.Requests() {
			switch {
			case r.Verb != "watch":
			case r.Options.SendInitialEvents != nil && *r.Options.SendInitialEvents:
				streams++
			default:
				plain++
			}
		}
		return streams, plain
	}
	lw := NewListerWatcher(c, Options{Server: srv, InitialEventsTimeout: 150 * time.Millisecond})
	store, r := runClientGoReflector(t, lw)

	deadline := time.Now().Add(10 * time.Second)
	for {
		_, p := watches()
		if len(store.List()) == 2 && c.Count("list") > 0 && p > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reflector did not sync by list: store %d lists %d plain watches %d", len(store.List()), c.Count("list"), p)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	if streams, _ := watches(); streams != 1 {
		t.Fatalf("%d streaming attempts, want 1", streams)
	}
	if got := srv.Capabilities(context.Background()).Get(capability.StreamingList); got != capability.No {
		t.Fatalf("streaming list support %v", got)
	}
	if r.LastSyncResourceVersion() != "10" {
		t.Fatalf("last sync RV %q", r.LastSyncResourceVersion())
	}
}

// Options.DisableStreamingList: client-go's reflector over the
// ListerWatcher lists from its first attempt on a server that streams (it
// never sends sendInitialEvents), and a streaming watch sent anyway is
// refused without a request.
func TestDisableStreamingList(t *testing.T) {
	srv := staticServer(capability.Yes, capability.Yes)
	c := newServer(t, steadywatchtest.Faults{}, testfake.ConfigMap("a", ""), testfake.ConfigMap("b", ""))
	lw := NewListerWatcher(c, Options{Server: srv, DisableStreamingList: true})
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Fatal("DisableStreamingList does not declare that the ListerWatcher does not stream lists")
	}
	if w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true}); w != nil || !errors.Is(err, ErrStreamingListUnsupported) || c.Count("watch") != 0 {
		t.Fatalf("streaming watch: w %v err %v, %d watches sent", w, err, c.Count("watch"))
	}
	store, _ := runClientGoReflector(t, lw)
	deadline := time.Now().Add(10 * time.Second)
	for len(store.List()) != 2 || c.Count("watch") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("reflector did not sync: store %d, lists %d, watches %d", len(store.List()), c.Count("list"), c.Count("watch"))
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	for _, req := range c.Requests() {
		if o := req.Options.SendInitialEvents; o != nil && *o {
			t.Fatalf("a streaming list was sent: %+v", req.Options)
		}
	}
	if c.Count("list") == 0 {
		t.Fatal("synced without a list")
	}
}

// runClientGoReflector runs client-go's own reflector over lw into a new
// store until the test ends.
func runClientGoReflector(t *testing.T, lw cache.ListerWatcher) (cache.Store, *cache.Reflector) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(lw, &corev1.ConfigMap{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return store, r
}

// declaring is a Client that declares it cannot stream lists, as client-go's
// fake clientsets do.
type declaring struct{ Client }

func (declaring) IsWatchListSemanticsUnSupported() bool { return true }
