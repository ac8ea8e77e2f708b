package clients

import (
	"context"
	"fmt"

	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/metrics"
)

// Lister is a list/watch client (lister.Client).
type Lister interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// filterer is a client whose ListerWatcher filters its own lists and
// watches (shard.Wrap), as lister.FromListerWatcher's adapter says.
type filterer interface {
	PipelineFilter() interface{ Keep(m metav1.Object) bool }
}

func pipelineFilter(c Lister) interface{ Keep(m metav1.Object) bool } {
	if f, ok := c.(filterer); ok {
		return f.PipelineFilter()
	}
	return nil
}

// PipelineFilter forwards LW's filter: the watch pipeline applies it.
func (c *Scoped) PipelineFilter() interface{ Keep(m metav1.Object) bool } {
	return pipelineFilter(c.LW)
}

// IsWatchListSemanticsUnSupported forwards LW's declaration.
func (c *Scoped) IsWatchListSemanticsUnSupported() bool {
	d, ok := c.LW.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && d.IsWatchListSemanticsUnSupported()
}

// Scoped lists through Dec, checked once against LW's scope, and watches
// through LW (lister.WrapDecoding's client).
type Scoped struct {
	// LW is the caller's ListerWatcher as a client; Dec the decoding client.
	LW, Dec Lister
	// Name and Metrics name and count the fallback to LW (reason Reason).
	Name    string
	Metrics metrics.Recorder
	Reason  string

	// state is scopeUnchecked until one list decides it (scopeConfirmed:
	// every list goes through dec; scopeMismatch: through lw), then never
	// changes again.
	state     atomic.Int32
	unchecked atomic.Int32 // checks that failed (an error, not a mismatch)
}

const (
	scopeUnchecked int32 = iota
	scopeConfirmed
	scopeMismatch
)

// settle decides the scope (scopeConfirmed or scopeMismatch) unless a
// concurrent list decided it first, and returns the decision that holds.
func (c *Scoped) settle(s int32) (held int32, decided bool) {
	if c.state.CompareAndSwap(scopeUnchecked, s) {
		return s, true
	}
	return c.state.Load(), false
}

// Confirmed returns Dec once a list of it matched LW's scope: from then on
// every list goes through Dec and the decision never changes, so a caller
// may list through Dec directly (item by item, where Dec decodes its lists
// itself). It returns nil until then, and for good once a list did not
// match.
func (c *Scoped) Confirmed() Lister {
	if c.state.Load() == scopeConfirmed {
		return c.Dec
	}
	return nil
}

// maxUncheckedLists is how many lists of dec may go out while the check
// fails (the caller's server refuses the limit=1 list at that
// resourceVersion) before lists go through lw: never an unbounded number of
// extra requests, never a scope left unchecked for good.
const maxUncheckedLists = 3

