package reflector

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/lister"
)

// fill is what a row's next state is built from: the (re)fill in progress
// (query, initial, cause, attempt), the resourceVersion the store requires
// or holds (rv), and, for a streaming list that ended well, the watch that
// goes on (w, opened).
type fill struct {
	query   fallback.Query
	initial bool
	// cause is the metrics code of the (re)fill a row leads to; empty: the
	// row's reason.
	cause   reason.Code
	attempt int
	rv      string
	w       watch.Interface
	opened  time.Time
}

// decide asks the decision table about one of the reflector's situations.
func (r *Reflector) decide(sit engine.Situation) engine.Decision {
	return engine.Decide(sit, r.o.lk.Policy)
}

// carryOut carries out a reflector step's row d (asked with sit): the state
// its Then names, after the wait it names. w is the transition's reason;
// it names the row.
func (r *Reflector) carryOut(ctx context.Context, d engine.Decision, sit engine.Situation, f fill, retryAfter time.Duration, w why) (state, why) {
	cause := f.cause
	if cause == "" {
		cause = d.Reason
	}
	mostRecent := fallback.Query{Semantic: fallback.MostRecent}
	var next state
	switch d.Then {
	case engine.ThenListSame:
		next = listing{query: f.query, initial: f.initial, cause: cause, attempt: f.attempt + 1}
	case engine.ThenListMostRecent:
		next = listing{query: mostRecent, initial: f.initial, cause: cause, attempt: f.attempt + 1}
	case engine.ThenSyncMostRecent:
		next = r.syncState(ctx, mostRecent, f.initial, cause)
	case engine.ThenStreamMostRecent:
		next = streamingList{query: mostRecent, initial: f.initial, cause: cause, attempt: f.attempt + 1}
	case engine.ThenListNotOlder:
		next = listing{query: relistQuery(f.rv), initial: f.initial, cause: cause, attempt: f.attempt + 1}
	case engine.ThenSyncNotOlder:
		next = r.syncState(ctx, relistQuery(f.rv), f.initial, cause)
	case engine.ThenWatch:
		next = watching{rv: f.rv, w: f.w, opened: f.opened}
	case engine.ThenWatchAgain:
		next = startingWatch{rv: f.rv}
	case engine.ThenStop:
		next = stopped{}
	}
	return r.after(d.Wait, next, retryAfter, w.by(d, sit))
}

// after is next after the wait a row names (retryAfter: the server's
// Retry-After, if any); w, the transition's reason, records the delay.
func (r *Reflector) after(wait engine.Wait, next state, retryAfter time.Duration, w why) (state, why) {
	switch wait {
	case engine.WaitNone:
		return next, w
	case engine.WaitIfRepeated:
		next = r.relist(next, 0)
		if b, ok := next.(backingOff); ok {
			w.delay = b.delay
		}
		return next, w
	case engine.WaitRegress:
		w.delay = r.regressDelay()
	case engine.WaitBackoffOnly:
		w.delay = r.delay(0)
	case engine.WaitAfterCallRetries:
		w.delay = max(r.delay(retryAfter), r.o.lk.Policy.Backoff.Max)
	default:
		w.delay = r.delay(retryAfter)
	}
	return backingOff{delay: w.delay, next: next}, w
}

// carryOutPlan is the query a list-plan row d names for the (re)fill's
// query q; rv is the resourceVersion the limit=1 read named, if any.
func (r *Reflector) carryOutPlan(ctx context.Context, d engine.Decision, q fallback.Query, rv string) fallback.Query {
	switch d.Then {
	case engine.ThenPlanWhole:
		return q
	case engine.ThenPlanNotOlderProbed:
		klog.FromContext(ctx).V(4).Info("Listing from the watch cache, not older than the current resourceVersion", "resourceVersion", rv)
		return lister.NotOlderThan(rv)
	}
	return q.WithLimit(r.o.pageSize)
}
