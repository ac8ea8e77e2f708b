package lister_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// With ItemByItem, an answer older than a NotOlderThan list asks (a server
// that ignores resourceVersionMatch, a lagging member; KEP-2523) is
// refused by the lister's engine from its ListMeta, before the page
// function sees it and before any of its items is decoded: the engine
// retries it as it retries a whole page, and the caller sees only the
// answer it accepts. Nothing was handed over, so nothing is voided
// (OnRestart is not called).
func TestItemByItemRefusesOlderAnswerFromListMeta(t *testing.T) {
	for _, enc := range []struct {
		name              string
		proto, itemsFirst bool
	}{{"protobuf", true, false}, {"json", false, false}, {"protobuf/items-first", true, true}, {"json/items-first", false, true}} {
		t.Run(enc.name, func(t *testing.T) {
			var lists atomic.Int32
			cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
				l := itemList("25", "a", "b")
				if lists.Add(1) == 1 {
					l = itemList("10", "old-a", "old-x") // older than asked
				}
				body, _ := testfake.ListBody(t, l, enc.proto, enc.itemsFirst)
				ct := "application/json"
				if enc.proto {
					ct = "application/vnd.kubernetes.protobuf"
				}
				w.Header().Set("Content-Type", ct)
				_, _ = w.Write(body)
			})
			c := wireConfigMaps(t, cfg)
			var pages, items, restarts []string
			l := lister.New(c, fastRetries())
			rec, err := l.ListPages(context.Background(), lister.NotOlderThan("20"), func(page runtime.Object) error {
				lm, _ := meta.ListAccessor(page)
				pages = append(pages, lm.GetResourceVersion())
				return nil
			}, lister.ItemByItem(func(obj runtime.Object) error {
				m, _ := meta.Accessor(obj)
				items = append(items, m.GetName())
				return nil
			}), lister.OnRestart(func(ev fallback.Event) error {
				restarts = append(restarts, string(ev.Reason))
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pages, []string{"25"}) {
				t.Errorf("page function saw resourceVersions %q; want only 25", pages)
			}
			if !slices.Equal(items, []string{"a", "b"}) {
				t.Errorf("items handed over %q; want a and b (none of the answer at 10)", items)
			}
			if len(restarts) != 0 {
				t.Errorf("OnRestart called %q; nothing of the refused answer was handed over", restarts)
			}
			if n := lists.Load(); n != 2 || len(rec.Requests) != 2 {
				t.Fatalf("%d requests on the wire, %d in the Record; want 2 and 2", n, len(rec.Requests))
			}
			first := rec.Requests[0]
			if first.ServedResourceVersion != "10" || first.Items != 0 || first.Class != fallback.ServedOlder {
				t.Errorf("first request recorded served at %q with %d items, class %v; want 10, 0 handed over, served-older", first.ServedResourceVersion, first.Items, first.Class)
			}
			if len(rec.Fallbacks) != 1 || rec.Fallbacks[0].Reason != "served-older-retry" {
				t.Errorf("fallbacks %+v; want one %s", rec.Fallbacks, "served-older-retry")
			}
			if rec.ServedResourceVersion != "25" || rec.Pages != 1 || rec.Items != 2 {
				t.Errorf("record served at %q, %d pages, %d items; want 25, 1, 2", rec.ServedResourceVersion, rec.Pages, rec.Items)
			}
		})
	}
}

// A server whose every answer is older than the NotOlderThan asked: the
// answers refused from their ListMeta cost exactly the requests and end
// with the same typed error as whole pages do (the engine's budget, one
// decision for both), and nothing of them is handed over.
func TestItemByItemPersistentlyOlderAnswersEndLikeWholePages(t *testing.T) {
	var lists atomic.Int32
	cfg, _ := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		lists.Add(1)
		body, _ := testfake.ListBody(t, itemList("10", "old-a", "old-x"), true, false)
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = w.Write(body)
	})
	c := wireConfigMaps(t, cfg)
	list := func(itemByItem bool) (handed []string, requests int32, err error) {
		lists.Store(0)
		var opts []lister.PageOption
		if itemByItem {
			opts = append(opts, lister.ItemByItem(func(obj runtime.Object) error {
				m, _ := meta.Accessor(obj)
				handed = append(handed, "item "+m.GetName())
				return nil
			}), lister.OnRestart(func(fallback.Event) error { handed = append(handed, "restart"); return nil }))
		}
		_, err = lister.New(c, fastRetries()).ListPages(context.Background(), lister.NotOlderThan("20"), func(page runtime.Object) error {
			lm, _ := meta.ListAccessor(page)
			handed = append(handed, "page@"+lm.GetResourceVersion())
			return nil
		}, opts...)
		return handed, lists.Load(), err
	}
	wholeHanded, wholeRequests, wholeErr := list(false)
	handed, requests, err := list(true)
	var le *lister.Error
	if !errors.As(err, &le) || !errors.As(wholeErr, new(*lister.Error)) {
		t.Fatalf("errors %v (item by item) and %v (whole pages); want *lister.Error for both", err, wholeErr)
	}
	t.Logf("%d requests each; %v", requests, err)
	if requests != wholeRequests || requests < 2 {
		t.Fatalf("%d requests item by item, %d with whole pages; want the same bounded number (>= 2)", requests, wholeRequests)
	}
	if err.Error() != wholeErr.Error() {
		t.Errorf("item by item ended %q; whole pages %q", err, wholeErr)
	}
	if len(handed) != 0 || len(wholeHanded) != 0 {
		t.Errorf("handed over %q (item by item), %q (whole pages); want nothing", handed, wholeHanded)
	}
}
