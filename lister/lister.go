package lister

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
)

// Lister runs list calls with explicit semantics against one Client. It is
// safe for concurrent use.
type Lister struct {
	c Client
	o Options
}

// New returns a Lister. The zero Options are safe defaults.
func New(c Client, o Options) *Lister {
	return &Lister{c: c, o: o.withDefaults()}
}

// PageFunc receives one page (a list object with its items). It must not
// keep the page if memory is to stay bounded; returning an error stops the
// list and returns that error.
type PageFunc func(page runtime.Object) error

// PageOption configures ListPages.
type PageOption func(*pageConfig)

type pageConfig struct {
	onRestart func(fallback.Event) error
}

// OnRestart lets ListPages restart a list after pages were handed over
// (a continue token expired and the policy restarts): fn is called first and
// must discard every page received so far; the pages after it are a new
// snapshot. Without OnRestart, such a restart is refused and ListPages fails
// with ErrContinueExpired, so pages of two snapshots can never be mixed.
func OnRestart(fn func(ev fallback.Event) error) PageOption {
	return func(c *pageConfig) { c.onRestart = fn }
}

// List returns the whole list for q as one list object of the client's list
// type (all pages, one snapshot, no continue token), and its Record. Items
// are moved from each page into the result as the page arrives, so pages are
// not held twice.
func (l *Lister) List(ctx context.Context, q Query) (runtime.Object, *Record, error) {
	return l.list(ctx, q, l.baseOptions())
}

func (l *Lister) list(ctx context.Context, q Query, base metav1.ListOptions) (runtime.Object, *Record, error) {
	var acc runtime.Object
	rec, err := l.run(ctx, q, base, func(page runtime.Object) error {
		if acc == nil {
			acc = page
			if lm, err := meta.ListAccessor(page); err == nil && lm.GetRemainingItemCount() != nil {
				reserve(acc, *lm.GetRemainingItemCount())
			}
			return nil
		}
		return appendItems(acc, page)
	}, &pageConfig{onRestart: func(fallback.Event) error { acc = nil; return nil }})
	if err != nil {
		return nil, rec, err
	}
	if acc == nil {
		return nil, rec, fmt.Errorf("list %s: no page received", q)
	}
	if lm, err := meta.ListAccessor(acc); err == nil {
		lm.SetContinue("")
		lm.SetRemainingItemCount(nil)
		lm.SetResourceVersion(rec.ServedResourceVersion)
	}
	return acc, rec, nil
}

// ListPages runs q page by page and hands each page to page as it arrives;
// memory stays bounded by the page size (set it with q.WithLimit). The
// Record's RemainingItemCount (and each page's ListMeta) show progress.
func (l *Lister) ListPages(ctx context.Context, q Query, page PageFunc, opts ...PageOption) (*Record, error) {
	cfg := &pageConfig{}
	for _, o := range opts {
		o(cfg)
	}
	return l.run(ctx, q, l.baseOptions(), page, cfg)
}

// ReasonGetExactScan is the reason of the Event GetExact records when the
// server answered the single-object list at another resourceVersion even with
// a limit, and GetExact scans the collection at rv instead.
const ReasonGetExactScan fallback.ReasonCode = "get-exact-name-list-not-exact-scan-collection"

// GetExact returns the object name as it was at exactly resourceVersion rv:
// a list with fieldSelector=metadata.name=NAME at Exact(rv) (seed 001,
// "Impact on get calls"), with the same verification and fallbacks as List.
// An object that did not exist at rv is a NotFound error. If the client spans
// namespaces and several objects have that name, it is an error.
//
// Servers before v1.19 answer a list whose field selector names one object
// from that object's newest revision, ignoring resourceVersion and limit
// (k8s.io/apiserver v0.18 registry Store.List -> storage GetToList; verified
// on a real v1.18.19), so the single-object list is never exact there even
// with a limit. When that happens (the list fails with reason
// fallback.ReasonRule2MismatchWithLimit), GetExact scans the collection at
// Exact(rv) page by page (Options.PageSize; a paginated collection list is
// legacy Exact on those servers) and keeps only the object named name: one
// more list of the whole collection, never data from another resourceVersion.
// The Record then holds both attempts, the scan's event (ReasonGetExactScan)
// between them.
func (l *Lister) GetExact(ctx context.Context, name, rv string) (runtime.Object, *Record, error) {
	base := l.baseOptions()
	sel := fields.OneTermEqualSelector("metadata.name", name)
	if base.FieldSelector != "" {
		other, err := fields.ParseSelector(base.FieldSelector)
		if err != nil {
			return nil, nil, fmt.Errorf("get %q: field selector: %w", name, err)
		}
		sel = fields.AndSelectors(sel, other)
	}
	named := base
	named.FieldSelector = sel.String()
	list, rec, err := l.list(ctx, fallback.ExactQuery(rv), named)
	var le *Error
	if err != nil && errors.As(err, &le) && le.Reason == fallback.ReasonRule2MismatchWithLimit {
		return l.getExactByScan(ctx, name, rv, base, rec, err)
	}
	if err != nil {
		return nil, rec, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, rec, err
	}
	return oneNamed(items, name, rv, rec)
}

