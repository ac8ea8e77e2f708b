package lister

import (
	"context"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// ADDED events every 30ms (10x margin) for 3x the quiet bound: no error. Then silence:
// the error comes no earlier than the bound after the last hand-over.
func TestGuardQuietTimerRearmsLazily(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	w, err := NewListerWatcher(c, Options{Server: capability.Static(capability.Capabilities{}), InitialEventsTimeout: 300 * time.Millisecond}).
		WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	begin := time.Now()
	var last time.Time
	for i := 0; time.Since(begin) < 900*time.Millisecond; i++ {
		fw.Add(testfake.ConfigMap("a"+strconv.Itoa(i), "5"))
		if ev, _ := recv(t, w, time.Second); ev.Type != watch.Added {
			t.Fatalf("event %d: %v", i, ev.Type)
		}
		last = time.Now()
		time.Sleep(30 * time.Millisecond) // event pacing under test
	}
	ev, ok := recv(t, w, 2*time.Second)
	if !ok || ev.Type != watch.Error {
		t.Fatalf("got %v %v", ev.Type, ok)
	}
	if d := time.Since(last); d < 290*time.Millisecond {
		t.Fatalf("ended %v after the last hand-over", d)
	}
}

// Cancelling the context ends a guarded watch (and its goroutine) even
// after the bookmark.
func TestGuardedWatchEndsWithContextAfterBookmark(t *testing.T) {
	fw := watch.NewRaceFreeFake()
	c := &scripted{t: t, watchFn: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil }}
	ctx, cancel := context.WithCancel(context.Background())
	w, _ := NewListerWatcher(c, Options{Server: capability.Static(capability.Capabilities{})}).WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	fw.Action(watch.Bookmark, endBookmark("6"))
	recv(t, w, time.Second)
	cancel()
	if _, ok := recv(t, w, time.Second); ok {
		t.Fatal("not closed")
	}
	if !fw.IsStopped() {
		t.Fatal("inner not stopped")
	}
}
