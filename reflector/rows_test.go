package reflector

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/policy"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// rowCheck checks every transition of a reflector against the decision
// table: every transition names a row (but Run's start, a wait's end and
// an opened watch); a transition that names a row carries it out: the row
// is the one its situation matches, its reason is the row's, and the next
// state is the row's (its wait, the delay the wait came to when the row was
// carried out, its kind of state, a MostRecent query where the row says
// so). Code that decided
// without the table, or changed a row's answer after the lookup, fails it.
type rowCheck struct {
	mu      sync.Mutex
	wrong   []string
	reached map[reason.Code]int
}

func (c *rowCheck) observe(from, to state, w why) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := checkTransition(from, to, w); err != nil {
		c.wrong = append(c.wrong, err.Error())
	}
	if w.row > 0 {
		if c.reached == nil {
			c.reached = map[reason.Code]int{}
		}
		c.reached[w.code]++
	}
}

// watchRows attaches a rowCheck to r; the test fails at its end if a
// transition broke it.
func watchRows(t *testing.T, r *Reflector) *rowCheck {
	t.Helper()
	c := &rowCheck{}
	r.observe = c.observe
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, w := range c.wrong {
			t.Errorf("transition not decided by the table: %s", w)
		}
	})
	return c
}

func checkTransition(from, to state, w why) error {
	if w.row == 0 {
		switch from.(type) {
		case stopped, backingOff: // Run's start, a wait's end
			return nil
		case startingWatch:
			if w.code == reason.WatchOpened {
				return nil
			}
		}
		return fmt.Errorf("%s -> %s (%s: %s) names no row", from.phase(), to.phase(), w.code, w.detail)
	}
	rows := engine.Rows()
	if w.row > len(rows) {
		return fmt.Errorf("%s names row %d of %d", w.code, w.row-1, len(rows))
	}
	row := rows[w.row-1]
	// The reflector's rows match no policy switch.
	if d := engine.Decide(w.sit, policy.Policy{}); d.Row != w.row-1 {
		return fmt.Errorf("%s names row %d; its situation %v matches row %d", w.code, w.row-1, w.sit, d.Row)
	}
	if row.Reason != w.code {
		return fmt.Errorf("row %d says %s, the transition %s", w.row-1, row.Reason, w.code)
	}
	next, waited := to, false
	if b, ok := to.(backingOff); ok {
		next, waited = b.next, true
	}
	switch want := row.Wait != engine.WaitNone; {
	case row.Wait == engine.WaitIfRepeated:
	case waited != want:
		return fmt.Errorf("row %d (%s) waits %q; the transition %s -> %s", w.row-1, row.Reason, row.Wait, from.phase(), to.phase())
	}
	if b, ok := to.(backingOff); ok && b.delay != w.delay {
		return fmt.Errorf("row %d (%s) came to a wait of %v; the transition waits %v", w.row-1, row.Reason, w.delay, b.delay)
	}
	if got, ok := thenOf(next); !ok || !thenFits(row, w.sit.Op, got) {
		return fmt.Errorf("row %d (%s) leads to %s (%v); the transition to %T %+v", w.row-1, row.Reason, row.Then, row.Action, next, next)
	}
	return nil
}

// kindOf is what a next state is: a list, a streaming list or a watch, and
// whether its query is MostRecent.
type kindOf struct {
	list, stream, watch, startWatch, stop, mostRecent bool
}

func thenOf(s state) (kindOf, bool) {
	switch s := s.(type) {
	case listing:
		return kindOf{list: true, mostRecent: s.query.Semantic == fallback.MostRecent}, true
	case streamingList:
		return kindOf{stream: true, mostRecent: s.query.Semantic == fallback.MostRecent}, true
	case watching:
		return kindOf{watch: true}, true
	case startingWatch:
		return kindOf{startWatch: true}, true
	case stopped:
		return kindOf{stop: true}, true
	}
	return kindOf{}, false
}

func thenFits(row engine.Row, op engine.Op, k kindOf) bool {
	switch row.Then {
	case engine.ThenListSame, engine.ThenListNotOlder:
		return k.list
	case engine.ThenListMostRecent:
		return k.list && k.mostRecent
	case engine.ThenSyncMostRecent:
		return (k.list || k.stream) && k.mostRecent
	case engine.ThenStreamMostRecent:
		return k.stream && k.mostRecent
	case engine.ThenSyncNotOlder:
		return k.list || k.stream
	case engine.ThenWatch:
		return k.watch
	case engine.ThenWatchAgain:
		return k.startWatch
	case engine.ThenStop:
		return k.stop
	}
	// The rows whose action says (OpRelist, OpWatch).
	switch {
	case op == engine.OpRelist:
		return k.list && (row.Action != vocab.FallbackMostRecent || k.mostRecent)
	case row.Action == vocab.Relist:
		return k.list || k.stream
	case row.Action == vocab.FallbackMostRecent:
		return (k.list || k.stream) && k.mostRecent
	}
	return k.startWatch
}

