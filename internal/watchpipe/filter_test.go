package watchpipe

import (
	"testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// The filter stage: an ADDED it does not keep is dropped; a MODIFIED it
// does not keep (the object left the set) is delivered as a DELETED and
// remembered as one.
func TestFilterStage(t *testing.T) {
	p := New(Config{Indexed: true, Filter: LabelFilter{labels.SelectorFromSet(labels.Set{"app": "x"})}})
	p.Replace(p.Load(0), "10")
	w := p.Watch("10", false)
	in, out := testfake.ConfigMap("a", "11"), testfake.ConfigMap("b", "12")
	in.Labels = map[string]string{"app": "x"}
	if v, _ := w.Event(watch.Added, in); v != Deliver {
		t.Fatalf("kept ADDED: %s", v)
	}
	if v, _ := w.Event(watch.Added, out); v != Drop {
		t.Fatalf("ADDED outside the filter: %s, want drop", v)
	}
	left := testfake.ConfigMap("a", "13")
	if v, _ := w.Event(watch.Modified, left); v != DeliverAsDeleted {
		t.Fatalf("MODIFIED that left the filter: %s, want deliver-as-deleted", v)
	}
	if n := p.Live(); n != 0 {
		t.Fatalf("%d objects held after the only one left the filter", n)
	}
	old := testfake.ConfigMap("a", "12")
	old.Labels = in.Labels
	if v, _ := w.Event(watch.Modified, old); v != EndStale {
		t.Fatalf("an event older than the filtered-out deletion: %s, want end-stale", v)
	}
}
