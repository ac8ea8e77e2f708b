package lister

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptrace"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/wirewait"
)

// run is one list call, top-down: send, ask the engine, act. Every decision
// (the next request, its wire form, its wait, a probe, the end of the call)
// is engine.Call.Next's; run only sends, hands pages over and records.
func (l *Lister) run(ctx context.Context, q fallback.Query, base metav1.ListOptions, page pageFunc, cfg *pageConfig) (*Record, error) {
	start := time.Now()
	rec := &Record{Requested: q}
	log := klog.FromContext(ctx)
	if log.V(2).Enabled() { // run logs nothing below V(2): the name is added only when a line may be written
		log = log.WithValues("lister", l.o.Name)
	}
	st := &callState{l: l}
	st.trace.WroteHeaders = func() { st.wire.written.Add(1) }
	ctx = wirewait.WithBound(httptrace.WithClientTrace(ctx, &st.trace), l.o.ResponseTimeout)
	st.ctx = ctx
	call, req, err := engine.Start(q, engine.Config{
		Policy: l.o.knobs.Policy, PageSize: l.o.PageSize, MaxPageSize: l.o.knobs.MaxPageSize, MaxPageBytes: max(l.o.knobs.MaxPageBytes, 0),
		MaxRequests: l.o.knobs.MaxRequests, Base: base, LastObserved: l.o.knobs.LastObservedRV, CanVoidPages: cfg.onRestart != nil,
		Beliefs: st,
	})
	var h *handover // nil: pages delivered whole (no ItemByItem)
	if cfg.item != nil {
		h = l.handover(page, cfg)
	}
	for err == nil {
		var cur *handover
		if h != nil {
			cur = h.forRequest(&call, req)
		}
		obj, ans, sr, sent := l.send(ctx, &st.wire, cur, req)
		if cur != nil {
			if cur.err != nil {
				// The caller's page or item function failed: the call
				// ends with its error, as when a page is refused.
				if sent {
					rec.Requests = append(rec.Requests, sr)
				}
				err = cur.err
				break
			}
			cur.counted(&ans, &sr)
		}
		step := call.Next(ans)
		if sent {
			sr.Class = step.Class
			rec.Requests = append(rec.Requests, sr)
		}
		if step.Evidence != engine.NoEvidence {
			l.observe(log, req, ans, step)
		}
		if log.V(4).Enabled() {
			logRequest(log, len(rec.Requests), req, ans, step)
		}
		if step.Accept {
			rec.Served, rec.ServedResourceVersion = step.Served, step.SnapshotRV
			if lm, aerr := meta.ListAccessor(obj); aerr == nil {
				rec.RemainingItemCount = lm.GetRemainingItemCount()
			}
			if cur == nil || !cur.headed { // else handed over as it was decoded
				if err = page(obj); err != nil {
					break
				}
			}
			rec.Pages++
			rec.Items += ans.Items
		}
		if step.Action.IsFailure() {
			err = l.fail(step, rec, ans)
		}
		if step.Event != nil {
			l.record(log, rec, step.Event, err)
		}
		restart := step.VoidPages
		if !restart && err == nil && cur != nil && cur.discarded(step) {
			restart, err = cur.afterDiscard(step, rec)
		}
		if restart && err == nil {
			ev := fallback.Event{Reason: fallback.ReasonCode(step.Reason), Action: step.Action, Class: step.Class, Attempt: len(rec.Requests), Before: req.Query}
			if step.Event != nil {
				ev = *step.Event
			}
			err = cfg.onRestart(ev)
		}
		if step.Action == vocab.RestartListNewerRV || step.Action == vocab.RestartListUnpaginated {
			rec.Pages, rec.Items, rec.Restarts = 0, 0, rec.Restarts+1
		}
		if step.Done {
			break
		}
		req = step.Next
	}
	rec.Duration = time.Since(start)
	l.o.Metrics.List(l.o.Name, q.Semantic.String(), outcome(err))
	return rec, err
}

// outcome is the outcome label of a list call that ended with err.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var le *Error
	switch {
	case errors.As(err, &le):
		return le.Class.String()
	case errors.Is(err, fallback.ErrInvalidQuery):
		return "invalid-query"
	}
	return engine.Classify(err).String()
}

