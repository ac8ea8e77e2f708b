package clients

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/internal/testfake"
)

// atRV answers cms's lists at resourceVersion rv; with exactErr, a list at
// a resourceVersion fails with it (a server whose watch cache lags).
type atRV struct {
	*cms
	rv       string
	exactErr error
}

func (c *atRV) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if c.exactErr != nil && o.ResourceVersion != "" {
		c.cms.mu.Lock()
		c.cms.lists = append(c.cms.lists, o)
		c.cms.mu.Unlock()
		return nil, c.exactErr
	}
	obj, err := c.cms.List(ctx, o)
	if err != nil {
		return nil, err
	}
	if o.ResourceVersion != "" {
		c.rv = o.ResourceVersion // served at the version asked for
	}
	lm, _ := meta.ListAccessor(obj)
	lm.SetResourceVersion(c.rv)
	return obj, nil
}

// The caller's ListerWatcher is never asked for a list at a
// resourceVersion: its client may retry a 504 "too large resource version"
// 10 times on its own. The decoding client is asked again at the
// resourceVersion of the caller's answer when it was of another snapshot.
func TestInferredAsksTheCallersListerWatcherOnlyForTheNewest(t *testing.T) {
	all, a := &atRV{cms: world(""), rv: "7"}, &atRV{cms: world("a"), rv: "7"}
	lw := &atRV{cms: world("a"), rv: "9"}
	c := &Inferred{
		LW: lw,
		NewDec: func(ns string) (Lister, error) {
			return map[string]Lister{"": all, "a": a}[ns], nil
		},
		Name: "v1/configmaps", Metrics: &testfake.Recorder{}, MismatchReason: "mismatch", NoClientReason: "no-client",
	}
	if _, err := c.List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range lw.lists {
		if o.ResourceVersion != "" {
			t.Errorf("the caller's ListerWatcher was asked for a list at resourceVersion %q", o.ResourceVersion)
		}
	}
	var at9 int
	for _, o := range append(all.lists, a.lists...) {
		if o.Limit == 1 && o.ResourceVersion == "9" {
			at9++
		}
	}
	if at9 != 2 {
		t.Errorf("the decoding clients' limit=1 lists at the caller's resourceVersion 9: %d, want 2 (every namespace, then a): %v %v", at9, all.lists, a.lists)
	}
	if c.Confirmed() != Lister(a) {
		t.Errorf("confirmed %v, want the decoding client of namespace a", c.Confirmed())
	}
}

// A lagging server refuses every list at a resourceVersion: each check
// costs the caller's ListerWatcher one newest limit=1 list, and after
// maxUncheckedLists failed checks every request goes through it.
func TestInferredCheckAtTheCallersVersionFails(t *testing.T) {
	tooLarge := errors.New("504 too large resource version")
	all := &atRV{cms: world(""), rv: "7", exactErr: tooLarge}
	lw := &atRV{cms: world("a"), rv: "9"}
	rec := &testfake.Recorder{}
	c := &Inferred{
		LW: lw,
		NewDec: func(ns string) (Lister, error) {
			if ns == "" {
				return all, nil
			}
			return &atRV{cms: world(ns), rv: "7", exactErr: tooLarge}, nil
		},
		Name: "v1/configmaps", Metrics: rec, MismatchReason: "mismatch", NoClientReason: "no-client",
	}
	for i := range maxUncheckedLists + 1 {
		if _, err := c.List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatalf("list %d: %v", i+1, err)
		}
	}
	probes, full := 0, 0
	for _, o := range lw.lists {
		switch {
		case o.ResourceVersion != "":
			t.Errorf("the caller's ListerWatcher was asked for a list at resourceVersion %q", o.ResourceVersion)
		case o.Limit == 1:
			probes++
		default:
			full++
		}
	}
	if probes != maxUncheckedLists || full != maxUncheckedLists+1 {
		t.Errorf("the caller's ListerWatcher sent %d limit=1 and %d full lists, want %d and %d", probes, full, maxUncheckedLists, maxUncheckedLists+1)
	}
	if state, _ := c.load(); state != scopeMismatch || len(rec.Labels(testfake.Fallback)) != 1 {
		t.Errorf("state %d, fallbacks %v: want the fallback after %d failed checks", state, rec.Labels(testfake.Fallback), maxUncheckedLists)
	}
}

