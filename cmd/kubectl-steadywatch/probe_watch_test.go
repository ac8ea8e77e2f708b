package main

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// readEvents, the one event loop of the probe's watch cells, says why it
// stopped and counts every event it read.
func TestReadEventsSaysWhyItStopped(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "5"}}
	gone := &apierrors.NewResourceExpired("too old resource version").ErrStatus
	cases := []struct {
		name   string
		events []watch.Event
		close  bool
		bound  bool // the cell's bound passes
		cancel bool // the probe's own context ends
		want   watchEnd
		read   int // events counted
		err    bool
	}{
		{name: "the cell takes an event", events: []watch.Event{{Type: watch.Bookmark, Object: cm}, {Type: watch.Added, Object: cm}}, want: endedByCell, read: 2},
		{name: "an ERROR event", events: []watch.Event{{Type: watch.Bookmark, Object: cm}, {Type: watch.Error, Object: gone}}, want: endedByErrorEvent, read: 2},
		{name: "the server closes the watch", events: []watch.Event{{Type: watch.Bookmark, Object: cm}}, close: true, want: endedByServer, read: 1},
		{name: "the bound passes", bound: true, want: endedByBound},
		{name: "the probe is interrupted", cancel: true, want: endedByBound, err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wctx, wcancel := context.WithCancel(ctx)
			defer wcancel()
			w := watch.NewFakeWithChanSize(len(c.events), false)
			for _, ev := range c.events {
				w.Action(ev.Type, ev.Object)
			}
			if c.close {
				w.Stop()
			}
			if c.bound {
				wcancel()
			}
			if c.cancel {
				cancel()
			}
			var r cellReport
			end, err := readEvents(ctx, wctx, w, &r, func(ev watch.Event) bool { return ev.Type == watch.Added })
			if end != c.want || r.Events != c.read || (err != nil) != c.err {
				t.Fatalf("ended %d after %d events, error %v; want %d after %d, error %v", end, r.Events, err, c.want, c.read, c.err)
			}
			if c.err && !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v; want the probe's context.Canceled", err)
			}
			if c.want == endedByErrorEvent && r.ErrorEventStatus != 410 {
				t.Fatalf("ERROR event not recorded: %+v", r)
			}
		})
	}
}
