package informer_test

// The differential test: one event history, played to client-go's
// informer and to this one (each over its own copy of a scripted
// endpoint), step by step; after each step the handler calls of both are
// compared. Every intended difference is asserted where it happens and
// listed in docs/informer.md.

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// endpoint is a scripted list/watch endpoint: List answers the current
// state, Watch opens a watch the test writes events to.
type endpoint struct {
	mu    sync.Mutex
	items map[string]*v1.Pod
	rv    int
	w     *watch.FakeWatcher
	lists int
}

func newEndpoint() *endpoint { return &endpoint{items: map[string]*v1.Pod{}} }

// IsWatchListSemanticsUnSupported: no streaming lists, for both informers.
func (e *endpoint) IsWatchListSemanticsUnSupported() bool { return true }

func (e *endpoint) List(metav1.ListOptions) (runtime.Object, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lists++
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(e.rv)}}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range e.items {
			if !yield(k) {
				return
			}
		}
	}) {
		l.Items = append(l.Items, *e.items[k].DeepCopy())
	}
	return l, nil
}

func (e *endpoint) Watch(metav1.ListOptions) (watch.Interface, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.w = watch.NewFakeWithChanSize(100, false)
	return e.w, nil
}

// set changes the state at the next resourceVersion (a nil pod: deleted)
// and returns the object at that version.
func (e *endpoint) set(name string, present bool) *v1.Pod {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rv++
	p := pod(name, fmt.Sprint(e.rv))
	if present {
		e.items[name] = p
	} else {
		delete(e.items, name)
	}
	return p
}

func (e *endpoint) send(ev watch.Event) {
	e.mu.Lock()
	w := e.w
	e.mu.Unlock()
	w.Action(ev.Type, ev.Object.DeepCopyObject())
}

// recorder records a handler's calls as text.
type recorder struct {
	mu    sync.Mutex
	calls []string
	seen  int
}

func desc(obj any) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return "tombstone(" + t.Key + "@" + desc(t.Obj) + ")"
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return m.GetName() + "@" + m.GetResourceVersion()
}

func (r *recorder) add(s string) { r.mu.Lock(); r.calls = append(r.calls, s); r.mu.Unlock() }
func (r *recorder) OnAdd(obj any, initial bool) {
	r.add(fmt.Sprintf("add %s initial=%v", desc(obj), initial))
}
func (r *recorder) OnUpdate(old, obj any) { r.add("update " + desc(old) + " -> " + desc(obj)) }
func (r *recorder) OnDelete(obj any)      { r.add("delete " + desc(obj)) }

// next returns the calls since the last next.
func (r *recorder) next() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.calls[r.seen:])
	r.seen = len(r.calls)
	return out
}

// pair is the same history's two sides.
type pair struct {
	t                  *testing.T
	stockEP, oursEP    *endpoint
	stock, ours        cache.SharedIndexInformer
	stockRecs, oursRec []*recorder
}

func newPair(t *testing.T, resync time.Duration) *pair {
	p := &pair{t: t, stockEP: newEndpoint(), oursEP: newEndpoint()}
	p.stock = cache.NewSharedIndexInformer(p.stockEP, &v1.Pod{}, resync, cache.Indexers{})
	p.ours = newOurs(p.oursEP, resync, cache.Indexers{})
	return p
}

func (p *pair) addHandler() {
	s, o := &recorder{}, &recorder{}
	if _, err := p.stock.AddEventHandler(s); err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.ours.AddEventHandler(o); err != nil {
		p.t.Fatal(err)
	}
	p.stockRecs, p.oursRec = append(p.stockRecs, s), append(p.oursRec, o)
}

func (p *pair) run() {
	run(p.t, p.stock)
	run(p.t, p.ours)
}

// state sets the same change on both endpoints, without a watch event.
func (p *pair) state(name string, present bool) *v1.Pod {
	p.stockEP.set(name, present)
	return p.oursEP.set(name, present)
}

// event makes a change and sends its watch event to both.
func (p *pair) event(typ watch.EventType, name string) {
	obj := p.state(name, typ != watch.Deleted)
	p.send(watch.Event{Type: typ, Object: obj})
}

func (p *pair) send(ev watch.Event) {
	p.stockEP.send(ev)
	p.oursEP.send(ev)
}

