package clients

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/wirewait"
	"github.com/steadywatch/steadywatch/metrics"
)

// ScopeChecked is a client that lists through a decoding client once it has
// confirmed that this client lists what the caller's ListerWatcher lists
// (Scoped, Inferred). Confirmed returns the decoding client from then on,
// nil before (and for good after a mismatch).
type ScopeChecked interface {
	Lister
	Confirmed() Lister
	PipelineFilter() interface{ Keep(m metav1.Object) bool }
	IsWatchListSemanticsUnSupported() bool
}

var (
	_ ScopeChecked = (*Scoped)(nil)
	_ ScopeChecked = (*Inferred)(nil)

	_ RetriesInside = (*Inferred)(nil)
)

// Inferred is the client of an informer built for a hook that hands it only
// a ListerWatcher and an example object (controller-runtime's
// cache.Options.NewInformer), given a way to build decoding clients for the
// example object's resource in any namespace (NewDec). Nothing in the
// ListerWatcher says which namespace it lists (a multi-namespace cache
// builds one per namespace through the same hook), so Inferred finds it:
// before a list, while undecided, it compares a limit=1 list of the
// decoding client for every namespace with a limit=1 list of LW of the same
// snapshot (its first object and the number of objects the server reports)
// and, when they differ, with one of the first object's namespace. LW's is
// always the newest list, never one at a resourceVersion; the decoding
// client's lists are at LW's resourceVersion where it differs.
// The decoding client that lists exactly what LW lists then sends every
// list and watch from then on (confirmed for good). Where none does (LW
// sets a selector, or filters its own lists), every list and watch goes
// through LW from then on, logged and counted (MismatchReason); where no
// decoding client can be built, the same with NoClientReason. Where the
// lists cannot tell (LW lists nothing, or every object is in one
// namespace, which LW may or may not be limited to), that list goes
// through LW and the next list checks again.
//
// Every request of the check goes after one of the decoding client's (the
// every-namespace limit=1 list): when the server refuses it, the list or
// watch fails with that error, and LW (whose client may retry on its own)
// sends nothing. When a later request of the check fails, that list or
// watch goes through LW; after maxUncheckedLists such failures, every one
// does, logged and counted.
//
// Inferred declares that client-go may retry its requests on its own
// (RetriesInside) while its lists go through LW and LW declares it: once
// the scope is found not to match, and from a check that could not settle
// it until one does. Before the first check it does not: the first request
// runs the check (a reflector's limit=1 read of the current
// resourceVersion), and the reflector asks again before it chooses its list.
type Inferred struct {
	// LW is the caller's ListerWatcher as a client.
	LW Lister
	// NewDec returns the decoding client for the example object's resource
	// in namespace ("" for every namespace, and for a cluster-scoped
	// resource).
	NewDec func(namespace string) (Lister, error)
	// Name and Metrics name and count a fallback to LW, with MismatchReason
	// or NoClientReason.
	Name                           string
	Metrics                        metrics.Recorder
	MismatchReason, NoClientReason string

	mu        sync.Mutex
	unchecked int    // checks that failed (an error of LW, not a mismatch)
	unsettled bool   // the last check could not settle the scope: requests go through LW
	state     int32  // scopeUnchecked, scopeConfirmed or scopeMismatch
	dec       Lister // the confirmed decoding client
	decs      map[string]Lister
}

// PipelineFilter forwards LW's filter: the watch pipeline applies it.
func (c *Inferred) PipelineFilter() interface{ Keep(m metav1.Object) bool } {
	return pipelineFilter(c.LW)
}

// IsWatchListSemanticsUnSupported forwards LW's declaration.
func (c *Inferred) IsWatchListSemanticsUnSupported() bool {
	d, ok := c.LW.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && d.IsWatchListSemanticsUnSupported()
}

