package watchpipe

import (
	"maps"
	"testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
	"k8s.io/apimachinery/pkg/watch"
)

// history is the state both pipelines of TestRelistEndsAsReplace start
// from: a list, then a watch that updated b and deleted c.
func history(t *testing.T) *Pipeline {
	t.Helper()
	p := New(Config{Indexed: true})
	l := p.Load(3)
	l.Add("ns", "a", "5")
	l.Add("ns", "b", "7")
	l.Add("ns", "c", "9")
	p.Replace(l, "10")
	w := p.Watch("10", false)
	for _, ev := range []struct {
		t  watch.EventType
		rv string
		n  string
	}{{watch.Modified, "12", "b"}, {watch.Deleted, "13", "c"}} {
		if v, _ := w.Event(ev.t, testfake.ConfigMap(ev.n, ev.rv)); v != Deliver {
			t.Fatalf("history: %s %s@%s: %s", ev.t, ev.n, ev.rv, v)
		}
	}
	return p
}

func liveOf(p *Pipeline) map[string]string {
	out := map[string]string{}
	p.EachLive(func(ns, name, rv string) { out[ns+"/"+name] = rv })
	return out
}

// A list applied object by object (Relist) leaves the pipeline exactly as a
// Replace of the same list: the same objects and versions, the same count,
// the same newest resourceVersion, and the same verdicts afterwards.
func TestRelistEndsAsReplace(t *testing.T) {
	items := [][2]string{{"a", "5"}, {"b", "12"}, {"d", "11"}}

	byItem := history(t)
	r := byItem.Relist(len(items))
	for _, it := range items {
		if v, held, _ := r.Item("ns", it[0], it[1]); v != Deliver {
			t.Fatalf("Item %s@%s: %s (held %d)", it[0], it[1], v, held)
		}
	}
	if r.Len() != 3 || !r.Has("ns", "d") || r.Has("ns", "c") {
		t.Fatalf("the list holds %d objects (d %v, c %v); want a, b, d", r.Len(), r.Has("ns", "d"), r.Has("ns", "c"))
	}
	byItem.Replace(r.Loader(), "14")

	whole := history(t)
	l := whole.Load(len(items))
	for _, it := range items {
		l.Add("ns", it[0], it[1])
	}
	whole.Replace(l, "14")

	if a, b := liveOf(byItem), liveOf(whole); !maps.Equal(a, b) {
		t.Fatalf("after Relist %v; after Replace %v", a, b)
	}
	if byItem.Live() != whole.Live() || byItem.Newest() != whole.Newest() {
		t.Fatalf("Live %d/%d, Newest %q/%q; want equal", byItem.Live(), whole.Live(), byItem.Newest(), whole.Newest())
	}
	for _, ev := range []struct {
		t  watch.EventType
		n  string
		rv string
	}{{watch.Modified, "b", "11"}, {watch.Added, "c", "12"}, {watch.Modified, "a", "15"}, {watch.Deleted, "d", "16"}} {
		va, _ := byItem.Watch("14", false).Event(ev.t, testfake.ConfigMap(ev.n, ev.rv))
		vb, _ := whole.Watch("14", false).Event(ev.t, testfake.ConfigMap(ev.n, ev.rv))
		if va != vb {
			t.Fatalf("%s %s@%s: %s after Relist, %s after Replace", ev.t, ev.n, ev.rv, va, vb)
		}
	}
}

// No object goes back in time: an object older than the version delivered
// for it, or not newer than its deletion, is EndStale; the live flag tells
// an update from an add.
func TestRelistItemVerdicts(t *testing.T) {
	p := history(t)
	r := p.Relist(0)
	for _, c := range []struct {
		name, rv string
		want     Verdict
		held     uint64
		live     bool
	}{
		{"b", "8", EndStale, 12, true},   // older than b@12
		{"c", "13", EndStale, 13, false}, // the deletion's own version
		{"c", "9", EndStale, 13, false},  // older than the deletion
		{"c", "14", Deliver, 0, false},   // re-created after it
		{"a", "5", Deliver, 0, true},     // unchanged
		{"a", "5", Deliver, 0, true},     // twice in a stream
		{"z", "3", Deliver, 0, false},    // unknown: nothing to compare
	} {
		v, held, live := r.Item("ns", c.name, c.rv)
		if v != c.want || held != c.held || live != c.live {
			t.Errorf("Item %s@%s = %s, held %d, live %v; want %s, %d, %v", c.name, c.rv, v, held, live, c.want, c.held, c.live)
		}
	}
	// What was delivered is held: a later item of the same list is compared with it.
	if v, held, _ := r.Item("ns", "c", "13"); v != EndStale || held != 14 {
		t.Fatalf("c@13 after c@14: %s (held %d); want end-stale, 14", v, held)
	}
}

// The first list of a pipeline (nothing held yet) compares nothing and
// builds the state from scratch.
func TestRelistOfAnEmptyPipeline(t *testing.T) {
	p := New(Config{Indexed: true})
	r := p.Relist(2)
	r.Item("ns", "a", "5")
	r.Item("ns", "b", "3")
	p.Replace(r.Loader(), "6")
	if got := liveOf(p); !maps.Equal(got, map[string]string{"ns/a": "5", "ns/b": "3"}) || p.Newest() != "6" {
		t.Fatalf("state %v at %q; want a@5, b@3 at 6", got, p.Newest())
	}
}
