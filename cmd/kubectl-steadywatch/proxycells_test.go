package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/internal/capability"
)

// stream is what a fake server sends for a streaming list of n objects.
type stream struct {
	n           int
	endBookmark string // "annotated", "stripped", "dropped", "cut"
}

func (s stream) play(w *watch.FakeWatcher) {
	for i := 0; i < s.n; i++ {
		w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), ResourceVersion: fmt.Sprint(10 + i)}})
	}
	bm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99"}}
	switch s.endBookmark {
	case "annotated":
		bm.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		w.Action(watch.Bookmark, bm)
	case "stripped":
		w.Action(watch.Bookmark, bm)
	case "cut":
		w.Stop()
	}
}

// observe runs the guard on a fake stream, as the probe does on a real one.
func observe(t *testing.T, s stream, expected int) endObservation {
	t.Helper()
	w := watch.NewFakeWithChanSize(s.n+1, false)
	s.play(w)
	o := endObservation{Expected: expected, ExpectedFrom: "test", HTTPStatus: 200}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.read(ctx, w, 3*time.Second, time.Now())
	return o
}

func TestProxyChainCells(t *testing.T) {
	type want struct{ observed, filtered, annotation, cut string }
	for _, tc := range []struct {
		name     string
		s        stream
		expected int
		want     want
	}{
		{"a clean server", stream{5, "annotated"}, 5, want{SemEndBookmark, ResultOK, ResultOK, ResultOK}},
		{"bookmarks filtered (gravitational/teleport#64188)", stream{5, "dropped"}, 5, want{SemBookmarksFiltered, ResultFault, ResultInconclusive, ResultOK}},
		{"annotation stripped (antrea-io/antrea#8123)", stream{5, "stripped"}, 5, want{SemAnnotationMissing, ResultOK, ResultFault, ResultOK}},
		{"cut before the end (kubernetes/kubernetes#140890)", stream{5, "cut"}, 5, want{SemCutBeforeEnd, ResultInconclusive, ResultInconclusive, ResultFault}},
		{"closed before any event", stream{0, "cut"}, 5, want{SemCutBeforeEnd, ResultInconclusive, ResultInconclusive, ResultFault}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observe(t, tc.s, tc.expected)
			if got := o.observed(); got != tc.want.observed {
				t.Fatalf("observed %s, want %s (%+v)", got, tc.want.observed, o)
			}
			for id, w := range map[string]string{CellBookmarksFiltered: tc.want.filtered, CellAnnotationMissing: tc.want.annotation, CellCutBeforeEnd: tc.want.cut} {
				res, ev := proxyCellResult(id, o)
				if res != w {
					t.Errorf("%s: %s (%s), want %s", id, res, ev, w)
				}
				if ev == "" {
					t.Errorf("%s: no evidence", id)
				}
				var r cellReport
				runProxyChainCell(cell{ID: id}, o, &r)
				if r.Report == "" || r.Steadywatch == "" || r.Verdict != verdictOfResult(w) {
					t.Errorf("%s: report %q steadywatch %q verdict %s", id, r.Report, r.Steadywatch, r.Verdict)
				}
			}
		})
	}
}

// With the count known, a dropped end bookmark is decided 1.5s after the last
// initial event (not the 3s quiet bound); the evidence says so.
func TestProxyChainDroppedBookmarkDecidedAfterCount(t *testing.T) {
	o := observe(t, stream{3, "dropped"}, 3)
	if o.DecidedAfterLast < 1500*time.Millisecond || o.DecidedAfterLast >= 2500*time.Millisecond {
		t.Fatalf("decided %s after the last event, want the 1.5s after-count bound", o.DecidedAfterLast)
	}
	_, ev := proxyCellResult(CellBookmarksFiltered, o)
	if !strings.Contains(ev, "3 of 3 expected initial event(s)") {
		t.Errorf("evidence %q", ev)
	}
	// Unknown count: the quiet bound.
	o = observe(t, stream{3, "dropped"}, -1)
	if o.observed() != SemBookmarksFiltered || o.DecidedAfterLast < 3*time.Second {
		t.Fatalf("unknown count: %s after %s", o.observed(), o.DecidedAfterLast)
	}
}

func TestProxyChainNotApplicable(t *testing.T) {
	for _, v := range []string{"v1.18.19", "v1.26.0"} {
		ver, err := capability.ParseVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		na := streamingNotApplicable(capability.FromVersion(ver))
		if na == "" {
			t.Fatalf("%s: streaming lists applicable", v)
		}
		o := endObservation{NotApplicable: na}
		for _, id := range []string{CellBookmarksFiltered, CellAnnotationMissing, CellCutBeforeEnd} {
			if res, _ := proxyCellResult(id, o); res != ResultNotApplicable {
				t.Errorf("%s %s: %s", v, id, res)
			}
		}
	}
	for _, v := range []string{"v1.34.4", "v1.37.2", "v1.33.0"} {
		ver, _ := capability.ParseVersion(v)
		if na := streamingNotApplicable(capability.FromVersion(ver)); na != "" {
			t.Errorf("%s: %s (the probe must try: a gate may be on)", v, na)
		}
	}
	// 422 with the gate off is decided from the answer (observeEndBookmark).
	o := endObservation{HTTPStatus: 422, NotApplicable: "refused"}
	if o.observed() != SemNotApplicable {
		t.Errorf("422: %s", o.observed())
	}
}
