package lister_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// lister.FromClientset decodes a list response item by item from the body
// as it arrives (so do FromDynamicConfig, FromMetadataConfig and
// FromRESTClient); these specs hold it to what client-go's typed (dynamic,
// metadata, generated) client
// decodes from the same real server, in both encodings, whole and page by
// page, and to the same errors.
var _ = Describe("lister.FromClientset, FromDynamicConfig, FromMetadataConfig and FromRESTClient decode lists item by item as client-go does", func() {
	for _, srv := range []struct {
		version string
		labels  Labels
		reason  string
	}{
		{build.Current, Label("conformance"), ""},
		{build.Legacy, Label("legacy", "needs-faults"), "needs the harness's " + build.Legacy + " server"},
	} {
		Context(srv.version, srv.labels, Ordered, func() {
			var e *env
			var rvN string
			BeforeAll(func(ctx SpecContext) {
				o := harness.Options{Version: srv.version}
				if srv.reason != "" {
					e = startHarness(ctx, o, srv.reason)
				} else {
					e = start(ctx, o)
				}
				// Objects with every kind of field a ConfigMap has, some large.
				for i := range 250 {
					_, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{
							Name:        fmt.Sprintf("dec-%03d", i),
							Labels:      map[string]string{"set": "dec", "i": fmt.Sprint(i)},
							Annotations: map[string]string{"note": strings.Repeat("n", (i%10)*1000)},
						},
						Data:       map[string]string{"a": strings.Repeat("v", i), "u": "ünïcode ✓"},
						BinaryData: map[string][]byte{"b": bytes.Repeat([]byte{byte(i), 0, 255}, i%40+1)},
					}, metav1.CreateOptions{})
					Expect(err).NotTo(HaveOccurred())
				}
				l, err := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "set=dec"})
				Expect(err).NotTo(HaveOccurred())
				rvN = l.ResourceVersion
			})

			for _, contentType := range []string{"", "application/json"} {
				It(fmt.Sprintf("content type %q: whole, paginated and continued lists equal the typed client's", contentType), func(ctx SpecContext) {
					cfg, answered := recordAnswers(e.cfg)
					cfg.ContentType = contentType
					// The encodings the server answered in: protobuf by default,
					// JSON when the client asks for it.
					defer func() {
						want := "application/vnd.kubernetes.protobuf"
						if contentType != "" {
							want = contentType
						}
						Expect(answered()).To(ConsistOf(HavePrefix(want)))
					}()
					cs := kubernetes.NewForConfigOrDie(cfg)
					ours, err := lister.FromClientset(cs, &corev1.ConfigMap{}, e.ns)
					Expect(err).NotTo(HaveOccurred())
					typed := cs.CoreV1().ConfigMaps(e.ns)

					expectSameLists(ctx, ours, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
						return typed.List(ctx, o)
					}, rvN)
				})
			}

			It("lister.FromDynamicConfig: whole, paginated and continued lists equal the dynamic client's", func(ctx SpecContext) {
				gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
				ours, err := lister.FromDynamicConfig(e.cfg, gvr, e.ns)
				Expect(err).NotTo(HaveOccurred())
				dyn := dynamic.NewForConfigOrDie(e.cfg).Resource(gvr).Namespace(e.ns)
				expectSameLists(ctx, ours, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return dyn.List(ctx, o)
				}, rvN)
				first, err := ours.List(ctx, metav1.ListOptions{LabelSelector: "set=dec", Limit: 1})
				Expect(err).NotTo(HaveOccurred())
				Expect(first.(*unstructured.UnstructuredList).Items[0].GetKind()).To(Equal("ConfigMap"), "items get the list's kind")
				expectSameBadContinueError(ctx, ours, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return dyn.List(ctx, o)
				})
			})

			It("lister.FromMetadataConfig: whole, paginated and continued lists equal the metadata client's, answered in protobuf", func(ctx SpecContext) {
				gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
				cfg, answered := recordAnswers(e.cfg)
				ours, err := lister.FromMetadataConfig(cfg, gvr, e.ns)
				Expect(err).NotTo(HaveOccurred())
				md := metadata.NewForConfigOrDie(cfg).Resource(gvr).Namespace(e.ns)
				expectSameLists(ctx, ours, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return md.List(ctx, o)
				}, rvN)
				Expect(answered()).To(ConsistOf(HavePrefix("application/vnd.kubernetes.protobuf")), "the server converts to PartialObjectMetadataList in protobuf")
				first, err := ours.List(ctx, metav1.ListOptions{LabelSelector: "set=dec", Limit: 1})
				Expect(err).NotTo(HaveOccurred())
				item := first.(*metav1.PartialObjectMetadataList).Items[0]
				Expect(item.Name).To(HavePrefix("dec-"))
				Expect(item.Labels).To(HaveKeyWithValue("set", "dec"))
				expectSameBadContinueError(ctx, ours, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return md.List(ctx, o)
				})
			})

			It("lister.FromRESTClient: a custom resource's generated typed client (a JSON-only Go type): whole, paginated and continued lists equal its own", func(ctx SpecContext) {
				dyn := dynamic.NewForConfigOrDie(e.cfg)
				gv := schema.GroupVersion{Group: e.ns + ".e2e.steadywatch.io", Version: "v1"}
				createWidgetCRD(ctx, dyn, gv)
				gvr := gv.WithResource("widgets")
				for i := range 250 {
					w := &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": gv.String(), "kind": "Widget",
						"metadata": map[string]any{"name": fmt.Sprintf("w-%03d", i), "labels": map[string]any{"set": "dec"}},
						"spec": map[string]any{
							"size": int64(i), "ratio": float64(i) / 7, "tags": []any{"t", "ünïcode ✓", strings.Repeat("x", i)},
							"extra": map[string]any{"k": fmt.Sprint(i)},
							"raw":   map[string]any{"nested": []any{int64(1), 2.5, nil, map[string]any{"deep": true}}},
						},
					}}
					_, err := dyn.Resource(gvr).Namespace(e.ns).Create(ctx, w, metav1.CreateOptions{})
					Expect(err).NotTo(HaveOccurred())
				}
				rc, typed := widgetClient(e.cfg, gv, e.ns)
				ours, err := lister.FromRESTClient(lister.RESTResource{Client: rc, Resource: "widgets", Namespace: e.ns, List: &testfake.WidgetList{}})
				Expect(err).NotTo(HaveOccurred())
				l, err := typed.List(ctx, metav1.ListOptions{LabelSelector: "set=dec"})
				Expect(err).NotTo(HaveOccurred())
				Expect(l.Items).To(HaveLen(250))
				Expect(l.Items[249].Spec.Ratio).To(BeNumerically("~", 249.0/7))
				expectSameLists(ctx, ours, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					return typed.List(ctx, o)
				}, l.ResourceVersion)
			})

			It("lister.FromDynamicConfig: watch events of a custom resource and of ConfigMaps equal the dynamic client's: initial events, changes, an expired resourceVersion", func(ctx SpecContext) {
				dyn := dynamic.NewForConfigOrDie(e.cfg)
				gv := schema.GroupVersion{Group: "watch." + e.ns + ".e2e.steadywatch.io", Version: "v1"}
				createWidgetCRD(ctx, dyn, gv)
				widgets := gv.WithResource("widgets")
				for i := range 250 {
					_, err := dyn.Resource(widgets).Namespace(e.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": gv.String(), "kind": "Widget",
						"metadata": map[string]any{"name": fmt.Sprintf("w-%03d", i), "labels": map[string]any{"set": "dec"}},
						"spec": map[string]any{
							"size": int64(i), "ratio": float64(i) / 7, "tags": []any{"t", "ünïcode ✓", strings.Repeat("x", i)},
							"raw": map[string]any{"nested": []any{int64(1), 2.5, nil, map[string]any{"deep": true}, int64(1) << 53}},
						},
					}}, metav1.CreateOptions{})
					Expect(err).NotTo(HaveOccurred())
				}
				for _, gvr := range []schema.GroupVersionResource{widgets, corev1.SchemeGroupVersion.WithResource("configmaps")} {
					ours, err := lister.FromDynamicConfig(e.cfg, gvr, e.ns)
					Expect(err).NotTo(HaveOccurred())
					theirs := dyn.Resource(gvr).Namespace(e.ns)

					// A watch from "0" starts with every object as ADDED (in
					// no particular order on old servers: compared by name).
					from0 := metav1.ListOptions{LabelSelector: "set=dec", ResourceVersion: "0"}
					got, want := watchEvents(ctx, ours.Watch, from0, 250), watchEvents(ctx, theirs.Watch, from0, 250)
					Expect(byName(got)).To(Equal(byName(want)), "%s: initial events", gvr.Resource)

					// Changes, from the current resourceVersion.
					l, err := theirs.List(ctx, metav1.ListOptions{LabelSelector: "set=dec", Limit: 1})
					Expect(err).NotTo(HaveOccurred())
					fromNow := metav1.ListOptions{LabelSelector: "set=dec", ResourceVersion: l.GetResourceVersion()}
					ow, err := ours.Watch(ctx, fromNow)
					Expect(err).NotTo(HaveOccurred())
					tw, err := theirs.Watch(ctx, fromNow)
					Expect(err).NotTo(HaveOccurred())
					name := l.Items[0].GetName()
					patch := `{"metadata":{"annotations":{"changed":"ünïcode ✓"}}}`
					if gvr == widgets {
						patch = `{"spec":{"size":100000,"ratio":0.125,"raw":{"nested":[-1,1e3,null]}}}`
					}
					_, err = theirs.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
					Expect(err).NotTo(HaveOccurred())
					Expect(theirs.Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
					got, want = collect(ctx, ow, 2), collect(ctx, tw, 2)
					Expect(got).To(Equal(want), "%s: a change and a deletion", gvr.Resource)
					Expect(got[0].Type).To(Equal(watch.Modified))
					Expect(got[1].Type).To(Equal(watch.Deleted))

					// A resourceVersion long gone: the server's answer (an
					// ERROR event with its Status, or an error) is the same.
					expired := metav1.ListOptions{LabelSelector: "set=dec", ResourceVersion: "1"}
					ow, oerr := ours.Watch(ctx, expired)
					tw, terr := theirs.Watch(ctx, expired)
					if terr != nil {
						Expect(oerr).To(MatchError(terr.Error()))
						continue
					}
					Expect(oerr).NotTo(HaveOccurred())
					got, want = collect(ctx, ow, 1), collect(ctx, tw, 1)
					Expect(got).To(Equal(want), "%s: watch from resourceVersion 1", gvr.Resource)
					AddReportEntry(gvr.Resource+": watch from resourceVersion 1", fmt.Sprintf("%s %T", got[0].Type, got[0].Object))
				}
			})

			It("a server's error answer is the typed client's error", func(ctx SpecContext) {
				ours, err := lister.FromClientset(e.cs, &corev1.ConfigMap{}, e.ns)
				Expect(err).NotTo(HaveOccurred())
				bad := metav1.ListOptions{LabelSelector: "set=dec", Limit: 10, Continue: "not-a-token"}
				_, want := e.cs.CoreV1().ConfigMaps(e.ns).List(ctx, bad)
				_, got := ours.List(ctx, bad)
				Expect(want).To(HaveOccurred())
				Expect(got).To(HaveOccurred())
				Expect(apierrors.ReasonForError(got)).To(Equal(apierrors.ReasonForError(want)))
				Expect(got.Error()).To(Equal(want.Error()))
			})
		})
	}
})

