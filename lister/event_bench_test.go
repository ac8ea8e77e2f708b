package lister_test

// Per-page and per-event CPU and allocations of the lister
// against raw client-go doing the same work on the same in-memory pages and
// events (no decoding: the ratio measures only the wrapper).
//
//	go test -run '^$' -bench '^Benchmark(PaginatedList|PageStream|PageStreamProto|StreamingListEvent|PlainWatchEvent)$' -benchmem -count 6 ./lister | tee new.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl new.txt
//
// BenchmarkPaginatedList:   one paginated list of prebuiltPages pages.
//   impl=clientgo     the client-go pager (pager.ListWithAlloc), as client-go's reflector lists
//   impl=steadywatch  Lister.List (verified, fallback-guarded, all pages)
// BenchmarkPageStream: the same pages consumed one by one.
//   impl=clientgo     a hand-written limit/continue loop (the floor)
//   impl=steadywatch  Lister.ListPages
// BenchmarkPageStreamProto: the same, but every page is decoded from
// protobuf per call (client-go's default for built-in types), so the ratio
// shows the wrapper's share of a realistic page.
// BenchmarkStreamingListEvent: per event of a streaming list (sendInitialEvents).
//   impl=clientgo     the client's raw watch channel
//   impl=steadywatch  ListerWatcher.WatchWithContext's guarded watch

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/pager"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

const prebuiltPages, prebuiltPerPage = 20, 500

// modernServer is what a compat.Detector reports for a current apiserver.
func modernServer() compat.Server {
	return capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{
		capability.ResourceVersionMatch: capability.Yes,
		capability.StreamingList:        capability.Yes,
	}})
}

// prebuiltClient serves pre-built pages keyed by continue token; each call
// returns a shallow copy, as a decoder hands out a fresh list object.
type prebuiltClient struct {
	pages testfake.Pages
	evs   []watch.Event
	// proto, when set, holds every page protobuf-encoded; List decodes it.
	proto map[string][]byte
}

func (c *prebuiltClient) encodeProto() *prebuiltClient {
	s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	c.proto = map[string][]byte{}
	for k, p := range c.pages {
		p.APIVersion, p.Kind = "v1", "ConfigMapList"
		var buf bytes.Buffer
		if err := s.Encode(p, &buf); err != nil {
			panic(err)
		}
		c.proto[k] = buf.Bytes()
	}
	return c
}

func newPrebuiltClient() *prebuiltClient {
	return &prebuiltClient{pages: testfake.NewPages(prebuiltPages, prebuiltPerPage, "bench", func(cm *corev1.ConfigMap) { cm.ResourceVersion = "100" })}
}

func (c *prebuiltClient) List(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if c.proto != nil {
		b, ok := c.proto[o.Continue]
		if !ok {
			return nil, fmt.Errorf("unknown continue token %q", o.Continue)
		}
		l := &corev1.ConfigMapList{}
		_, _, err := c.decoder().Decode(b, nil, l)
		return l, err
	}
	if c.pages == nil && o.Limit == 1 && len(c.evs) > 1 {
		// A streaming list's companion count request (ExpectedInitialEvents),
		// answered as an apiserver does: one object, a continue token and
		// remainingItemCount for the rest of the collection.
		rest := int64(len(c.evs) - 2) // the events minus the end bookmark, minus the item returned
		return &corev1.ConfigMapList{
			ListMeta: metav1.ListMeta{ResourceVersion: "1", Continue: "next", RemainingItemCount: &rest},
			Items:    []corev1.ConfigMap{*c.evs[0].Object.(*corev1.ConfigMap)},
		}, nil
	}
	return c.pages.Page(o.Continue)
}

func (c *prebuiltClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return testfake.NewWatch(c.evs, true), nil
}