// RetriesInside implements RetriesInside: true while lists go through LW
// (after a mismatch, or a check that could not settle the scope) and LW's
// client may retry on its own.
func (c *Inferred) RetriesInside() bool {
	c.mu.Lock()
	viaLW := c.state == scopeMismatch || c.state == scopeUnchecked && c.unsettled
	c.mu.Unlock()
	ri, ok := c.LW.(RetriesInside)
	return viaLW && ok && ri.RetriesInside()
}

// Confirmed returns the decoding client once its scope is confirmed, else
// nil.
func (c *Inferred) Confirmed() Lister {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == scopeConfirmed {
		return c.dec
	}
	return nil
}

func (c *Inferred) load() (int32, Lister) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.dec
}

// client returns the (cached) decoding client for namespace.
func (c *Inferred) client(namespace string) (Lister, error) {
	c.mu.Lock()
	d, ok := c.decs[namespace]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := c.NewDec(namespace)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decs == nil {
		c.decs = map[string]Lister{}
	}
	c.decs[namespace] = d
	return d, nil
}

// decide settles the scope once (a later decision is ignored) and logs and
// counts a fallback.
func (c *Inferred) decide(ctx context.Context, state int32, dec Lister, reason, detail string) {
	c.mu.Lock()
	if c.state != scopeUnchecked {
		c.mu.Unlock()
		return
	}
	c.state, c.dec = state, dec
	c.mu.Unlock()
	log := klog.FromContext(ctx).WithValues("lister", c.Name)
	if state == scopeConfirmed {
		log.V(2).Info("steadywatch's own client lists what the hook's ListerWatcher lists; every list and watch goes through it, lists decoded item by item", "scope", detail)
		return
	}
	c.Metrics.Fallback(c.Name, reason)
	log.Info("Listing and watching through the hook's ListerWatcher from now on (client-go's retries, lists read whole): steadywatch's own client was not shown to list what it lists",
		"reason", reason, "detail", detail)
}

// page is what a limit=1 list tells: its first object's key and namespace,
// the number of objects the server reports (known unless a selector is
// set) and the resourceVersion it was served at.
type page struct {
	key, namespace, rv string
	total              int64
	known              bool
}

func readPage(obj runtime.Object) (page, error) {
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return page{}, err
	}
	items, err := meta.ExtractListWithAlloc(obj)
	if err != nil {
		return page{}, err
	}
	p := page{rv: lm.GetResourceVersion()}
	p.total, p.known = listTotal(lm, len(items))
	if len(items) > 0 {
		m, err := meta.Accessor(items[0])
		if err != nil {
			return page{}, err
		}
		p.namespace = m.GetNamespace()
		p.key = m.GetName()
		if p.namespace != "" {
			p.key = p.namespace + "/" + p.key
		}
	}
	return p, nil
}

// probe lists one object of l at rv ("" for the newest), with o's
// selectors.
func probe(ctx context.Context, l Lister, o metav1.ListOptions, rv string) (page, error) {
	ctx, cancel := untraced(ctx)
	defer cancel()
	obj, err := l.List(ctx, metav1.ListOptions{LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector, Limit: 1, ResourceVersion: rv})
	if err != nil {
		return page{}, err
	}
	return readPage(obj)
}

// probeSnapshot is probe of l's newest list, and again at rv when that is
// of another snapshot than rv's: most often nothing was written between
// the two probes, and no request names a resourceVersion, which a server
// whose watch cache lags may answer 504 (kubernetes/kubernetes#97294).
func probeSnapshot(ctx context.Context, l Lister, o metav1.ListOptions, rv string) (page, error) {
	p, err := probe(ctx, l, o, "")
	if err != nil || p.rv == rv {
		return p, err
	}
	return probe(ctx, l, o, rv)
}

func (c *Inferred) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l, err := c.pick(ctx, o)
	if err != nil {
		return nil, err
	}
	return l.List(ctx, o)
}

