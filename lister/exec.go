package lister

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
)

// run is one list call: the executor loop around the engine.
type run struct {
	l     *Lister
	ctx   context.Context
	log   logr.Logger
	rec   *Record
	base  metav1.ListOptions
	cfg   *pageConfig
	plan  *engine.Planner
	tried map[string]bool // newer resourceVersions already tried
	wire  wireTally       // requests written on the wire under ctx
}

func (l *Lister) run(ctx context.Context, q Query, base metav1.ListOptions, page PageFunc, cfg *pageConfig) (*Record, error) {
	start := time.Now()
	rec := &Record{Requested: q}
	r := &run{
		l: l, ctx: ctx, log: klog.FromContext(ctx).WithValues("lister", l.o.Name), rec: rec, base: base, cfg: cfg,
		plan: newPlanner(l.o), tried: map[string]bool{},
	}
	r.ctx = r.wire.trace(ctx)
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

// loop is the executor, top-down: send, verify, plan, then hand the page
// over, fail, or probe for a newer resourceVersion and wait before the next
// request. Every decision is engine.Planner.Plan's.
func (r *run) loop(q Query, page PageFunc) error {
	if err := q.Validate(); err != nil {
		return err
	}
	first, cur := q, q
	snapshotRV := ""              // resourceVersion of the current snapshot's first page
	handed := 0                   // pages of that snapshot handed over
	seen := map[string]bool{}     // continue tokens handed out in this list
	var match engine.MatchSupport // belief when the first page was sent
	unproductive := 0             // requests that delivered no page (pages are not counted)
	for attempt := 1; ; attempt++ {
		if unproductive >= r.l.o.MaxRequests {
			ev := fallback.Event{Reason: fallback.ReasonMaxRequests, Action: fallback.Fail, Attempt: attempt - 1, Before: cur,
				Detail: fmt.Sprintf("%d requests delivered no page (Options.MaxRequests)", unproductive)}
			return r.failWith(ev, ErrRetriesExhausted, cur, nil, fallback.Other)
		}
		if cur.Continue == "" || attempt == 1 {
			match = r.matchSupport() // continue pages carry neither RV nor match
		}

		// Send.
		opts := engine.Wire(cur, match, r.base, r.l.o.PageSize)
		obj, shared, dur, err := r.send(opts)

		// Verify.
		class := fallback.ClassifyRequest(opts, err)
		var servedRV, cont string
		var remaining *int64
		items := 0
		if err == nil {
			lm, aerr := meta.ListAccessor(obj)
			if aerr != nil {
				ev := fallback.Event{Reason: fallback.ReasonNotAList, Action: fallback.Fail, Attempt: attempt, Before: cur, Err: aerr}
				return r.failWith(ev, nil, cur, aerr, fallback.Other)
			}
			servedRV, cont, remaining = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
			items = meta.LenList(obj)
			class = r.verify(first, cur, servedRV, snapshotRV, cont, seen)
		}
		wire := r.wire.take(r.log)
		r.rec.Requests = append(r.rec.Requests, SentRequest{Purpose: PurposePage, Options: opts, Form: match.Form(), Class: class,
			Err: err, ServedResourceVersion: servedRV, Items: items, MoreAfter: cont != "", Duration: dur, Shared: shared, WireRequests: wire})

		// Plan.
		ra, _ := fallback.RetryAfter(err)
		var pageBytes int64
		if err == nil && cont != "" && r.l.o.MaxPageBytes > 0 && r.l.o.MaxPageSize > opts.Limit && opts.Limit > 0 {
			pageBytes = estimatePageBytes(obj, items)
		}
		step := r.plan.Plan(engine.Input{
			First: first, Sent: cur, Match: match, WireLimit: opts.Limit, Class: class, RetryAfter: ra, Elapsed: dur, WireRequests: wire, Continue: cont,
			Handed: handed, SnapshotRV: snapshotRV, CanVoidPages: r.cfg.onRestart != nil, CallerContinue: q.Continue != "",
			PageBytes: pageBytes, Items: items,
		})
		if opts.Continue == "" && cur.ResourceVersion != "" {
			r.observe(step.Situation, fallback.CompareRV(servedRV, cur.ResourceVersion), servedRV, cur)
		}
		if r.log.V(4).Enabled() {
			r.log.V(4).Info("list request", "attempt", attempt, "resourceVersion", opts.ResourceVersion,
				"resourceVersionMatch", opts.ResourceVersionMatch, "limit", opts.Limit, "continue", opts.Continue != "",
				"class", class.String(), "servedResourceVersion", servedRV, "items", items, "duration", dur, "decision", step.Action.String())
		}

		// Act.
		if step.Action == fallback.Accept {
			if snapshotRV == "" {
				snapshotRV = servedRV
				r.rec.Served = first
			}
			r.rec.ServedResourceVersion = snapshotRV
			r.rec.RemainingItemCount = remaining
			if err := page(obj); err != nil {
				return err
			}
			handed++
			r.rec.Pages++
			r.rec.Items += items
			if step.Done {
				return nil
			}
			seen[cont] = true
			cur = step.Next
			continue
		}
		unproductive++
		ev := fallback.Event{Reason: step.Reason, Action: step.Action, Attempt: attempt, Class: class, Before: cur, Err: err, Detail: step.Detail}
		if step.Failed() {
			return r.fail(ev, step, cur, err, servedRV, first, cont)
		}
		next := step.Next
		if step.ProbeNewerRV {
			newer, where, perr := r.newerRV(step.Floor)
			if perr != nil {
				ev.Reason, ev.Action = fallback.ReasonNewerRVProbeFailed, fallback.Fail
				ev.Detail = joinDetail(ev.Detail, "finding a newer resourceVersion failed: "+perr.Error())
				return r.failWith(ev, nil, cur, perr, fallback.Classify(perr))
			}
			next.ResourceVersion = newer
			ev.Detail = joinDetail(fmt.Sprintf("newer resourceVersion %s from %s", newer, where), ev.Detail)
		}
		ev.After = next
		r.event(ev)
		if step.VoidPages {
			if herr := r.cfg.onRestart(ev); herr != nil {
				return herr
			}
		}
		if step.Action == fallback.RestartListNewerRV || step.Action == fallback.RestartListUnpaginated {
			r.rec.Pages, r.rec.Items, r.rec.Restarts = 0, 0, r.rec.Restarts+1
		}
		if step.NewAttempt {
			first, snapshotRV, handed = next, "", 0
			clear(seen)
		}
		cur = next
		if err := sleep(r.ctx, step.Wait); err != nil {
			ev := fallback.Event{Reason: fallback.ReasonContextDone, Action: fallback.Fail, Attempt: attempt, Before: cur, Err: err}
			return r.failWith(ev, nil, cur, err, fallback.Canceled)
		}
	}
}

// send sends one page request, through Options.ListGate (which lets
// requests of at most one object pass at once): it may wait there for a
// slot, or be answered by an identical request of another reader (shared).
// dur is the request's own duration (0 when shared), never the wait for a
// slot: the planner reads it as the time client-go's REST client spent on
// hidden retries.
func (r *run) send(opts metav1.ListOptions) (obj runtime.Object, shared bool, dur time.Duration, err error) {
	list := func(ctx context.Context) (runtime.Object, error) {
		t0 := time.Now()
		defer func() { dur = time.Since(t0) }()
		return r.l.c.List(ctx, opts)
	}
	obj, shared, err = r.l.o.ListGate.List(r.ctx, r.l.o.Name, r.l.o.Metrics, r.l.c, opts, list)
	return obj, shared, dur, err
}

func (r *run) matchSupport() engine.MatchSupport {
	switch r.l.o.Server.Capabilities(r.ctx).Get(compat.ResourceVersionMatch) {
	case compat.Yes:
		return engine.MatchHonoured
	case compat.No:
		return engine.MatchIgnored
	}
	return engine.MatchUnknown
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// verify turns a 200 into OK, ServedNewerThanExact, ServedOlder,
// ContinueRepeated, or (a continue page of another snapshot) ContinueExpired.
// Every field it reads is the server's and untrusted.
func (r *run) verify(first, cur Query, servedRV, snapshotRV, cont string, seen map[string]bool) fallback.Class {
	if cont != "" && (seen[cont] || cont == cur.Continue) {
		return fallback.ContinueRepeated
	}
	if cur.Continue != "" {
		if snapshotRV != "" && servedRV != snapshotRV {
			return fallback.ContinueExpired // never stitch two snapshots
		}
		return fallback.OK
	}
	switch cur.Semantic {
	case fallback.Exact:
		if servedRV != cur.ResourceVersion {
			return fallback.ServedNewerThanExact
		}
	case fallback.NotOlderThan:
		if fallback.CompareRV(servedRV, cur.ResourceVersion) == fallback.Older {
			return fallback.ServedOlder
		}
	}
	// A fallback never lowers the caller's floor.
	if r.rec.Requested.Semantic == fallback.NotOlderThan && cur.Semantic != fallback.Exact &&
		fallback.CompareRV(servedRV, r.rec.Requested.ResourceVersion) == fallback.Older {
		return fallback.ServedOlder
	}
	return fallback.OK
}

func (r *run) observe(s engine.Situation, served fallback.Comparison, servedRV string, cur Query) {
	var o compat.Observation
	switch engine.EvidenceOf(s, served) {
	case engine.EvidenceIgnored:
		o = compat.Observation{Capability: compat.ResourceVersionMatch, Support: compat.No}
	case engine.EvidenceHonoured:
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
// the ListMeta.resourceVersion of a limit=1 MostRecent list (retried with
// backoff when it fails transiently, like any request).
func (r *run) newerRV(floor string) (rv, where string, err error) {
	if f := r.l.o.LastObservedRV; f != nil {
		if h := f(); h != "" && !r.tried[h] && (floor == "" || fallback.CompareRV(h, floor) == fallback.Newer) {
			r.tried[h] = true
			return h, "the caller's last observed resourceVersion", nil
		}
	}
	for {
		rv, err = r.probe()
		if err == nil {
			break
		}
		ra, _ := fallback.RetryAfter(err)
		retry, wait := r.plan.ProbeFailed(fallback.Classify(err), ra)
		if !retry {
			return "", "", err
		}
		r.event(fallback.Event{Reason: fallback.ReasonNewerRVProbeRetry, Action: fallback.Backoff, Attempt: len(r.rec.Requests),
			Class: fallback.Classify(err), Err: err, Detail: fmt.Sprintf("waiting %s", wait.Round(time.Millisecond))})
		if serr := sleep(r.ctx, wait); serr != nil {
			return "", "", serr
		}
	}
	if floor != "" && fallback.CompareRV(rv, floor) == fallback.Older {
		// The server's newest is older than the floor: ask for the floor itself
		// rather than go back in time.
		return floor, "the floor (newest " + rv + " is older)", nil
	}
	r.tried[rv] = true
	return rv, "ListMeta.resourceVersion of a limit=1 MostRecent list", nil
}

// errNoListResourceVersion: the limit=1 list's ListMeta has no resourceVersion.
var errNoListResourceVersion = errors.New("limit=1 list returned no resourceVersion")

// probe sends the limit=1 MostRecent list and returns its ListMeta.resourceVersion.
func (r *run) probe() (string, error) {
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
	sr.WireRequests = r.wire.take(r.log)
	r.rec.Requests = append(r.rec.Requests, sr)
	if err != nil {
		return "", err
	}
	if sr.ServedResourceVersion == "" {
		return "", errNoListResourceVersion
	}
	return sr.ServedResourceVersion, nil
}

func (r *run) event(ev fallback.Event) {
	r.rec.Fallbacks = append(r.rec.Fallbacks, ev)
	r.l.o.Metrics.Fallback(r.l.o.Name, string(ev.Reason))
	kv := []any{"reason", string(ev.Reason), "action", ev.Action.String(), "attempt", ev.Attempt,
		"before", ev.Before.String(), "after", ev.After.String(), "class", ev.Class.String()}
	if ev.Detail != "" {
		kv = append(kv, "detail", ev.Detail)
	}
	if ev.Err != nil {
		kv = append(kv, "err", ev.Err.Error())
	}
	r.log.V(2).Info("list fallback", kv...)
}

// fail turns a failing step into the call's *Error, with a message that says
// what the server did wrong where it did.
func (r *run) fail(ev fallback.Event, step engine.Step, cur Query, err error, servedRV string, first Query, cont string) error {
	kind := kindOf(step.Reason)
	switch {
	case (step.Reason == fallback.ReasonTooLargeExactUnavailable || step.Reason == fallback.ReasonTooLargeExhausted) && r.rec.Requested.ResourceVersion != "":
		// The server stayed behind the requested resourceVersion for the
		// whole budget: say so in the caller's terms (an Exact list still
		// matches ErrExactUnavailable through kind).
		err = &ResourceVersionTooLargeError{Requested: r.rec.Requested.ResourceVersion, Current: currentRVOf(err), Requests: len(r.rec.Requests), Err: err}
	case step.Action == fallback.FailExactUnavailable:
		kind = ErrExactUnavailable
		if err == nil {
			// Keep 410 semantics for callers that test apierrors.IsResourceExpired.
			err = apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %s is not served exactly (served %s)", first.ResourceVersion, servedRV))
		}
	case step.Reason == fallback.ReasonServedOlderExhausted && err == nil:
		ev.Detail = joinDetail(ev.Detail, fmt.Sprintf("served %s, requested not older than %s", servedRV, r.rec.Requested.ResourceVersion))
	case step.Reason == fallback.ReasonRVNewerThanServer:
		err = &ResourceVersionTooLargeError{Requested: r.rec.Requested.ResourceVersion, Current: servedRV, Requests: len(r.rec.Requests)}
	case step.Reason == fallback.ReasonContinueRepeated:
		err = fmt.Errorf("the server repeated continue token %q after %d page(s); its pagination is broken (%s)",
			redactToken(cont), r.rec.Pages, fallback.SourceChunks)
		ev.Detail = joinDetail(ev.Detail, fmt.Sprintf("%d page(s) of snapshot %s were handed over before the repeat", r.rec.Pages, r.rec.ServedResourceVersion))
	}
	return r.failWith(ev, kind, cur, err, step.Situation.Class)
}

// redactToken shortens a continue token for messages: tokens are opaque and
// may be long; their start is enough to recognise them.
func redactToken(t string) string {
	if len(t) > 16 {
		return t[:16] + "..."
	}
	return t
}

func (r *run) failWith(ev fallback.Event, kind error, cur Query, err error, class fallback.Class) error {
	if ev.Err == nil {
		ev.Err = err
	}
	r.event(ev)
	return &Error{Reason: ev.Reason, Class: class, Requested: r.rec.Requested, Last: cur, Attempt: len(r.rec.Requests), Err: err, kind: kind}
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

// estimatePageBytes estimates the encoded size of a page's n objects from
// up to three of them (first, middle, last): their generated protobuf
// Size where they have one (built-in types), else their JSON length.
func estimatePageBytes(list runtime.Object, n int) int64 {
	if n <= 0 {
		return 0
	}
	want := map[int]bool{0: true, n / 2: true, n - 1: true}
	var sum, sampled int64
	i := 0
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if want[i] {
			if s, ok := obj.(interface{ Size() int }); ok {
				sum += int64(s.Size())
			} else if b, err := json.Marshal(obj); err == nil {
				sum += int64(len(b))
			}
			sampled++
		}
		i++
		return nil
	})
	if sampled == 0 {
		return 0
	}
	return sum / sampled * int64(n)
}

func newPlanner(o Options) *engine.Planner {
	pl := engine.NewPlanner(o.Policy, o.PageSize)
	pl.GrowPagesTo(o.MaxPageSize, max(o.MaxPageBytes, 0))
	return pl
}
