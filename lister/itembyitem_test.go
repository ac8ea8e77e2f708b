package lister_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
)

func itemList(rv string, names ...string) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, n := range names {
		l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, ResourceVersion: "1"}})
	}
	return l
}

// pagesAndItems lists q with ItemByItem (and OnRestart unless noRestart)
// and returns what was handed over, in order: "page@RV (N items)",
// "item NAME", "restart".
// wireConfigMaps is the SDK's client (FromClientset, which decodes its
// lists item by item) for the ConfigMaps of namespace ns behind cfg, with
// client-go's hidden retries off.
func wireConfigMaps(t *testing.T, cfg *rest.Config) lister.Client {
	t.Helper()
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

// fastRetries: the lister retries at once (1ms backoff).
func fastRetries() lister.Options {
	return knobs.WithLister(lister.Options{}, knobs.Lister{Policy: policy.Policy{Backoff: policy.Backoff{Initial: time.Millisecond, Max: time.Millisecond}}})
}

func pagesAndItems(t *testing.T, c lister.Client, q lister.Query, noRestart bool) []string {
	t.Helper()
	got, err := handedOver(c, lister.Options{}, q, noRestart)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// handedOver lists q through c with ItemByItem (and OnRestart unless
// noRestart) and returns what was handed over, in order.
func handedOver(c lister.Client, o lister.Options, q lister.Query, noRestart bool) ([]string, error) {
	var got []string
	opts := []lister.PageOption{lister.ItemByItem(func(obj runtime.Object) error {
		m, _ := meta.Accessor(obj)
		got = append(got, "item "+m.GetName())
		return nil
	})}
	if !noRestart {
		opts = append(opts, lister.OnRestart(func(fallback.Event) error { got = append(got, "restart"); return nil }))
	}
	_, err := lister.New(c, o).ListPages(context.Background(), q, func(page runtime.Object) error {
		lm, _ := meta.ListAccessor(page)
		got = append(got, fmt.Sprintf("page@%s (%d items)", lm.GetResourceVersion(), meta.LenList(page)))
		return nil
	}, opts...)
	return got, err
}

// An Exact list answered at a newer resourceVersion is retried with a
// limit (KEP-2523 rule 2). The engine refuses that answer from its
// ListMeta, before any of its items is decoded: nothing of it is handed
// over, so nothing is voided. Without OnRestart, and with a client that
// does not decode its lists (FromFuncs), pages are delivered whole.
func TestItemByItemRefusedAnswerHandsNothingOver(t *testing.T) {
	cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		l := itemList("20", "a", "b")
		if r.URL.Query().Get("limit") == "" {
			l = itemList("30", "a", "x") // newer than asked
		}
		body, _ := testfake.ListBody(t, l, true, false)
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = w.Write(body)
	})
	c := wireConfigMaps(t, cfg)
	q := fallback.ExactQuery("20")
	want := []string{"page@20 (0 items)", "item a", "item b"}
	if got := pagesAndItems(t, c, q, false); !slices.Equal(got, want) {
		t.Fatalf("handed over %q; want %q", got, want)
	}
	whole := []string{"page@20 (2 items)"}
	if got := pagesAndItems(t, c, q, true); !slices.Equal(got, whole) {
		t.Fatalf("without OnRestart, handed over %q; want %q", got, whole)
	}
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("ns")
	if got := pagesAndItems(t, lister.FromFuncs(cms.List, cms.Watch), q, false); !slices.Equal(got, whole) {
		t.Fatalf("FromFuncs: handed over %q; want %q", got, whole)
	}
}

// An answer the lister discards after some of its items were handed over
// (its body cut midway, retried) is voided through OnRestart before the
// retried answer's items are handed over.
func TestItemByItemDiscardedAnswerRestarts(t *testing.T) {
	var lists atomic.Int32
	cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		if lists.Add(1) == 1 {
			body, at := testfake.ListBody(t, itemList("20", "a", "x"), true, false)
			_, _ = w.Write(body[:at[1]])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		body, _ := testfake.ListBody(t, itemList("20", "a", "b"), true, false)
		_, _ = w.Write(body)
	})
	got, err := handedOver(wireConfigMaps(t, cfg), fastRetries(), lister.MostRecent(), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"page@20 (0 items)", "item a", "restart", "page@20 (0 items)", "item a", "item b"}
	if !slices.Equal(got, want) {
		t.Fatalf("handed over %q; want %q", got, want)
	}
}