// getExactByScan lists the collection at Exact(rv) page by page and keeps
// the items named name; first is the failed single-object attempt.
func (l *Lister) getExactByScan(ctx context.Context, name, rv string, base metav1.ListOptions, first *Record, cause error) (runtime.Object, *Record, error) {
	q := fallback.ExactQuery(rv).WithLimit(l.o.PageSize)
	ev := fallback.Event{Reason: ReasonGetExactScan, Action: fallback.RetryWithLimit, Attempt: len(first.Requests),
		Before: fallback.ExactQuery(rv), After: q, Err: cause,
		Detail: "the server answered fieldSelector=metadata.name at another resourceVersion even with a limit (servers before v1.19 read one object at its newest revision); scanning the collection at the exact resourceVersion"}
	l.o.Metrics.Fallback(l.o.Name, string(ev.Reason))
	klog.FromContext(ctx).WithValues("lister", l.o.Name).V(2).Info("list fallback", "reason", string(ev.Reason),
		"action", ev.Action.String(), "before", ev.Before.String(), "after", ev.After.String(), "detail", ev.Detail)
	var found []runtime.Object
	scan, err := l.run(ctx, q, base, func(page runtime.Object) error {
		items, err := meta.ExtractList(page)
		if err != nil {
			return err
		}
		for _, it := range items {
			if m, aerr := meta.Accessor(it); aerr == nil && m.GetName() == name {
				found = append(found, it.DeepCopyObject())
			}
		}
		return nil
	}, &pageConfig{onRestart: func(fallback.Event) error { found = nil; return nil }})
	rec := &Record{
		Requested: first.Requested, Served: scan.Served, ServedResourceVersion: scan.ServedResourceVersion,
		Requests:           append(append([]SentRequest(nil), first.Requests...), scan.Requests...),
		Fallbacks:          append(append(append([]fallback.Event(nil), first.Fallbacks...), ev), scan.Fallbacks...),
		RemainingItemCount: scan.RemainingItemCount, Pages: scan.Pages, Items: scan.Items, Restarts: scan.Restarts,
		Duration: first.Duration + scan.Duration,
	}
	if err != nil {
		return nil, rec, err
	}
	return oneNamed(found, name, rv, rec)
}

func oneNamed(items []runtime.Object, name, rv string, rec *Record) (runtime.Object, *Record, error) {
	switch len(items) {
	case 0:
		return nil, rec, fmt.Errorf("get %q at resourceVersion %s: %w", name, rv, apierrors.NewNotFound(schema.GroupResource{}, name))
	case 1:
		return items[0], rec, nil
	}
	return nil, rec, fmt.Errorf("get %q at resourceVersion %s: %d objects have that name (client spans namespaces)", name, rv, len(items))
}

func (l *Lister) baseOptions() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: l.o.LabelSelector, FieldSelector: l.o.FieldSelector}
}

func (l *Lister) matchSupport(ctx context.Context) fallback.MatchSupport {
	switch l.o.Server.Capabilities(ctx).Get(compat.ResourceVersionMatch) {
	case compat.Yes:
		return fallback.MatchHonoured
	case compat.No:
		return fallback.MatchIgnored
	}
	return fallback.MatchUnknown
}