// observe tells the server's capability beliefs what the answer to req
// proved about resourceVersionMatch support.
func (l *Lister) observe(log klog.Logger, req engine.Request, ans engine.Answer, step engine.Step) {
	o := capability.Observation{Capability: capability.ResourceVersionMatch, Support: capability.No,
		Detail: fmt.Sprintf("observed: %s served at %s", req.Query, ans.ServedRV)}
	if step.Evidence == engine.EvidenceHonoured {
		o.Support = capability.Yes
	} else if step.Class == vocab.Gone {
		o.Detail = fmt.Sprintf("observed: %s answered 410 (legacy Exact)", req.Query)
	}
	if log.V(2).Enabled() {
		log.V(2).Info("server behaviour observed", "capability", o.Capability, "support", o.Support.String(), "detail", o.Detail)
	}
	l.o.Server.Observe(o)
}

// logRequest logs one request of a list call at verbosity 4.
func logRequest(log klog.Logger, attempt int, req engine.Request, ans engine.Answer, step engine.Step) {
	log.V(4).Info("list request", "attempt", attempt, "resourceVersion", req.Options.ResourceVersion,
		"resourceVersionMatch", req.Options.ResourceVersionMatch, "limit", req.Options.Limit, "continue", req.Options.Continue != "",
		"class", step.Class.String(), "servedResourceVersion", ans.ServedRV, "items", ans.Items, "duration", ans.Elapsed, "decision", step.Action.String())
}

// record records a decision's event ev in rec, its metric and its log line
// (err: the call's error so far).
func (l *Lister) record(log klog.Logger, rec *Record, ev *fallback.Event, err error) {
	var le *Error
	if ev.Err == nil && errors.As(err, &le) {
		ev.Err = le.Err
	}
	rec.Fallbacks = append(rec.Fallbacks, *ev)
	l.o.Metrics.Fallback(l.o.Name, string(ev.Reason))
	if !log.V(2).Enabled() {
		return
	}
	kv := []any{"reason", string(ev.Reason), "action", ev.Action.String(), "attempt", ev.Attempt,
		"before", ev.Before.String(), "after", ev.After.String(), "class", ev.Class.String()}
	if ev.Detail != "" {
		kv = append(kv, "detail", ev.Detail)
	}
	if ev.Err != nil {
		kv = append(kv, "err", ev.Err.Error())
	}
	log.V(2).Info("list fallback", kv...)
}

// callState is what one list call shares beyond its frame, in one
// allocation: the tally its HTTP trace counts written requests in
// (client-go's retries included), and the beliefs about the server the
// engine reads (engine.Beliefs), under the call's context.
type callState struct {
	wire  wireTally
	trace httptrace.ClientTrace
	l     *Lister
	ctx   context.Context
}

// Match is the belief about resourceVersionMatch, read before each first page.
func (s *callState) Match() engine.MatchSupport {
	switch s.l.o.Server.Capabilities(s.ctx).Support[capability.ResourceVersionMatch] {
	case capability.Yes:
		return engine.MatchHonoured
	case capability.No:
		return engine.MatchIgnored
	}
	return engine.MatchUnknown
}

// WatchCacheStuck is the belief that the watch cache moves only on writes
// of this resource (KEP-1904).
func (s *callState) WatchCacheStuck() bool {
	return s.l.o.Server.Capabilities(s.ctx).Support[capability.WatchCacheProgress] == capability.No
}