// A continuation page cut midway after some of its items were handed over
// is asked again from its continue token: its items, served at the
// snapshot's resourceVersion, come again, and the pages before it stay
// (no restart). One whose ListMeta shows another snapshot is refused
// before any of its items is handed over, and the list restarts (the
// engine's continue-expired rule). One whose snapshot cannot be told (the
// first page had no resourceVersion) cannot be voided alone once its items
// were handed over: the call fails with ErrItemsDiscarded.
func TestItemByItemContinuationPageCutMidway(t *testing.T) {
	for _, tc := range []struct {
		name, firstRV, cutRV string
		want                 []string // nil: ErrItemsDiscarded
	}{
		{"same snapshot", "20", "20", []string{"page@20 (0 items)", "item a", "item b", "page@20 (0 items)", "item c", "page@20 (0 items)", "item c", "item d"}},
		{"another snapshot", "20", "30", []string{"page@20 (0 items)", "item a", "item b", "restart", "page@20 (0 items)", "item a", "item b", "page@20 (0 items)", "item c", "item d"}},
		{"unknown snapshot", "", "30", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cuts atomic.Int32
			cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
				if r.URL.Query().Get("continue") == "" {
					l := itemList(tc.firstRV, "a", "b")
					l.Continue = "t"
					body, _ := testfake.ListBody(t, l, true, false)
					_, _ = w.Write(body)
					return
				}
				if cuts.Add(1) == 1 {
					body, at := testfake.ListBody(t, itemList(tc.cutRV, "c", "d"), true, false)
					_, _ = w.Write(body[:at[1]])
					w.(http.Flusher).Flush()
					panic(http.ErrAbortHandler)
				}
				body, _ := testfake.ListBody(t, itemList(tc.firstRV, "c", "d"), true, false)
				_, _ = w.Write(body)
			})
			got, err := handedOver(wireConfigMaps(t, cfg), fastRetries(), lister.MostRecent().WithLimit(2), false)
			if tc.want == nil {
				if !errors.Is(err, lister.ErrItemsDiscarded) {
					t.Fatalf("error %v; want ErrItemsDiscarded (handed over %q)", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("handed over %q; want %q", got, tc.want)
			}
		})
	}
}

// twoItemServer serves every request a JSON ConfigMap list of a and b at
// resourceVersion 20.
func twoItemServer(t *testing.T) (*rest.Config, schema.GroupVersionResource) {
	cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		body, _ := testfake.ListBody(t, itemList("20", "a", "b"), false, false)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	return cfg, corev1.SchemeGroupVersion.WithResource("configmaps")
}

// The dynamic and metadata clients hand items over one by one too: a
// dynamic client's items with the list's kind and apiVersion, a metadata
// client's as PartialObjectMetadata.
func TestItemByItemDynamicAndMetadata(t *testing.T) {
	cfg, gvr := twoItemServer(t)
	dyn, err := lister.FromDynamicConfig(cfg, gvr, "ns")
	if err != nil {
		t.Fatal(err)
	}
	md, err := lister.FromMetadataConfig(cfg, gvr, "ns")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]lister.Client{"dynamic": dyn, "metadata": md} {
		var got []string
		_, err := lister.New(c, lister.Options{}).ListPages(context.Background(), lister.MostRecent(), func(page runtime.Object) error {
			got = append(got, fmt.Sprintf("page (%d items)", meta.LenList(page)))
			return nil
		}, lister.ItemByItem(func(obj runtime.Object) error {
			m, _ := meta.Accessor(obj)
			got = append(got, fmt.Sprintf("%T %s %s", obj, obj.GetObjectKind().GroupVersionKind().Kind, m.GetName()))
			return nil
		}), lister.OnRestart(func(fallback.Event) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
		typ, kind := "*unstructured.Unstructured", "ConfigMap"
		if name == "metadata" {
			typ, kind = "*v1.PartialObjectMetadata", ""
		}
		want := []string{"page (0 items)", typ + " " + kind + " a", typ + " " + kind + " b"}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: handed over %q; want %q", name, got, want)
		}
	}
}

// A lister with a ListGate delivers pages whole even when ItemByItem is
// asked: the gate shares one answer among the callers queued together
// (e2e/lister's ListGate spec: four reflector.New sharing), which an answer
// handed over to one caller item by item cannot be.
func TestItemByItemWithAListGateDeliversWholePages(t *testing.T) {
	cfg, gvr := twoItemServer(t)
	dyn, err := lister.FromDynamicConfig(cfg, gvr, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_, err = lister.New(dyn, lister.Options{ListGate: listgate.New(1)}).ListPages(context.Background(), lister.MostRecent(), func(page runtime.Object) error {
		got = append(got, fmt.Sprintf("page (%d items)", meta.LenList(page)))
		return nil
	}, lister.ItemByItem(func(obj runtime.Object) error {
		got = append(got, "item")
		return nil
	}), lister.OnRestart(func(fallback.Event) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"page (2 items)"}; !slices.Equal(got, want) {
		t.Fatalf("with a ListGate: handed over %q; want %q", got, want)
	}
}