// relist ends both watches with 410 Gone: both informers relist.
func (p *pair) relist() {
	p.send(watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version").ErrStatus})
	time.Sleep(time.Minute) // past either reflector's backoff
}

// step waits for both informers to settle and returns each handler's new
// calls, stock's then ours.
func (p *pair) step() (stock, ours [][]string) {
	synctest.Wait()
	for i := range p.stockRecs {
		stock, ours = append(stock, p.stockRecs[i].next()), append(ours, p.oursRec[i].next())
	}
	return stock, ours
}

// same checks that every handler got the same calls, in the same order or,
// unordered, as the same multiset.
func (p *pair) same(what string, ordered bool) {
	p.t.Helper()
	stock, ours := p.step()
	if slices.IndexFunc(stock, func(c []string) bool { return len(c) > 0 }) < 0 {
		p.t.Errorf("%s: client-go's handlers got no call (the step shows nothing)", what)
	}
	for i := range stock {
		s, o := stock[i], ours[i]
		if !ordered {
			s, o = slices.Sorted(slices.Values(s)), slices.Sorted(slices.Values(o))
		}
		if !slices.Equal(s, o) {
			p.t.Errorf("%s, handler %d:\nclient-go: %q\nours:      %q", what, i, s, o)
		}
	}
}

func TestDifferentialHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, 0)
		for _, n := range []string{"a", "b", "c"} {
			p.state(n, true)
		}
		p.addHandler()
		p.run()
		p.same("initial list", true)

		p.event(watch.Added, "d")
		p.event(watch.Modified, "a")
		p.event(watch.Deleted, "b")
		p.same("watch events", true)

		p.addHandler() // a handler added late gets the store as initial-list adds
		p.same("handler added late", false)

		// Changes the watches never deliver, then a relist: per-object
		// updates (unchanged ones included), adds, and tombstones.
		p.state("c", true)
		p.state("d", false)
		p.state("e", true)
		p.relist()
		stock, ours := p.step()
		for i := range stock {
			// Intended difference: client-go hands a relist's deletions
			// first, then the list in order; ours hands the list in order
			// as it is applied, then the deletions.
			if s, o := slices.Sorted(slices.Values(stock[i])), slices.Sorted(slices.Values(ours[i])); !slices.Equal(s, o) {
				t.Errorf("relist, handler %d:\nclient-go: %q\nours:      %q", i, stock[i], ours[i])
			}
			if len(stock[i]) == 0 || !isTombstone(stock[i][0]) || !isTombstone(ours[i][len(ours[i])-1]) {
				t.Errorf("relist, handler %d: want client-go's tombstones first and ours last:\nclient-go: %q\nours:      %q", i, stock[i], ours[i])
			}
		}

		p.event(watch.Modified, "e")
		p.same("watch events after the relist", true)

		// Intended difference: an event older than the stored object.
		// client-go applies it (the object goes back in time); ours never
		// applies it and relists not older than what it holds.
		old := pod("c", "2")
		p.send(watch.Event{Type: watch.Modified, Object: old})
		time.Sleep(time.Minute)
		stock, ours = p.step()
		for i := range stock {
			if !slices.Equal(stock[i], []string{"update c@7 -> c@2"}) {
				t.Errorf("older event, handler %d, client-go: %q", i, stock[i])
			}
			for _, c := range ours[i] {
				// The relist's same-version updates only: nothing changes.
				var from, to string
				if _, err := fmt.Sscanf(c, "update %s -> %s", &from, &to); err != nil || from != to {
					t.Errorf("older event, handler %d, ours: %q: want only same-version updates of a relist", i, ours[i])
				}
			}
		}
	})
}

func TestDifferentialResurrectedDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, 0)
		p.state("a", true)
		p.addHandler()
		p.run()
		p.same("initial list", true)
		p.event(watch.Added, "b")
		p.event(watch.Deleted, "b") // b@3
		p.same("add and delete", true)
		// b again at a version older than its deletion: client-go adds it
		// back; ours refuses it (a resurrected delete).
		p.send(watch.Event{Type: watch.Added, Object: pod("b", "2")})
		time.Sleep(time.Minute)
		stock, ours := p.step()
		if !slices.Equal(stock[0], []string{"add b@2 initial=false"}) {
			t.Errorf("client-go: %q", stock[0])
		}
		for _, c := range ours[0] {
			if c == "add b@2 initial=false" {
				t.Errorf("ours applied a resurrected delete: %q", ours[0])
			}
		}
		if _, ok, _ := p.ours.GetStore().GetByKey("b"); ok {
			t.Error("ours holds b after its deletion")
		}
	})
}

func TestDifferentialResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t, time.Second)
		for _, n := range []string{"a", "b", "c"} {
			p.state(n, true)
		}
		p.addHandler()
		p.run()
		p.same("initial list", true)
		time.Sleep(time.Second)
		p.same("first resync", false)
		p.event(watch.Modified, "b")
		p.same("watch event", true)
		time.Sleep(time.Second)
		p.same("second resync", false)
	})
}

func isTombstone(call string) bool {
	return len(call) > len("delete tombstone") && call[:len("delete tombstone")] == "delete tombstone"
}
