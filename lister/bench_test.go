package lister

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/pager"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// pagesClient serves pre-built pages (shallow copies, as a decoder would hand
// out fresh list objects) keyed by continue token.
type pagesClient struct {
	pages testfake.Pages
	// encoded, when set, holds each page as JSON; List then decodes a fresh
	// page per call, as a real client does.
	encoded map[string][]byte
}

func (c *pagesClient) encode() *pagesClient {
	c.encoded = map[string][]byte{}
	for k, p := range c.pages {
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		c.encoded[k] = b
	}
	return c
}

func newPagesClient(nPages, perPage int) *pagesClient {
	return &pagesClient{pages: testfake.NewPages(nPages, perPage, "ns", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v"} })}
}

func (c *pagesClient) List(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if c.encoded != nil {
		l := &corev1.ConfigMapList{}
		return l, json.Unmarshal(c.encoded[o.Continue], l)
	}
	return c.pages.Page(o.Continue)
}

func (c *pagesClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, fmt.Errorf("no watch")
}

const benchPages, benchPerPage = 20, 500

// BenchmarkRawPages: a hand-written client-go style page loop (the floor).
func BenchmarkRawPages(b *testing.B) {
	b.Run("prebuilt", func(b *testing.B) { rawPages(b, newPagesClient(benchPages, benchPerPage)) })
	b.Run("decoded", func(b *testing.B) { rawPages(b, newPagesClient(benchPages, benchPerPage).encode()) })
}

func rawPages(b *testing.B, c *pagesClient) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n, err := testfake.PageLoop(ctx, c.List, benchPerPage)
		if err != nil {
			b.Fatal(err)
		}
		if n != benchPages*benchPerPage {
			b.Fatal(n)
		}
	}
}

// BenchmarkListPages: the same pages through Lister.ListPages.
func BenchmarkListPages(b *testing.B) {
	b.Run("prebuilt", func(b *testing.B) { listPages(b, newPagesClient(benchPages, benchPerPage)) })
	b.Run("decoded", func(b *testing.B) { listPages(b, newPagesClient(benchPages, benchPerPage).encode()) })
}

func listPages(b *testing.B, c *pagesClient) {
	l := New(c, Options{Server: staticServer(capability.Yes, capability.Unknown)})
	ctx := context.Background()
	q := NotOlderThan("100").WithLimit(benchPerPage)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := l.ListPages(ctx, q, func(p runtime.Object) error { n += meta.LenList(p); return nil }); err != nil {
			b.Fatal(err)
		}
		if n != benchPages*benchPerPage {
			b.Fatal(n)
		}
	}
}

// BenchmarkClientGoPagerList: client-go's pager building one list.
func BenchmarkClientGoPagerList(b *testing.B) {
	c := newPagesClient(benchPages, benchPerPage)
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) })
	p.PageSize = benchPerPage
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		obj, _, err := p.List(ctx, metav1.ListOptions{ResourceVersion: "100", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil || meta.LenList(obj) != benchPages*benchPerPage {
			b.Fatal(err)
		}
	}
}

// BenchmarkListerList: Lister.List building one list of the client's type.
func BenchmarkListerList(b *testing.B) {
	l := New(newPagesClient(benchPages, benchPerPage), Options{Server: staticServer(capability.Yes, capability.Unknown)})
	ctx := context.Background()
	q := NotOlderThan("100").WithLimit(benchPerPage)
	b.ReportAllocs()
	for b.Loop() {
		obj, _, err := l.List(ctx, q)
		if err != nil || meta.LenList(obj) != benchPages*benchPerPage {
			b.Fatal(err)
		}
	}
}
