package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/e2e/soak"
	"github.com/steadywatch/steadywatch/internal/storediff"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

// The two sides of every scene.
const (
	stock = "stock"
	ours  = "ours"
)

// newInformer builds a side's ConfigMap informer of namespace ns on cs, the
// way most programs build one: from client-go's SharedInformerFactory with
// client-go's defaults. steadywatch's side differs by the one line a user
// changes (reflector.NewSharedInformerFactoryWithOptions for client-go's
// constructor). This is the only
// place the two sides are built; rec receives steadywatch's fallbacks and
// relists.
func newInformer(who string, cs kubernetes.Interface, ns string, rec metrics.Recorder) (informers.SharedInformerFactory, cache.SharedIndexInformer) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	if who == ours {
		factory = reflector.NewSharedInformerFactoryWithOptions(cs, 0, lister.Options{Metrics: rec}, informers.WithNamespace(ns))
	}
	return factory, factory.Core().V1().ConfigMaps().Informer()
}

// side is one client of a scene, behind a fault proxy of its own, so that
// every request it sends is on record.
type side struct {
	who   string
	t     *timeline
	p     *faults.Proxy
	log   *soak.RequestLog
	ns    string
	start time.Time

	cs       kubernetes.Interface // through the side's proxy
	inf      cache.SharedIndexInformer
	loop     *loopResult      // the stale-reads scene's controller loop; nil elsewhere
	track    *soak.Tracker    // objects applied older than before (went back in time)
	rec      *reasons.Counter // ours: fallbacks and relists by reason
	syncedIn atomic.Int64     // nanoseconds after start; 0 = not synced (yet)
	exp      expected         // faults the scene causes on purpose (-v lines)

	verbose bool
	mu      sync.Mutex
	shown   map[int]bool // request Seq already on the timeline (-v)
	hidden  int          // requests not shown (-v shows the first maxShown)

	wg sync.WaitGroup
}

// maxShown is how many of a side's requests -v prints per scene.
const maxShown = 12

func startSide(ctx context.Context, t *timeline, who string, p *faults.Proxy, cfg *rest.Config, ns string, verbose bool) (*side, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := &side{who: who, cs: cs, t: t, p: p, log: soak.NewRequestLog(p), ns: ns, start: time.Now(),
		track: soak.NewTracker(), rec: reasons.New(), verbose: verbose, shown: map[int]bool{}}
	factory, inf := newInformer(who, cs, ns, s.rec)
	s.inf = inf
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.track.See,
		UpdateFunc: func(_, obj any) { s.track.See(obj) },
		DeleteFunc: s.track.See,
	}); err != nil {
		return nil, err
	}
	if verbose {
		if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			text, _ := s.exp.label(err.Error())
			s.say("watch error   %s", text)
		}); err != nil {
			return nil, err
		}
	}
	factory.Start(ctx.Done())
	s.wg.Add(2)
	go func() { defer s.wg.Done(); <-ctx.Done(); factory.Shutdown() }()
	go func() { defer s.wg.Done(); s.log.Run(ctx, 100*time.Millisecond) }()
	s.follow(ctx)
	return s, nil
}

// say prints a timeline line for the side (-v only).
func (s *side) say(format string, args ...any) {
	if s.verbose {
		s.t.say(s.who, format, args...)
	}
}

// follow notes the side's sync and, with -v, prints its requests as their
// answers come.
func (s *side) follow(ctx context.Context) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		wasSynced := false
		for {
			s.printNew()
			if !wasSynced {
				if d, ok := s.synced(); ok {
					wasSynced = true
					s.say("SYNCED        %d objects in %v", len(s.inf.GetStore().List()), d.Round(time.Millisecond))
				}
			}
			select {
			case <-ctx.Done():
				s.printNew()
				return
			case <-tick.C:
			}
		}
	}()
}

// printNew prints the side's requests answered since the last call, the
// first maxShown of the scene (-v only).
func (s *side) printNew() {
	if !s.verbose {
		return
	}
	for _, r := range s.log.Snapshot(s.start) {
		if r.Namespace != s.ns || r.Resource != "configmaps" || (r.Status == 0 && !r.Done) {
			continue
		}
		s.mu.Lock()
		seen := s.shown[r.Seq]
		s.shown[r.Seq] = true
		show := !seen && len(s.shown) <= maxShown
		if !seen && !show {
			s.hidden++
		}
		s.mu.Unlock()
		if show {
			s.t.sayRequest(s.who, r)
		}
	}
}

// synced reports whether (and how soon after its start) the side synced.
func (s *side) synced() (time.Duration, bool) {
	if s.syncedIn.Load() == 0 && s.inf.HasSynced() {
		s.syncedIn.CompareAndSwap(0, int64(time.Since(s.start)))
	}
	d := s.syncedIn.Load()
	return time.Duration(d), d != 0
}

// wire counts the side's ConfigMap list and watch requests from its start
// until to, as its proxy received them.
func (s *side) wire(to time.Time) soak.Wire {
	return soak.Count(s.log.Snapshot(s.start), s.ns, s.start, to)
}

// requests returns the side's ConfigMap requests so far.
func (s *side) requests() []faults.Request {
	var out []faults.Request
	for _, r := range s.log.Snapshot(s.start) {
		if r.Namespace == s.ns && r.Resource == "configmaps" {
			out = append(out, r)
		}
	}
	return out
}

// watching reports whether a watch of the side is in flight (a streaming
// list stays open as the watch once its initial events are in).
func (s *side) watching() bool {
	for _, r := range s.requests() {
		if r.Verb == "watch" && !r.Done && r.Status == 200 {
			return true
		}
	}
	return false
}

// storeRVs returns name -> resourceVersion of the side's store.
func (s *side) storeRVs() map[string]string {
	out := map[string]string{}
	for _, o := range s.inf.GetStore().List() {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			out[cm.Name] = cm.ResourceVersion
		}
	}
	return out
}

// stop waits (bounded) for the side's goroutines once its context ended.
func (s *side) stop() {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		s.t.say(s.who, "did not stop within 15s")
	}
	if s.verbose && s.hidden > 0 {
		s.t.say(s.who, "(%d more requests not shown; counted in the summary)", s.hidden)
	}
}

// ---- truth ----

// diff describes how got differs from want ("" if equal).
func diff(got, want map[string]string) string {
	d := storediff.Compare(want, got)
	stale := make([]string, len(d.Differ))
	for i, k := range d.Differ {
		stale[i] = fmt.Sprintf("%s at %s, not %s", k, got[k], want[k])
	}
	var parts []string
	for _, p := range []struct {
		name string
		keys []string
	}{{"missing", d.Missing}, {"extra", d.Extra}, {"stale", stale}} {
		if len(p.keys) == 0 {
			continue
		}
		n, more := len(p.keys), ""
		if n > 2 {
			more = fmt.Sprintf(" +%d more", n-2)
			p.keys = p.keys[:2]
		}
		parts = append(parts, fmt.Sprintf("%d %s: %s%s", n, p.name, strings.Join(p.keys, ", "), more))
	}
	return strings.Join(parts, "; ")
}