// TestStreamOpenFailuresAreRows drives each way a streaming list's request
// can fail (refused as unsupported, invalid, no response, "too large",
// 5xx, throttled, transport) at MostRecent and NotOlderThan through
// streamOpenFailed, and checks each transition against the table
// (checkTransition): every one names the row its situation matches and
// goes where the row says.
func TestStreamOpenFailuresAreRows(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tooLarge := apierrors.NewTimeoutError("Too large resource version", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	errs := []error{
		apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "", field.ErrorList{field.Forbidden(field.NewPath("sendInitialEvents"), "not allowed")}),
		apierrors.NewBadRequest("unable to parse requirement: bad selector"),
		fmt.Errorf("%w within 1s", watchpipe.ErrNoWatchResponse),
		tooLarge,
		apierrors.NewInternalError(fmt.Errorf("boom")),
		apierrors.NewTooManyRequests("slow down", 1),
		fmt.Errorf("connection reset by peer"),
		apierrors.NewForbidden(gr, "", fmt.Errorf("no")),
	}
	reached := map[reason.Code]bool{}
	for _, q := range []fallback.Query{{Semantic: fallback.MostRecent}, {Semantic: fallback.NotOlderThan, ResourceVersion: "10"}} {
		for _, err := range errs {
			r := New(&fakeClient{}, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
			from := streamingList{query: q}
			to, w := r.streamOpenFailed(context.Background(), from, err)
			if w.row == 0 {
				t.Errorf("%s, %v: no row", q, err)
			}
			if err := checkTransition(from, to, w); err != nil {
				t.Errorf("%s, %v: %v", q, w.detail, err)
			}
			reached[w.code] = true
		}
	}
	for _, c := range []reason.Code{reason.StreamRejected, reason.StreamFailed, reason.TooLargeRV} {
		if !reached[c] {
			t.Errorf("no failure reached a row with reason %s", c)
		}
	}
}

// TestStreamEndingsAreRows drives the ways a streaming list's initial
// events end through streamEnded (cut, closed, an ERROR event 410 or 500,
// ignored, a store that refuses an object as older or otherwise, the end
// bookmark) and checks each transition against the table.
func TestStreamEndingsAreRows(t *testing.T) {
	cases := []struct {
		out  watchpipe.InitialEventsOutcome
		ev   streamed
		want reason.Code
	}{
		{watchpipe.InitialEventsCut, streamed{}, reason.StreamFailed},
		{watchpipe.InitialEventsClosed, streamed{}, reason.StreamFailed},
		{watchpipe.InitialEventsError, streamed{failed: apierrors.NewResourceExpired("too old resource version")}, reason.ListGone},
		{watchpipe.InitialEventsError, streamed{failed: apierrors.NewInternalError(fmt.Errorf("boom"))}, reason.StreamFailed},
		{watchpipe.InitialEventsNotStreaming, streamed{}, reason.StreamIgnored},
		{watchpipe.InitialEventsStopped, streamed{applyErr: &StaleListError{Required: "20", Served: "10"}}, reason.StaleList},
		{watchpipe.InitialEventsStopped, streamed{applyErr: fmt.Errorf("store full")}, reason.ListError},
		{watchpipe.InitialEventsEnded, streamed{endRV: "30"}, reason.Streamed},
	}
	for _, c := range cases {
		r := New(&fakeClient{}, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
		from := streamingList{query: fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "10"}}
		ev := c.ev
		ev.snap = r.begin(0)
		w := watch.NewFake()
		to, why := r.streamEnded(context.Background(), from, w, time.Time{}, c.out, "test", &ev)
		if why.code != c.want || why.row == 0 {
			t.Errorf("%v: %s (row %d), want %s from a row", c.out, why.code, why.row-1, c.want)
		}
		if err := checkTransition(from, to, why); err != nil {
			t.Errorf("%v: %v", c.out, err)
		}
		if _, watching := to.(watching); !watching {
			w.Stop()
		}
	}
}

// TestListEndsAreRows drives a list call's ends through listEnded (the
// store took the list whole, the store refused it) and checks each
// transition against the table: the first watches from the list's
// resourceVersion at once, the second lists the same query again after a
// backoff.
func TestListEndsAreRows(t *testing.T) {
	cases := []struct {
		ending engine.Ending
		rv     string
		want   reason.Code
	}{
		{engine.EndedOK, "30", reason.Listed},
		{engine.EndedStoreFailed, "", reason.ListError},
	}
	for _, c := range cases {
		r := New(&fakeClient{}, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
		from := listing{query: fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "10"}, cause: reason.WatchGone, attempt: 2}
		to, w := r.listEnded(context.Background(), from, c.ending, c.rv, because(c.want, "test"))
		if w.row == 0 || w.code != c.want {
			t.Errorf("%v: %s (row %d), want %s from a row", c.ending, w.code, w.row-1, c.want)
		}
		if err := checkTransition(from, to, w); err != nil {
			t.Errorf("%v: %v", c.ending, err)
		}
		switch to := to.(type) {
		case startingWatch:
			if to.rv != c.rv {
				t.Errorf("%v: watch from %q, want the list's %q", c.ending, to.rv, c.rv)
			}
		case backingOff:
			if next, ok := to.next.(listing); !ok || next.query != from.query || next.cause != from.cause || next.attempt != from.attempt+1 {
				t.Errorf("%v: next %#v, want the same list, attempt %d", c.ending, to.next, from.attempt+1)
			}
		}
	}
}

// TestContextEndIsARow checks that a reflector whose context ends stops by
// the table's row: its last transition names it.
func TestContextEndIsARow(t *testing.T) {
	r := New(&fakeClient{}, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
	var last why
	var mu sync.Mutex
	r.observe = func(from, to state, w why) {
		mu.Lock()
		defer mu.Unlock()
		if err := checkTransition(from, to, w); err != nil {
			t.Errorf("%v", err)
		}
		last = w
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if last.code != reason.ContextDone || last.row == 0 {
		t.Fatalf("last transition %s (row %d), want %s from a row", last.code, last.row-1, reason.ContextDone)
	}
}