// Watch goes through the client List would list through: a streaming list
// (or a watch before any list) decides the scope as a list does.
func (c *Inferred) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	l, err := c.pick(ctx, o)
	if err != nil {
		return nil, err
	}
	return l.Watch(ctx, o)
}

// pick returns the client a list or watch with o's selectors goes
// through: the confirmed decoding client, or LW; deciding the scope first
// while it is undecided (but for a list's next page, which goes where its
// first page went).
func (c *Inferred) pick(ctx context.Context, o metav1.ListOptions) (Lister, error) {
	switch state, dec := c.load(); state {
	case scopeConfirmed:
		return dec, nil
	case scopeMismatch:
		return c.LW, nil
	}
	if o.Continue != "" {
		// The list's first page went through LW (its check did not settle
		// the scope): the next pages follow it, with LW's continue token,
		// and check nothing.
		return c.LW, nil
	}
	if pipelineFilter(c.LW) != nil {
		c.decide(ctx, scopeMismatch, nil, c.MismatchReason, "the hook's ListerWatcher filters its own lists")
		return c.LW, nil
	}
	all, err := c.client("")
	if err != nil {
		c.decide(ctx, scopeMismatch, nil, c.NoClientReason, err.Error())
		return c.LW, nil
	}
	ns, settled, err := c.infer(ctx, all, o)
	switch {
	case err != nil:
		return nil, err
	case !settled:
		c.mu.Lock()
		c.unsettled = true
		c.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("cannot tell yet which namespace the hook's ListerWatcher lists; this request goes through it, the next list or watch checks again", "lister", c.Name)
		return c.LW, nil
	}
	if state, _ := c.load(); state == scopeUnchecked {
		dec, err := c.client(ns)
		if err != nil {
			c.decide(ctx, scopeMismatch, nil, c.NoClientReason, err.Error())
			return c.LW, nil
		}
		scope := "namespace " + ns
		if ns == "" {
			scope = "every namespace"
		}
		c.decide(ctx, scopeConfirmed, dec, "", scope)
	}
	if state, dec := c.load(); state == scopeConfirmed {
		return dec, nil
	}
	return c.LW, nil
}

