package reflector

import (
	"context"
	"time"

	"github.com/steadywatch/steadywatch/internal/storediff"
	"github.com/steadywatch/steadywatch/lister"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// maxKeysLogged bounds the keys a mismatch report logs per category.
const maxKeysLogged = 20

// ConsistencyReport is the result of one consistency check: the store as the
// reflector had filled it at a bookmark's resourceVersion, against an Exact
// list at that resourceVersion.
type ConsistencyReport struct {
	// ResourceVersion is the bookmark's resourceVersion both sides are at.
	ResourceVersion string
	// At is when the check finished.
	At time.Time
	// Missing are keys the server has and the store does not.
	Missing []string
	// Extra are keys the store has and the server does not.
	Extra []string
	// Differ are keys whose object resourceVersion differs.
	Differ []string
	// Err is set when the check could not be made (the list failed, or was
	// not served at exactly ResourceVersion); then the key lists are empty.
	Err error
}

// Result is "ok", "mismatch" or "error", as counted by metrics.ConsistencyCheck.
func (c ConsistencyReport) Result() string {
	switch {
	case c.Err != nil:
		return "error"
	case len(c.Missing)+len(c.Extra)+len(c.Differ) > 0:
		return "mismatch"
	}
	return "ok"
}

// LastConsistencyCheck returns the latest consistency report; ok is false
// if no check has finished yet (or Options.ConsistencyCheckInterval is 0).
func (r *Reflector) LastConsistencyCheck() (report ConsistencyReport, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.report == nil {
		return ConsistencyReport{}, false
	}
	return *r.report, true
}

// maybeCheckConsistency starts a check at rv if one is due and none runs.
// It is called right after a bookmark was applied, so the snapshot of what
// the store reflects is exactly the state at rv.
func (r *Reflector) maybeCheckConsistency(ctx context.Context, rv string) {
	iv := r.o.ConsistencyCheckInterval
	now := r.o.Clock.Now()
	if iv <= 0 || rv == "" || (!r.lastCheck.IsZero() && now.Sub(r.lastCheck) < iv) {
		return
	}
	if !r.checkRunning.CompareAndSwap(false, true) {
		return
	}
	r.lastCheck = now
	snapshot := make(map[string]string, r.items)
	r.pipe.EachLive(func(namespace, name, rv string) {
		snapshot[cache.NewObjectName(namespace, name).String()] = rv
	})
	r.checks.Add(1)
	go func() {
		defer r.checks.Done()
		defer r.checkRunning.Store(false)
		r.checkConsistency(ctx, rv, snapshot)
	}()
}

func (r *Reflector) checkConsistency(ctx context.Context, rv string, store map[string]string) {
	logger := klog.FromContext(ctx)
	rep := ConsistencyReport{ResourceVersion: rv}
	obj, err := r.listWhole(ctx, lister.Exact(rv).WithLimit(r.o.PageSize))
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		if served := listRV(obj); served != rv {
			err = &NotExactError{Requested: rv, Served: served}
		}
	}
	var items []any
	if err == nil {
		var objs []any
		err = meta.EachListItem(obj, func(o runtime.Object) error { objs = append(objs, o); return nil })
		items = objs
	}
	if err != nil {
		rep.Err = err
	} else {
		server := make(map[string]string, len(items))
		for _, it := range items {
			if k, orv, ok := keyRV(it); ok {
				server[k] = orv
			}
		}
		d := storediff.Compare(server, store)
		rep.Missing, rep.Extra, rep.Differ = d.Missing, d.Extra, d.Differ
	}
	rep.At = r.o.Clock.Now()
	r.mu.Lock()
	r.report = &rep
	r.mu.Unlock()
	result := rep.Result()
	r.o.Metrics.ConsistencyCheck(r.name, result)
	switch result {
	case "ok":
		logger.V(2).Info("Consistency check passed", "resourceVersion", rv, "items", len(store))
	case "mismatch":
		logger.Info("Consistency check: store differs from the server",
			"resourceVersion", rv, "missing", head(rep.Missing), "extra", head(rep.Extra), "differ", head(rep.Differ),
			"missingCount", len(rep.Missing), "extraCount", len(rep.Extra), "differCount", len(rep.Differ))
	default:
		logger.Info("Consistency check could not be made", "resourceVersion", rv, "err", rep.Err)
	}
}

func head(keys []string) []string {
	if len(keys) > maxKeysLogged {
		return keys[:maxKeysLogged]
	}
	return keys
}
