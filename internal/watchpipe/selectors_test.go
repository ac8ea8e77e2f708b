package watchpipe_test

import (
	"context"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

const (
	labelSel = "app=x"
	fieldSel = "metadata.name!=z"
)

// reflector.New with Options.Lister's selectors once filtered its lists
// but not its watches nor its streaming list, so objects outside them
// entered the store until the next relist. Every request of every adopter
// carries them: lists, streaming lists, watches.
func TestSelectorsOnEveryRequest(t *testing.T) {
	streams := capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.StreamingList: capability.Yes}})
	endOfStream := func(rv string) *corev1.ConfigMap {
		o := testfake.ConfigMap("", rv)
		o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		return o
	}
	for _, a := range []struct {
		name string
		run  func(t *testing.T, c *testfake.Client)
	}{
		{"drop-in ListerWatcher", func(t *testing.T, c *testfake.Client) {
			lw := lister.NewListerWatcher(c, lister.Options{Server: streams, LabelSelector: labelSel, FieldSelector: fieldSel})
			ctx := context.Background()
			if _, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
				t.Fatal(err)
			}
			w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "12"})
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
			w, err = lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
		}},
		{"reflector.New", func(t *testing.T, c *testfake.Client) {
			o := knobs.WithReflector(reflector.Options{Lister: lister.Options{Server: streams}}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
			o.Lister.LabelSelector, o.Lister.FieldSelector = labelSel, fieldSel
			r := reflector.New(c, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), o)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); r.Run(ctx) }()
			defer func() { cancel(); <-done }()
			fw, ok := c.Watcher(0, 5*time.Second) // the streaming list
			if !ok {
				t.Fatal("no streaming list within 5s")
			}
			fw.Add(testfake.ConfigMap("a", "10"))
			fw.Action(watch.Bookmark, endOfStream("12"))
			fw.Stop() // the watch that follows the stream ends: a plain watch follows
			if _, ok := c.Watcher(1, 5*time.Second); !ok {
				t.Fatal("no watch after the streaming list within 5s")
			}
			cancel()
			<-done
			if _, ok := c.Watcher(0, 0); !ok || len(c.Watches()) < 2 || c.Watches()[0].SendInitialEvents == nil {
				t.Fatalf("watches %+v: want a streaming list, then a watch", c.Watches())
			}
		}},
	} {
		t.Run(a.name, func(t *testing.T) {
			c := &testfake.Client{T: t, ListFn: testfake.Answers(testfake.Returns(pipeCase{}.list(), nil))}
			a.run(t, c)
			reqs := append(c.Lists(), c.Watches()...)
			if len(c.Watches()) < 2 {
				t.Fatalf("%d watches, want a streaming list and a watch", len(c.Watches()))
			}
			for i, o := range reqs {
				if o.LabelSelector != labelSel || o.FieldSelector != fieldSel {
					t.Errorf("request %d (%+v) lacks the selectors", i, o)
				}
			}
		})
	}
}