// run is the executor: send, classify, verify, ask fallback.Decide, act.
type run struct {
	l      *Lister
	ctx    context.Context
	log    logr.Logger
	rec    *Record
	base   metav1.ListOptions
	floor  string // NotOlderThan: the requested resourceVersion
	exact  string // Exact: the requested resourceVersion
	cfg    *pageConfig
	used   map[fallback.Budget]int
	bo     backoff.BackOff // 429/5xx/transport/served-older
	tooBo  backoff.BackOff // too-large without Retry-After
	newBo  backoff.BackOff // rule-1 retries
	tried  map[string]bool // newer RVs already tried
	handed int             // pages handed over for the current snapshot
}

// backOff returns *b, creating it on first use.
func (r *run) backOff(b *backoff.BackOff) backoff.BackOff {
	if *b == nil {
		*b = r.l.newBackOff()
	}
	return *b
}

func (l *Lister) newBackOff() backoff.BackOff {
	p := l.o.Policy.Backoff
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.InitialInterval
	b.MaxInterval = p.MaxInterval
	b.Multiplier = p.Multiplier
	b.RandomizationFactor = p.RandomizationFactor
	b.MaxElapsedTime = p.MaxElapsedTime
	b.Reset()
	return backoff.WithMaxRetries(b, uint64(p.MaxRetries))
}

func (l *Lister) run(ctx context.Context, q Query, base metav1.ListOptions, page PageFunc, cfg *pageConfig) (*Record, error) {
	start := time.Now()
	rec := &Record{Requested: q}
	r := &run{
		l: l, ctx: ctx, log: klog.FromContext(ctx).WithValues("lister", l.o.Name), rec: rec, base: base, cfg: cfg,
		used: map[fallback.Budget]int{}, tried: map[string]bool{},
	}
	err := r.loop(q, page)
	rec.Duration = time.Since(start)
	outcome := "ok"
	if err != nil {
		outcome = fallback.Classify(err).String()
		var le *Error
		switch {
		case errors.As(err, &le):
			outcome = le.Class.String()
		case errors.Is(err, fallback.ErrInvalidQuery):
			outcome = "invalid-query"
		}
	}
	l.o.Metrics.List(l.o.Name, q.Semantic.String(), outcome)
	return rec, err
}