// infer returns the namespace whose decoding client lists what LW lists
// ("" for every namespace), with settled true; or settled false when the
// lists cannot tell yet. A mismatch is decided inside (settled true, the
// state scopeMismatch).
func (c *Inferred) infer(ctx context.Context, all Lister, o metav1.ListOptions) (string, bool, error) {
	ap, err := probe(ctx, all, o, "")
	if err != nil {
		return "", false, err
	}
	// LW's list is the newest, never at a resourceVersion: a server whose
	// watch cache lags answers a list at one 504 with a Retry-After
	// (kubernetes/kubernetes#97294), which LW's client may retry on its own
	// up to 10 times (rest/with_retry.go). When LW's answer is of another
	// snapshot, the decoding client is asked again at LW's resourceVersion:
	// a resourceVersion with a limit and no resourceVersionMatch is Exact on
	// every apiserver (the legacy form, before v1.19 the only one).
	lp, err := probe(ctx, c.LW, o, "")
	if err != nil {
		return c.checkFailed(ctx, err)
	}
	if lp.rv != ap.rv {
		if ap, err = probe(ctx, all, o, lp.rv); err != nil {
			return c.checkFailed(ctx, err)
		}
		if ap.rv != lp.rv {
			return c.checkFailed(ctx, fmt.Errorf("asked for a list at resourceVersion %q, the server answered at %q", lp.rv, ap.rv))
		}
	}
	switch {
	case !lp.known && o.LabelSelector == "" && o.FieldSelector == "":
		// An apiserver leaves remainingItemCount out of a list with a
		// selector: LW sets one of its own (or its server leaves it out of
		// every list of this kind: v1.18's metadata-only lists).
		c.decide(ctx, scopeMismatch, nil, c.MismatchReason, "the hook's ListerWatcher's list tells no number of objects: it lists with a selector of its own, or its server does not count this kind of list")
		return "", true, nil
	case !lp.known || !ap.known:
		c.decide(ctx, scopeMismatch, nil, c.MismatchReason, "lists with a selector tell no number of objects to compare scopes with")
		return "", true, nil
	case lp.key == "":
		// LW lists nothing now: no namespace to infer.
		return "", false, nil
	case lp.key == ap.key && lp.total == ap.total:
		if lp.namespace == "" {
			return "", true, nil // a cluster-scoped resource
		}
		// LW lists as much as every namespace. It may still be limited to
		// the namespace of its first object, when every object is there.
		nsDec, err := c.client(lp.namespace)
		if err != nil {
			c.decide(ctx, scopeMismatch, nil, c.NoClientReason, err.Error())
			return "", true, nil
		}
		np, err := probeSnapshot(ctx, nsDec, o, ap.rv)
		if err != nil {
			return c.checkFailed(ctx, err)
		}
		if np.total == ap.total {
			return "", false, nil
		}
		return "", true, nil
	case lp.namespace == "":
		c.decide(ctx, scopeMismatch, nil, c.MismatchReason, fmt.Sprintf("the hook's ListerWatcher lists %d objects at resourceVersion %s, steadywatch's client %d", lp.total, ap.rv, ap.total))
		return "", true, nil
	}
	nsDec, err := c.client(lp.namespace)
	if err != nil {
		c.decide(ctx, scopeMismatch, nil, c.NoClientReason, err.Error())
		return "", true, nil
	}
	np, err := probeSnapshot(ctx, nsDec, o, ap.rv)
	if err != nil {
		return c.checkFailed(ctx, err)
	}
	if np.key != lp.key || np.total != lp.total {
		c.decide(ctx, scopeMismatch, nil, c.MismatchReason, fmt.Sprintf("at resourceVersion %s the hook's ListerWatcher lists %d objects from %s, steadywatch's client %d from %s in every namespace and %d from %s in namespace %s",
			ap.rv, lp.total, lp.key, ap.total, ap.key, np.total, np.key, lp.namespace))
		return "", true, nil
	}
	return lp.namespace, true, nil
}

// checkFailed counts a check that failed (LW's list, or a decoding client's
// at LW's resourceVersion, which a server whose watch cache lags behind
// answers 504, kubernetes/kubernetes#97294): the request goes through
// LW, and the next one checks again, up to maxUncheckedLists checks; then
// every request goes through LW, logged and counted.
func (c *Inferred) checkFailed(ctx context.Context, err error) (string, bool, error) {
	c.mu.Lock()
	c.unchecked++
	n := c.unchecked
	c.mu.Unlock()
	if n < maxUncheckedLists {
		klog.FromContext(ctx).V(2).Info("could not compare the hook's ListerWatcher's scope with steadywatch's client; checking on the next list or watch", "lister", c.Name, "err", err)
		return "", false, nil
	}
	c.decide(ctx, scopeMismatch, nil, c.MismatchReason, fmt.Sprintf("the scope check failed %d times: %v", n, err))
	return "", true, nil
}

// untraced returns ctx's cancellation, deadline, logger and request bound
// (wirewait.WithBound) without its other values: the scope check's requests
// are not the list's or watch's own, so they stay out of the HTTP trace
// with which the lister counts the requests written for one call (and
// logs more than one as a retry inside client-go).
func untraced(ctx context.Context) (context.Context, context.CancelFunc) {
	pctx := klog.NewContext(context.Background(), klog.FromContext(ctx))
	if d := wirewait.BoundFrom(ctx, 0); d != 0 {
		pctx = wirewait.WithBound(pctx, d)
	}
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); ok {
		pctx, cancel = context.WithDeadline(pctx, dl)
	} else {
		pctx, cancel = context.WithCancel(pctx)
	}
	stop := context.AfterFunc(ctx, cancel)
	return pctx, func() {
		stop()
		cancel()
	}
}