func BenchmarkPaginatedList(b *testing.B) {
	const total = prebuiltPages * prebuiltPerPage
	ctx := context.Background()
	b.Run("impl=clientgo", func(b *testing.B) {
		c := newPrebuiltClient()
		p := pager.New(c.List)
		p.PageSize = prebuiltPerPage
		b.ReportAllocs()
		for b.Loop() {
			obj, _, err := p.ListWithAlloc(ctx, metav1.ListOptions{ResourceVersion: "100", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if err != nil || meta.LenList(obj) != total {
				b.Fatalf("err=%v", err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*prebuiltPages), "ns/page")
	})
	b.Run("impl=steadywatch", func(b *testing.B) {
		l := lister.New(newPrebuiltClient(), lister.Options{Server: modernServer()})
		q := lister.NotOlderThan("100").WithLimit(prebuiltPerPage)
		b.ReportAllocs()
		for b.Loop() {
			obj, _, err := l.List(ctx, q)
			if err != nil || meta.LenList(obj) != total {
				b.Fatalf("err=%v", err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*prebuiltPages), "ns/page")
	})
}

func (c *prebuiltClient) decoder() runtime.Decoder {
	return protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
}

func BenchmarkPageStream(b *testing.B) {
	pageStream(b, newPrebuiltClient)
}

func BenchmarkPageStreamProto(b *testing.B) {
	pageStream(b, func() *prebuiltClient { return newPrebuiltClient().encodeProto() })
}

func pageStream(b *testing.B, newClient func() *prebuiltClient) {
	const total = prebuiltPages * prebuiltPerPage
	ctx := context.Background()
	b.Run("impl=clientgo", func(b *testing.B) {
		c := newClient()
		b.ReportAllocs()
		for b.Loop() {
			n, err := testfake.PageLoop(ctx, c.List, prebuiltPerPage)
			if err != nil {
				b.Fatal(err)
			}
			if n != total {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*prebuiltPages), "ns/page")
	})
	b.Run("impl=steadywatch", func(b *testing.B) {
		l := lister.New(newClient(), lister.Options{Server: modernServer()})
		q := lister.NotOlderThan("100").WithLimit(prebuiltPerPage)
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			if _, err := l.ListPages(ctx, q, func(p runtime.Object) error { n += meta.LenList(p); return nil }); err != nil {
				b.Fatal(err)
			}
			if n != total {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*prebuiltPages), "ns/page")
	})
}

// streamEvents builds a streaming list: n ADDED events and the
// initial-events-end bookmark.
func streamEvents(n int) []watch.Event {
	evs := make([]watch.Event, 0, n+1)
	for i := 0; i < n; i++ {
		evs = append(evs, watch.Event{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "cm-" + strconv.Itoa(i), Namespace: "bench", ResourceVersion: strconv.Itoa(i + 2),
		}}})
	}
	evs = append(evs, watch.Event{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: strconv.Itoa(n + 2), Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}})
	return evs
}

func BenchmarkStreamingListEvent(b *testing.B) {
	ctx := context.Background()
	opts := metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	b.Run("impl=clientgo", func(b *testing.B) {
		c := &prebuiltClient{evs: streamEvents(b.N)}
		b.ReportAllocs()
		b.ResetTimer()
		w, err := c.Watch(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		drainEvents(b, w, b.N+1)
	})
	b.Run("impl=steadywatch", func(b *testing.B) {
		c := &prebuiltClient{evs: streamEvents(b.N)}
		lw := lister.NewListerWatcher(c, lister.Options{Server: modernServer()})
		b.ReportAllocs()
		b.ResetTimer()
		w, err := lw.WatchWithContext(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		drainEvents(b, w, b.N+1)
	})
}

// drainEvents reads w to its end and fails b unless it held want events and
// no error event.
func drainEvents(b *testing.B, w watch.Interface, want int) {
	b.Helper()
	n := 0
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			b.Fatalf("error event: %v", ev.Object)
		}
		n++
	}
	w.Stop()
	if n != want {
		b.Fatalf("got %d events, want %d", n, want)
	}
}