// send waits req.Wait, then sends req, through Options.ListGate when it
// may return more than one object: it may wait there for a slot, or be
// answered by an identical request of another reader (Shared). The
// answer's Elapsed is the request's own duration (0 when shared), never
// the wait for a slot: the engine reads it as the time client-go's REST
// client spent on hidden retries. sent is false when the context ended
// before the request was sent.
func (l *Lister) send(ctx context.Context, wire *wireTally, h *handover, req engine.Request) (obj runtime.Object, ans engine.Answer, sr SentRequest, sent bool) {
	if req.Wait > 0 {
		t := time.NewTimer(req.Wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	if ans.Err = ctx.Err(); ans.Err != nil {
		return nil, ans, sr, false
	}
	opts := req.Options
	list := func(ctx context.Context) (runtime.Object, error) {
		t0 := time.Now()
		defer func() { ans.Elapsed = time.Since(t0) }()
		if h != nil {
			return h.list(ctx, opts)
		}
		return l.c.List(ctx, opts)
	}
	// An answer whose items are handed over only to this caller is never
	// shared: the gate sees no client.
	var gated any = l.c
	if h != nil {
		gated = nil
	}
	obj, shared, err := l.o.ListGate.List(ctx, l.o.Name, l.o.Metrics, gated, opts, list)
	if h != nil && h.refused != nil && errors.Is(err, errHeadRefused) {
		// The engine refused the answer from its ListMeta, before any item
		// was handed over (handover.head): Next decides on the answer as
		// on a whole page, from its ListMeta, with no items.
		obj, err = h.refused, nil
	}
	ans.Err = err
	if shared {
		ans.Elapsed = 0
	}
	ans.WireRequests = wire.take(klog.FromContext(ctx))
	purpose := purposePage
	if req.Purpose != engine.PurposePage {
		purpose = purposeNewerRVProbe
	}
	sr = SentRequest{Purpose: purpose, Options: opts, Form: req.Form, Err: ans.Err, Duration: ans.Elapsed, Shared: shared, WireRequests: ans.WireRequests}
	if ans.Err == nil {
		lm, aerr := meta.ListAccessor(obj)
		if aerr != nil {
			ans.NotAList, ans.Err, sr.Err = true, aerr, aerr
			return obj, ans, sr, true
		}
		ans.ServedRV, ans.Continue, ans.Items = lm.GetResourceVersion(), lm.GetContinue(), meta.LenList(obj)
		sr.ServedResourceVersion, sr.Items, sr.MoreAfter = ans.ServedRV, ans.Items, ans.Continue != ""
		if ans.Continue != "" && l.o.knobs.MaxPageBytes > 0 && l.o.knobs.MaxPageSize > opts.Limit && opts.Limit > 0 {
			ans.PageBytes = estimatePageBytes(obj, ans.Items) // bounds the next page's growth
		}
	}
	return obj, ans, sr, true
}

// fail turns a failing step into the call's *Error, with a message that says
// what the server did wrong where it did.
func (l *Lister) fail(step engine.Step, rec *Record, ans engine.Answer) error {
	kind, err, requested := kindOf(step.Reason), ans.Err, rec.Requested
	switch {
	case step.Reason == reason.RVNewerThanServer ||
		(step.Reason == reason.TooLargeExactUnavailable || step.Reason == reason.TooLargeExhausted) && requested.ResourceVersion != "":
		// No server answer can satisfy the request: say so in the caller's
		// terms (an Exact list still matches ErrExactUnavailable).
		cur := currentRVOf(err)
		if step.Reason == reason.RVNewerThanServer {
			cur = ans.ServedRV
		}
		err = &ResourceVersionTooLargeError{Requested: requested.ResourceVersion, Current: cur, Requests: len(rec.Requests), Err: err}
		if requested.Semantic == fallback.Exact {
			kind = ErrExactUnavailable
		}
	case step.Action == vocab.FailExactUnavailable:
		kind = ErrExactUnavailable
		if err == nil {
			// Keep 410 semantics for callers that test apierrors.IsResourceExpired.
			err = apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %s is not served exactly (served %s)", requested.ResourceVersion, ans.ServedRV))
		}
	case step.Reason == reason.ContinueRepeated:
		err = fmt.Errorf("the server repeated continue token %q after %d page(s); its pagination is broken (%s)",
			redactToken(ans.Continue), rec.Pages, vocab.SourceChunks)
	case step.Reason == reason.NewerRVProbeFailed && err == nil:
		err = engine.ErrNoListResourceVersion
	}
	last := fallback.Query{}
	if step.Event != nil {
		last = step.Event.Before
	}
	return &Error{Reason: fallback.ReasonCode(step.Reason), Class: step.Class, Requested: requested, Last: last, Attempt: len(rec.Requests), Err: err, kind: kind}
}

// redactToken shortens a continue token for messages: tokens are opaque and
// may be long; their start is enough to recognise them.
func redactToken(t string) string {
	if len(t) > 16 {
		return t[:16] + "..."
	}
	return t
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