// expectSameBadContinueError checks that ours answers a list with a
// continue token the server cannot parse with theirs's error.
func expectSameBadContinueError(ctx context.Context, ours lister.Client, theirs func(context.Context, metav1.ListOptions) (runtime.Object, error)) {
	GinkgoHelper()
	bad := metav1.ListOptions{LabelSelector: "set=dec", Limit: 10, Continue: "not-a-token"}
	_, wantErr := theirs(ctx, bad)
	_, gotErr := ours.List(ctx, bad)
	Expect(gotErr).To(HaveOccurred())
	Expect(gotErr.Error()).To(Equal(wantErr.Error()))
}

// expectSameLists lists the 250 "set=dec" ConfigMaps with ours and with
// theirs (client-go's own client) and requires the same lists: one page at
// rvN (a resourceVersion with a limit is exact on every server, KEP-2523's
// legacy rule), its continuation, and the whole collection unpaginated
// (the same items; the list's resourceVersion may move on between the two).
func expectSameLists(ctx context.Context, ours lister.Client, theirs func(context.Context, metav1.ListOptions) (runtime.Object, error), rvN string) {
	GinkgoHelper()
	both := func(o metav1.ListOptions) (got, want runtime.Object) {
		want, err := theirs(ctx, o)
		Expect(err).NotTo(HaveOccurred())
		got, err = ours.List(ctx, o)
		Expect(err).NotTo(HaveOccurred())
		return got, want
	}
	got, want := both(metav1.ListOptions{LabelSelector: "set=dec", ResourceVersion: rvN, Limit: 100})
	Expect(got).To(Equal(want))
	Expect(meta.LenList(want)).To(Equal(100))
	lm, err := meta.ListAccessor(want)
	Expect(err).NotTo(HaveOccurred())
	Expect(lm.GetContinue()).NotTo(BeEmpty())

	got, want = both(metav1.ListOptions{LabelSelector: "set=dec", Limit: 100, Continue: lm.GetContinue()})
	Expect(got).To(Equal(want))

	got, want = both(metav1.ListOptions{LabelSelector: "set=dec"})
	gotItems, err := meta.ExtractList(got)
	Expect(err).NotTo(HaveOccurred())
	wantItems, err := meta.ExtractList(want)
	Expect(err).NotTo(HaveOccurred())
	Expect(gotItems).To(Equal(wantItems))
	Expect(wantItems).To(HaveLen(250))
}