func (r *run) loop(q Query, page PageFunc) error {
	if err := q.Validate(); err != nil {
		return err
	}
	switch q.Semantic {
	case fallback.NotOlderThan:
		r.floor = q.ResourceVersion
	case fallback.Exact:
		r.exact = q.ResourceVersion
	}
	p := r.l.o.Policy
	first, cur := q, q
	userContinue := q.Continue != ""
	listRV := "" // resourceVersion of the current snapshot's first page
	var match fallback.MatchSupport
	unproductive := 0 // requests that delivered no page: retries, fallbacks (pages are not counted)
	for attempt := 1; ; attempt++ {
		if unproductive >= r.l.o.MaxRequests {
			return &Error{Reason: "max-requests", Requested: r.rec.Requested, Last: cur, Attempt: attempt - 1, kind: ErrRetriesExhausted}
		}
		if cur.Continue == "" || attempt == 1 {
			// Continue pages carry neither RV nor match: the belief only
			// matters for first pages (and asking for it is not free).
			match = r.l.matchSupport(r.ctx)
		}
		opts := cur.ApplyTo(r.base, match.Form())
		if match.Form() == fallback.Legacy && cur.Semantic == fallback.Exact && cur.Continue == "" && cur.Limit == 0 {
			opts.Limit = r.l.o.PageSize // legacy servers apply Exact only with a limit
		}
		t0 := time.Now()
		obj, err := r.l.c.List(r.ctx, opts)
		dur := time.Since(t0)
		class := fallback.ClassifyRequest(opts, err)
		var servedRV, cont string
		var remaining *int64
		items := 0
		if err == nil {
			lm, aerr := meta.ListAccessor(obj)
			if aerr != nil {
				return &Error{Reason: "not-a-list", Class: fallback.Other, Requested: r.rec.Requested, Last: cur, Attempt: attempt, Err: aerr}
			}
			servedRV, cont, remaining = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
			items = meta.LenList(obj)
			class = r.verify(cur, servedRV, listRV)
		}
		r.rec.Requests = append(r.rec.Requests, SentRequest{Purpose: PurposePage, Options: opts, Form: match.Form(), Class: class,
			Err: err, ServedResourceVersion: servedRV, Items: items, MoreAfter: cont != "", Duration: dur})
		sem := cur.Semantic
		if cur.Continue != "" {
			sem = first.Semantic
		}
		s := fallback.Situation{Semantic: sem, HasLimit: opts.Limit > 0, HasContinue: opts.Continue != "", Match: match, Class: class}
		budget := fallback.BudgetFor(s.Normalize().Class)
		var pending time.Duration
		s.AttemptsLeft, pending = r.left(budget)
		d := fallback.Decide(s, p)
		if opts.Continue == "" && cur.ResourceVersion != "" {
			r.observe(s, fallback.CompareRV(servedRV, cur.ResourceVersion), servedRV, cur)
		}
		if r.log.V(4).Enabled() {
			r.log.V(4).Info("list request", "attempt", attempt, "resourceVersion", opts.ResourceVersion,
				"resourceVersionMatch", opts.ResourceVersionMatch, "limit", opts.Limit, "continue", opts.Continue != "",
				"class", class.String(), "servedResourceVersion", servedRV, "items", items, "duration", dur, "decision", d.Action.String())
		}

		if d.Action == fallback.Accept {
			if listRV == "" {
				listRV = servedRV
				r.rec.Served = first
			}
			r.rec.ServedResourceVersion = listRV
			r.rec.RemainingItemCount = remaining
			if err := page(obj); err != nil {
				return err
			}
			r.handed++
			r.rec.Pages++
			r.rec.Items += items
			if cont == "" {
				return nil
			}
			cur = fallback.Query{Semantic: fallback.MostRecent, Limit: opts.Limit, Continue: cont}
			continue
		}

		unproductive++
		ev := fallback.Event{Reason: d.Reason, Action: d.Action, Attempt: attempt, Situation: s, Before: cur, Err: err}
		if d.Action == fallback.Fail || d.Action == fallback.FailExactUnavailable {
			return r.fail(ev, d, cur, attempt, err, servedRV)
		}
		r.used[budget]++
		restart := d.Action == fallback.RestartListNewerRV || d.Action == fallback.RestartListUnpaginated
		if restart && userContinue {
			ev.Detail = "the caller's continue token expired; its first page is unknown, so the list cannot restart"
			return r.failWith(ev, "restart-not-allowed", ErrContinueExpired, cur, attempt, err, class)
		}
		newer := ""
		if d.Action == fallback.RetryNewerRV || (d.Action == fallback.RestartListNewerRV && first.Semantic == fallback.NotOlderThan) {
			var where string
			var perr error
			newer, where, perr = r.newerRV(first.ResourceVersion)
			if perr != nil {
				ev.Detail = "finding a newer resourceVersion failed: " + perr.Error()
				return r.failWith(ev, "newer-rv-probe-failed", nil, cur, attempt, perr, fallback.Classify(perr))
			}
			ev.Detail = fmt.Sprintf("newer resourceVersion %s from %s", newer, where)
		}
		next, ok := fallback.Next(d.Action, cur, first, newer, r.l.o.PageSize)
		if !ok {
			return r.failWith(ev, "no-next-request", nil, cur, attempt, err, class)
		}
		ev.After = next
		var wait time.Duration
		switch d.Action {
		case fallback.WaitRetryAfter:
			if ra, ok := fallback.RetryAfter(err); ok && ra > 0 {
				wait = min(ra, p.MaxRetryAfter)
				ev.Detail = fmt.Sprintf("Retry-After %s honoured (cap %s)", ra, p.MaxRetryAfter)
			} else if wait = r.backOff(&r.tooBo).NextBackOff(); wait == backoff.Stop {
				wait = p.Backoff.MaxInterval
			}
		case fallback.Backoff:
			wait = pending
			if ra, ok := fallback.RetryAfter(err); ok && min(ra, p.MaxRetryAfter) > wait {
				wait = min(ra, p.MaxRetryAfter)
			}
		case fallback.RetryNewerRV:
			if wait = r.backOff(&r.newBo).NextBackOff(); wait == backoff.Stop {
				wait = 0
			}
		}
		if wait > 0 {
			ev.Detail = joinDetail(ev.Detail, fmt.Sprintf("waited %s", wait.Round(time.Millisecond)))
		}
		if restart && r.handed > 0 {
			ev.Detail = joinDetail(ev.Detail, fmt.Sprintf("%d page(s) of snapshot %s voided", r.handed, listRV))
			if r.cfg.onRestart == nil {
				return r.failWith(ev, "restart-not-allowed", ErrContinueExpired, cur, attempt, err, class)
			}
		}
		r.event(ev)
		if restart {
			if r.handed > 0 {
				if herr := r.cfg.onRestart(ev); herr != nil {
					return herr
				}
			}
			r.handed, r.rec.Pages, r.rec.Items, r.rec.Restarts = 0, 0, 0, r.rec.Restarts+1
		}
		if d.Action != fallback.WaitRetryAfter && d.Action != fallback.Backoff {
			first, listRV = next, ""
		}
		cur = next
		if err := sleep(r.ctx, wait); err != nil {
			return &Error{Reason: fallback.ReasonContextDone, Class: fallback.Canceled, Requested: r.rec.Requested, Last: cur, Attempt: attempt, Err: err}
		}
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// verify turns a 200 into OK, ServedNewerThanExact, ServedOlder or (a
// continue page of another snapshot) ContinueExpired.
func (r *run) verify(cur Query, servedRV, listRV string) fallback.Class {
	if cur.Continue != "" {
		if listRV != "" && servedRV != listRV {
			return fallback.ContinueExpired // never stitch two snapshots
		}
		return fallback.OK
	}
	if r.exact != "" {
		if servedRV != r.exact {
			return fallback.ServedNewerThanExact
		}
		return fallback.OK
	}
	if r.floor != "" && fallback.CompareRV(servedRV, r.floor) == fallback.Older {
		return fallback.ServedOlder
	}
	return fallback.OK
}

// left reports whether budget b has attempts left; for the backoff budget it
// also returns the next delay (computing it consumes it).
func (r *run) left(b fallback.Budget) (bool, time.Duration) {
	p := r.l.o.Policy
	switch b {
	case fallback.NewerRVBudget:
		return r.used[b] < p.MaxNewerRVRetries, 0
	case fallback.RestartBudget:
		return r.used[b] < p.MaxListRestarts, 0
	case fallback.TooLargeBudget:
		return r.used[b] < p.MaxTooLargeRetries, 0
	case fallback.BackoffBudget:
		d := r.backOff(&r.bo).NextBackOff()
		return d != backoff.Stop, d
	}
	return false, 0
}

func (r *run) observe(s fallback.Situation, served fallback.Comparison, servedRV string, cur Query) {
	var o compat.Observation
	switch fallback.EvidenceOf(s, served) {
	case fallback.EvidenceIgnored:
		o = compat.Observation{Capability: compat.ResourceVersionMatch, Support: compat.No}
	case fallback.EvidenceHonoured:
		o = compat.Observation{Capability: compat.ResourceVersionMatch, Support: compat.Yes}
	default:
		return
	}
	if s.Class == fallback.Gone {
		o.Detail = fmt.Sprintf("observed: %s answered 410 (legacy Exact)", cur)
	} else {
		o.Detail = fmt.Sprintf("observed: %s served at %s", cur, servedRV)
	}
	r.log.V(2).Info("server behaviour observed", "capability", o.Capability, "support", o.Support.String(), "detail", o.Detail)
	r.l.o.Server.Observe(o)
}

// newerRV returns a resourceVersion newer than floor for rule 1 and list
// restarts: the caller's LastObservedRV when it is newer and untried, else
// the ListMeta.resourceVersion of a limit=1 MostRecent list.
func (r *run) newerRV(floor string) (rv, where string, err error) {
	if f := r.l.o.LastObservedRV; f != nil {
		if h := f(); h != "" && !r.tried[h] && (floor == "" || fallback.CompareRV(h, floor) == fallback.Newer) {
			r.tried[h] = true
			return h, "the caller's last observed resourceVersion", nil
		}
	}
	opts := fallback.MostRecentQuery().WithLimit(1).ApplyTo(r.base, fallback.Match)
	t0 := time.Now()
	obj, err := r.l.c.List(r.ctx, opts)
	sr := SentRequest{Purpose: PurposeNewerRVProbe, Options: opts, Form: fallback.Match, Class: fallback.Classify(err), Err: err, Duration: time.Since(t0)}
	if err == nil {
		var lm metav1.ListInterface
		if lm, err = meta.ListAccessor(obj); err == nil {
			sr.ServedResourceVersion, sr.Items = lm.GetResourceVersion(), meta.LenList(obj)
		}
	}
	r.rec.Requests = append(r.rec.Requests, sr)
	if err != nil {
		return "", "", err
	}
	rv = sr.ServedResourceVersion
	if rv == "" {
		return "", "", errors.New("limit=1 list returned no resourceVersion")
	}
	if floor != "" && fallback.CompareRV(rv, floor) == fallback.Older {
		// The server's newest is older than the floor: ask for the floor itself
		// rather than go back in time.
		return floor, "the requested resourceVersion (newest " + rv + " is older)", nil
	}
	r.tried[rv] = true
	return rv, "ListMeta.resourceVersion of a limit=1 MostRecent list", nil
}

func (r *run) event(ev fallback.Event) {
	r.rec.Fallbacks = append(r.rec.Fallbacks, ev)
	r.l.o.Metrics.Fallback(r.l.o.Name, string(ev.Reason))
	kv := []any{"reason", string(ev.Reason), "action", ev.Action.String(), "attempt", ev.Attempt,
		"before", ev.Before.String(), "after", ev.After.String(), "class", ev.Situation.Class.String()}
	if ev.Detail != "" {
		kv = append(kv, "detail", ev.Detail)
	}
	if ev.Err != nil {
		kv = append(kv, "err", ev.Err.Error())
	}
	r.log.V(2).Info("list fallback", kv...)
}

func (r *run) fail(ev fallback.Event, d fallback.Decision, cur Query, attempt int, err error, servedRV string) error {
	kind := kindOf(d.Reason)
	if d.Action == fallback.FailExactUnavailable {
		kind = ErrExactUnavailable
		if err == nil {
			// Keep 410 semantics for callers that test apierrors.IsResourceExpired.
			err = apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %s is not served exactly (served %s)", r.exact, servedRV))
		}
	}
	if d.Reason == fallback.ReasonServedOlderExhausted && err == nil {
		ev.Detail = fmt.Sprintf("served %s, requested not older than %s", servedRV, r.floor)
	}
	return r.failWith(ev, d.Reason, kind, cur, attempt, err, ev.Situation.Class)
}

func (r *run) failWith(ev fallback.Event, reason fallback.ReasonCode, kind error, cur Query, attempt int, err error, class fallback.Class) error {
	ev.Reason = reason
	r.event(ev)
	return &Error{Reason: reason, Class: class, Requested: r.rec.Requested, Last: cur, Attempt: attempt, Err: err, kind: kind}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// appendItems moves src's items to the end of dst's. Typed, unstructured and
// metadata lists keep their items in an Items slice of values: appending the
// slice copies each item once and lets src's backing array go.
func appendItems(dst, src runtime.Object) error {
	dv, sv := itemsField(dst), itemsField(src)
	if dv.IsValid() && sv.IsValid() && dv.Type() == sv.Type() {
		dv.Set(reflect.AppendSlice(dv, sv))
		sv.Set(reflect.Zero(sv.Type()))
		return nil
	}
	a, err := meta.ExtractList(dst)
	if err != nil {
		return err
	}
	b, err := meta.ExtractList(src)
	if err != nil {
		return err
	}
	return meta.SetList(dst, append(a, b...))
}

// reserve grows obj's Items capacity by n (bounded), so that the following
// pages are appended without repeated reallocation.
func reserve(obj runtime.Object, n int64) {
	const maxReserve = 1 << 20
	f := itemsField(obj)
	if !f.IsValid() || n <= 0 || n > maxReserve {
		return
	}
	grown := reflect.MakeSlice(f.Type(), f.Len(), f.Len()+int(n))
	reflect.Copy(grown, f)
	f.Set(grown)
}

func itemsField(obj runtime.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	f := v.Elem().FieldByName("Items")
	if !f.IsValid() || f.Kind() != reflect.Slice || !f.CanSet() {
		return reflect.Value{}
	}
	return f
}
