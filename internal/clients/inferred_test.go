package clients

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// cms serves the ConfigMaps of the namespaces it lists ("" for every
// namespace), sorted by key as an apiserver does, with remainingItemCount
// on a limited page unless noCount; it records what it was asked.
type cms struct {
	ns, keys []string // the objects, "namespace/name"
	scope    string
	noCount  bool
	err      error
	mu       sync.Mutex
	lists    []metav1.ListOptions
	watches  int
}

func (c *cms) List(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	c.lists = append(c.lists, o)
	c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	for i, k := range c.keys {
		if c.scope == "" || c.ns[i] == c.scope {
			l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns[i], Name: k}})
		}
	}
	if o.Limit > 0 && int(o.Limit) < len(l.Items) {
		rest := int64(len(l.Items)) - o.Limit
		l.Items, l.Continue = l.Items[:o.Limit], "more"
		if !c.noCount {
			l.RemainingItemCount = &rest
		}
	}
	return l, nil
}

func (c *cms) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watches++
	return watch.NewEmptyWatch(), nil
}

func (c *cms) fullLists() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, o := range c.lists {
		if o.Limit == 0 {
			n++
		}
	}
	return n
}

// world: three objects in "a", one in "b".
func world(scope string) *cms {
	return &cms{ns: []string{"a", "a", "a", "b"}, keys: []string{"a1", "a2", "a3", "b1"}, scope: scope}
}

func inferred(lw *cms, decs map[string]*cms, rec *testfake.Recorder) *Inferred {
	return &Inferred{
		LW: lw,
		NewDec: func(ns string) (Lister, error) {
			if d, ok := decs[ns]; ok {
				return d, nil
			}
			return nil, errors.New("no client")
		},
		Name: "v1/configmaps", Metrics: rec, MismatchReason: "mismatch", NoClientReason: "no-client",
	}
}

func TestInferredFindsTheScopeOfTheCallersListerWatcher(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lw         *cms
		want       string // the decoding client's scope that lists and watches; "lw" for the caller's
		fallbacks  []string
		undecided  bool
		lwFullList int
	}{
		{name: "one namespace", lw: world("a"), want: "a"},
		{name: "another namespace", lw: world("b"), want: "b"},
		{name: "every namespace", lw: world(""), want: ""},
		{name: "a selector of its own", lw: &cms{ns: []string{"a", "a", "b"}, keys: []string{"a1", "a2", "b1"}, noCount: true}, want: "lw", fallbacks: []string{"mismatch"}, lwFullList: 1},
		{name: "nothing listed yet", lw: &cms{}, want: "lw", undecided: true, lwFullList: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decs := map[string]*cms{"": world(""), "a": world("a"), "b": world("b")}
			rec := &testfake.Recorder{}
			c := inferred(tc.lw, decs, rec)
			ctx := t.Context()
			if _, err := c.List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Watch(ctx, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := tc.lw.fullLists(); got != tc.lwFullList {
				t.Errorf("the caller's ListerWatcher sent %d full lists, want %d", got, tc.lwFullList)
			}
			if tc.want != "lw" {
				if d := decs[tc.want]; d.fullLists() != 1 || d.watches != 1 {
					t.Errorf("the decoding client of %q sent %d full lists and %d watches, want 1 and 1", tc.want, d.fullLists(), d.watches)
				}
				if tc.lw.watches != 0 {
					t.Errorf("the caller's ListerWatcher watched")
				}
				if c.Confirmed() != decs[tc.want] {
					t.Errorf("Confirmed is not the decoding client of %q", tc.want)
				}
			}
			if !slices.Equal(rec.Labels(testfake.Fallback), tc.fallbacks) {
				t.Errorf("fallbacks %v, want %v", rec.Labels(testfake.Fallback), tc.fallbacks)
			}
			if state, _ := c.load(); (state == scopeUnchecked) != tc.undecided {
				t.Errorf("state %d, undecided want %v", state, tc.undecided)
			}
		})
	}
}

// Every object in one namespace: the caller's ListerWatcher may list only
// it or every namespace, which no list tells apart. Each list goes through
// it, until one does.
func TestInferredWaitsWhileTheScopeIsAmbiguous(t *testing.T) {
	onlyA := &cms{ns: []string{"a", "a"}, keys: []string{"a1", "a2"}}
	decs := map[string]*cms{"": onlyA, "a": {ns: onlyA.ns, keys: onlyA.keys, scope: "a"}}
	lw := &cms{ns: onlyA.ns, keys: onlyA.keys, scope: "a"}
	c := inferred(lw, decs, &testfake.Recorder{})
	for range 2 {
		if _, err := c.List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if lw.fullLists() != 2 || c.Confirmed() != nil {
		t.Fatalf("while ambiguous: %d full lists of the caller's (want 2), confirmed %v", lw.fullLists(), c.Confirmed())
	}
	// An object appears in "b": the caller's ListerWatcher is "a"'s.
	for _, l := range []*cms{onlyA, decs["a"], lw} {
		l.ns, l.keys = append(slices.Clone(l.ns), "b"), append(slices.Clone(l.keys), "b1")
	}
	if _, err := c.List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if c.Confirmed() != decs["a"] || lw.fullLists() != 2 {
		t.Fatalf("confirmed %v (want a's client), caller's full lists %d (want 2)", c.Confirmed(), lw.fullLists())
	}
}

// The decoding client's own request fails: the list fails with its error
// and the caller's ListerWatcher sends nothing (its client may retry on its
// own). A failing check of the caller's falls back after three.
func TestInferredFailures(t *testing.T) {
	refused := errors.New("429")
	decs := map[string]*cms{"": world(""), "a": world("a")}
	decs[""].err = refused
	lw := world("a")
	c := inferred(lw, decs, &testfake.Recorder{})
	if _, err := c.List(t.Context(), metav1.ListOptions{}); !errors.Is(err, refused) {
		t.Fatalf("err = %v, want the decoding client's", err)
	}
	if len(lw.lists) != 0 {
		t.Fatalf("the caller's ListerWatcher sent %v", lw.lists)
	}

	decs[""].err = nil
	lw.err = errors.New("504 too large resource version")
	rec := &testfake.Recorder{}
	c = inferred(lw, decs, rec)
	for i := range maxUncheckedLists {
		_, _ = c.List(t.Context(), metav1.ListOptions{})
		if state, _ := c.load(); (state == scopeMismatch) != (i == maxUncheckedLists-1) {
			t.Fatalf("after %d failed checks: state %d", i+1, state)
		}
	}
	if !slices.Equal(rec.Labels(testfake.Fallback), []string{"mismatch"}) {
		t.Fatalf("fallbacks %v", rec.Labels(testfake.Fallback))
	}
}