func (c *Scoped) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	switch c.state.Load() {
	case scopeMismatch:
		return c.LW.List(ctx, o)
	case scopeConfirmed:
		return c.Dec.List(ctx, o)
	}
	if pipelineFilter(c.LW) != nil {
		// lw filters what it lists itself (shard.Wrap: a shardSelector, and
		// the hash range applied on the client where the server ignores
		// it). dec's lists carry neither, and the scope check cannot see it:
		// lw's limit=1 page keeps the server's remainingItemCount. (A filter
		// is lw's for good: no list of dec was confirmed before.)
		if _, decided := c.settle(scopeMismatch); decided {
			c.Metrics.Fallback(c.Name, c.Reason)
			klog.FromContext(ctx).Info("The caller's ListerWatcher filters its own lists; listing through it from now on, not decoded item by item",
				"lister", c.Name, "reason", c.Reason)
		}
		return c.LW.List(ctx, o)
	}
	obj, err := c.Dec.List(ctx, o)
	if err != nil || c.state.Load() == scopeConfirmed || o.Continue != "" {
		return obj, err
	}
	log := klog.FromContext(ctx).WithValues("lister", c.Name)
	detail, err := c.checkScope(ctx, obj, o)
	switch {
	case err != nil && c.unchecked.Add(1) < maxUncheckedLists:
		// Not confirmed: the next list checks again.
		log.V(2).Info("could not check the decoding client's scope against the caller's ListerWatcher; checking on the next list", "err", err)
		return obj, nil
	case err != nil:
		detail = fmt.Sprintf("the scope check failed %d times: %v", maxUncheckedLists, err)
	case detail == "":
		held, decided := c.settle(scopeConfirmed)
		if decided {
			log.V(2).Info("the decoding client lists what the caller's ListerWatcher lists; lists are decoded item by item")
		}
		if held == scopeConfirmed {
			return obj, nil
		}
		// A concurrent list decided the scope does not match.
		return c.LW.List(ctx, o)
	}
	// When a concurrent list confirmed the scope first, that decision
	// stands for the lists after this one; this one goes through lw.
	if _, decided := c.settle(scopeMismatch); decided {
		c.Metrics.Fallback(c.Name, c.Reason)
		log.Info("The decoding client does not list what the caller's ListerWatcher lists; listing through the caller's ListerWatcher from now on",
			"reason", c.Reason, "detail", detail)
	}
	return c.LW.List(ctx, o)
}

// checkScope compares list (dec's answer to o) with a limit=1 list of lw at
// the same resourceVersion, and returns what differs ("" when nothing).
func (c *Scoped) checkScope(ctx context.Context, list runtime.Object, o metav1.ListOptions) (string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	p := o
	// A resourceVersion with a limit and no resourceVersionMatch is Exact on
	// every apiserver (the legacy form, before v1.19 the only one).
	p.Limit, p.Continue, p.ResourceVersion, p.ResourceVersionMatch = 1, "", lm.GetResourceVersion(), ""
	probe, err := c.LW.List(ctx, p)
	if err != nil {
		return "", err
	}
	pm, err := meta.ListAccessor(probe)
	if err != nil {
		return "", err
	}
	mine, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return "", err
	}
	theirs, err := meta.ExtractListWithAlloc(probe)
	if err != nil {
		return "", err
	}
	if len(theirs) > 0 {
		k, _ := cache.MetaNamespaceKeyFunc(theirs[0])
		found := false
		for _, obj := range mine {
			if mk, _ := cache.MetaNamespaceKeyFunc(obj); mk == k {
				found = true
				break
			}
		}
		if !found {
			return fmt.Sprintf("the caller's ListerWatcher lists %s, which the decoding client's list does not hold", k), nil
		}
	}
	myTotal, myKnown := listTotal(lm, len(mine))
	theirTotal, theirKnown := listTotal(pm, len(theirs))
	switch {
	case myKnown && theirKnown && myTotal != theirTotal:
		return fmt.Sprintf("the caller's ListerWatcher lists %d objects at resourceVersion %s, the decoding client %d", theirTotal, lm.GetResourceVersion(), myTotal), nil
	case !theirKnown && o.LabelSelector == "" && o.FieldSelector == "":
		// An apiserver leaves remainingItemCount out of a list with a
		// selector: lw sets one that o does not.
		return "the caller's ListerWatcher lists with a selector the decoding client does not have (set it in lister.Options)", nil
	}
	return "", nil
}

// listTotal returns the number of objects a list (page) with n items
// stands for, and whether it is known: a list without a continue token
// holds them all, a page tells the rest in remainingItemCount (left out by
// an apiserver when the list has a selector).
func listTotal(l metav1.ListInterface, n int) (int64, bool) {
	if l.GetContinue() == "" {
		return int64(n), true
	}
	if r := l.GetRemainingItemCount(); r != nil {
		return int64(n) + *r, true
	}
	return 0, false
}

func (c *Scoped) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return c.LW.Watch(ctx, o)
}