// retriesInside is a caller's client whose requests client-go may retry on
// its own (lister.FromListerWatcher over a ListWatch not of the SDK).
type retriesInside struct{ Lister }

func (retriesInside) RetriesInside() bool { return true }

// Inferred declares that client-go retries inside it exactly while its
// lists go through the caller's ListerWatcher: not before the first check
// (which the first request runs), from a check that could not settle the
// scope until one does, never once the decoding client is confirmed, and
// for good after a mismatch.
func TestInferredRetriesInsideWhileListsGoThroughTheCallersClient(t *testing.T) {
	tooLarge := errors.New("504 too large resource version")
	a := &atRV{cms: world("a"), rv: "7", exactErr: tooLarge}
	all := &atRV{cms: world(""), rv: "7", exactErr: tooLarge}
	lw := &atRV{cms: world("a"), rv: "9"}
	c := &Inferred{
		LW: retriesInside{lw},
		NewDec: func(ns string) (Lister, error) {
			return map[string]Lister{"": all, "a": a}[ns], nil
		},
		Name: "v1/configmaps", Metrics: &testfake.Recorder{}, MismatchReason: "mismatch", NoClientReason: "no-client",
	}
	list := func(want bool, when string) {
		t.Helper()
		if _, err := c.List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := c.RetriesInside(); got != want {
			t.Errorf("RetriesInside %t %s, want %t", got, when, want)
		}
	}
	if c.RetriesInside() {
		t.Error("RetriesInside before the first check, want false: the first request runs it")
	}
	list(true, "after a check that could not settle (the read at the caller's resourceVersion answered 504)")
	all.exactErr, a.exactErr = nil, nil // the watch cache caught up
	list(false, "once the decoding client is confirmed")

	for _, declares := range []bool{true, false} {
		var lw Lister = world("a")
		if declares {
			lw = retriesInside{lw}
		}
		mismatch := &Inferred{LW: lw, NewDec: func(string) (Lister, error) { return nil, errors.New("no client") },
			Name: "v1/configmaps", Metrics: &testfake.Recorder{}, MismatchReason: "mismatch", NoClientReason: "no-client"}
		if _, err := mismatch.List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := mismatch.RetriesInside(); got != declares {
			t.Errorf("RetriesInside %t after the fallback to a caller's ListerWatcher that declares it %t", got, declares)
		}
	}
}

// A list's next page goes where its first page went: while the scope is
// unsettled, through the caller's ListerWatcher with its continue token,
// and no page checks the scope again.
func TestInferredNextPagesFollowTheFirstThroughTheCallersClient(t *testing.T) {
	tooLarge := errors.New("504 too large resource version")
	all := &atRV{cms: world(""), rv: "7", exactErr: tooLarge}
	lw := &atRV{cms: world("a"), rv: "9"}
	c := &Inferred{
		LW: lw,
		NewDec: func(ns string) (Lister, error) {
			return map[string]Lister{"": all, "a": &atRV{cms: world("a"), rv: "7", exactErr: tooLarge}}[ns], nil
		},
		Name: "v1/configmaps", Metrics: &testfake.Recorder{}, MismatchReason: "mismatch", NoClientReason: "no-client",
	}
	if _, err := c.List(t.Context(), metav1.ListOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	all.mu.Lock()
	checked := len(all.lists)
	all.mu.Unlock()
	lw.mu.Lock()
	before := len(lw.lists)
	lw.mu.Unlock()
	if _, err := c.List(t.Context(), metav1.ListOptions{Limit: 2, Continue: "more"}); err != nil {
		t.Fatal(err)
	}
	all.mu.Lock()
	rechecked := len(all.lists) - checked
	all.mu.Unlock()
	lw.mu.Lock()
	sent := lw.lists[before:]
	lw.mu.Unlock()
	if rechecked != 0 || len(sent) != 1 || sent[0].Continue != "more" {
		t.Errorf("the next page: %d more reads of steadywatch's client, the caller's ListerWatcher sent %+v; want none, and the page through it", rechecked, sent)
	}
}
