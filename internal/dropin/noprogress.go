package dropin

import (
	"context"
	"time"

	"github.com/steadywatch/steadywatch/internal/policy"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
)

// noProgressBackoff is the delay between watch attempts (streaming lists and
// plain watches) that end without progress: client-go's reflector defaults
// (tools/cache/reflector.go: 800ms doubling to 30s), jittered +/-50%, and
// started afresh after two minutes without such a failure: the reflector's
// own backoff (policy.DefaultReflectorBackoff).
func noProgressBackoff() policy.Backoff { return policy.DefaultReflectorBackoff() }

// progressGate spaces out watch attempts that make no progress. client-go's
// reflector retries a streaming list answered 410 Expired (or "too large
// resource version") at once, without a delay (tools/cache/reflector.go,
// watchList), so a server that answers every watch that way would see a
// request loop. A watch that ends — cleanly or with an error, opened or
// not — without delivering anything newer than where it started (the
// initial-events-end bookmark of a streaming list, an event, a bookmark at
// a newer resourceVersion) is a failure; the next watch attempt is not sent
// before a growing, jittered delay after it. Progress, or a list that
// succeeds, resets the delay. The delay counts from the failure, so a wait
// client-go already made (its own backoff between relists) is not repeated.
type progressGate struct {
	policy    policy.Backoff
	bo        *backoff.ExponentialBackOff
	failures  int       // consecutive attempts without progress
	lastFail  time.Time // when the last of them ended
	notBefore time.Time // the next attempt waits until then
}

func newProgressGate() progressGate {
	p := noProgressBackoff()
	return progressGate{policy: p, bo: p.New()}
}

// progress records an attempt that made progress (lw.mu held).
func (g *progressGate) progress() {
	if g.failures > 0 {
		g.bo.Reset()
	}
	g.failures, g.notBefore = 0, time.Time{}
}

// fail records an attempt that ended without progress at now and returns
// the delay before the next one (lw.mu held).
func (g *progressGate) fail(now time.Time) time.Duration {
	if g.failures > 0 && now.Sub(g.lastFail) > g.policy.ResetAfter {
		g.failures = 0
		g.bo.Reset()
	}
	g.failures++
	g.lastFail = now
	d := g.bo.NextBackOff()
	if d > g.policy.Max {
		d = g.policy.Max
	}
	g.notBefore = now.Add(d)
	return d
}

// decide asks the decision table about one of the drop-in's situations.
func (lw *ListerWatcher) decide(sit engine.Situation) engine.Decision {
	d := engine.Decide(sit, policy.Policy{}) // the drop-in's rows match no policy switch
	if lw.observe != nil {
		lw.observe(sit, d)
	}
	return d
}

// noteProgress records that a watch delivered something newer than where it
// started, or that a list succeeded.
func (lw *ListerWatcher) noteProgress() {
	lw.settle(logr.Discard(), true, "")
}

// noteNoProgress records a watch attempt that ended (or failed to open)
// without progress.
func (lw *ListerWatcher) noteNoProgress(log logr.Logger, why string) {
	lw.settle(log, false, why)
}

// settle carries out the row for an attempt that ended (OpDropInAttempt):
// the no-progress delay starts afresh (WaitNone), or grows and the next
// watch attempt waits it (WaitNoProgress, served by awaitProgressGate).
func (lw *ListerWatcher) settle(log logr.Logger, progressed bool, why string) {
	d := lw.decide(engine.Situation{Op: engine.OpDropInAttempt, Progressed: progressed})
	lw.mu.Lock()
	if d.Wait == engine.WaitNone {
		lw.gate.progress()
		lw.mu.Unlock()
		return
	}
	delay := lw.gate.fail(time.Now())
	n := lw.gate.failures
	lw.mu.Unlock()
	log.V(2).Info("watch ended without progress; the next watch waits", "reason", string(d.Reason),
		"detail", why, "failures", n, "delay", delay)
}

// awaitProgressGate waits (honouring ctx) until the next watch attempt may
// be sent; retry reports whether the previous attempt failed without
// progress. A delayed attempt is counted and logged.
func (lw *ListerWatcher) awaitProgressGate(ctx context.Context, log logr.Logger) (retry bool, err error) {
	lw.mu.Lock()
	retry = lw.gate.failures > 0
	wait := time.Until(lw.gate.notBefore)
	n := lw.gate.failures
	lw.mu.Unlock()
	if !retry || wait <= 0 {
		return retry, nil
	}
	o := &lw.cfg
	o.Metrics.Fallback(o.Name, string(reason.NoProgressBackoff))
	log.V(2).Info("delaying a watch: the last ones ended without progress", "reason", string(reason.NoProgressBackoff),
		"failures", n, "delay", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return retry, ctx.Err()
	case <-t.C:
		return retry, nil
	}
}

// WatchDelayed reports whether the next watch attempt waits for the
// no-progress backoff.
func (lw *ListerWatcher) WatchDelayed() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return !lw.gate.notBefore.IsZero()
}

// listQuery carries out a list row (OpDropInList, OpDropInListed): the
// query the row's Then names, asked is the query as asked and fresh the one
// the row may name instead (MostRecent, or NotOlderThan what was
// delivered); a row other than the plain answer is counted and logged with
// its reason, detail and the key-value pairs kv; changed says whether the
// row names another query than asked.
func (lw *ListerWatcher) listQuery(log logr.Logger, d engine.Decision, asked, fresh fallback.Query, detail string, kv ...any) (q fallback.Query, changed bool) {
	next, ok := map[engine.Then]fallback.Query{
		engine.ThenListSame:       asked,
		engine.ThenListMostRecent: (fallback.Query{Semantic: fallback.MostRecent}).WithLimit(asked.Limit),
		engine.ThenListNotOlder:   fresh,
	}[d.Then]
	if !ok || d.Then == engine.ThenListSame {
		return asked, false
	}
	o := &lw.cfg
	o.Metrics.Fallback(o.Name, string(d.Reason))
	log.V(2).Info(detail, append([]any{"reason", string(d.Reason)}, kv...)...)
	return next, true
}