// recordAnswers returns a copy of cfg whose clients record the Content-Type
// of every 200 answer, and the distinct types recorded so far.
func recordAnswers(cfg *rest.Config) (*rest.Config, func() []string) {
	cfg = rest.CopyConfig(cfg)
	var answered sync.Map
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusOK {
				answered.Store(resp.Header.Get("Content-Type"), true)
			}
			return resp, err
		})
	})
	return cfg, func() []string {
		var got []string
		answered.Range(func(k, _ any) bool { got = append(got, k.(string)); return true })
		return got
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// watchEvents opens a watch and returns its first n events.
func watchEvents(ctx context.Context, open func(context.Context, metav1.ListOptions) (watch.Interface, error), o metav1.ListOptions, n int) []watch.Event {
	w, err := open(ctx, o)
	Expect(err).NotTo(HaveOccurred())
	return collect(ctx, w, n)
}

// collect returns w's first n events and stops it.
func collect(ctx context.Context, w watch.Interface, n int) []watch.Event {
	defer w.Stop()
	out := make([]watch.Event, 0, n)
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			Expect(ok).To(BeTrue(), "the watch ended after %d of %d events", len(out), n)
			out = append(out, ev)
		case <-deadline:
			Fail(fmt.Sprintf("%d of %d events in 30s", len(out), n))
		case <-ctx.Done():
			Fail("context ended")
		}
	}
	return out
}

// byName sorts events by their object's name.
func byName(evs []watch.Event) []watch.Event {
	name := func(ev watch.Event) string {
		m, err := meta.Accessor(ev.Object)
		Expect(err).NotTo(HaveOccurred())
		return m.GetName()
	}
	out := slices.Clone(evs)
	slices.SortFunc(out, func(a, b watch.Event) int { return strings.Compare(name(a), name(b)) })
	return out
}
