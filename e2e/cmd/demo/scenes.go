package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

// env is what a scene's trouble acts on.
type env struct {
	c           *harness.Cluster
	t           *timeline
	cs          kubernetes.Interface // admin client straight to the apiserver (or HA balancer)
	ns          string
	stock, ours *side
}

type scene struct {
	name, title string
	opts        harness.Options
	objects     int
	trouble     func(ctx context.Context, e *env) error
}

var scenes = []scene{
	{
		name: "legacy", title: "a " + build.Legacy + " apiserver (ignores sendInitialEvents and resourceVersionMatch)",
		opts: harness.Options{Version: build.Legacy}, objects: 50,
		trouble: func(ctx context.Context, e *env) error {
			// Nothing more: syncing at all is the trouble. Show the watch works.
			return update(ctx, e, "cm-0")
		},
	},
	{
		name: "compaction", title: build.Current + ", watch cache off: compaction turns the watch into 410 Gone",
		opts: harness.Options{Version: build.Current, DisableWatchCache: true}, objects: 20,
		trouble: func(ctx context.Context, e *env) error {
			other, err := populateNamespace(ctx, e.cs, "demo-elsewhere", 20)
			if err != nil {
				return err
			}
			e.t.say("demo", "wrote 20 ConfigMaps in %s (no event for our namespace)", other)
			rev, err := e.c.Etcd().Compact(ctx)
			if err != nil {
				return err
			}
			e.t.say("demo", "etcd compacted at revision %d: every resourceVersion the clients hold is gone", rev)
			e.expectDuring("etcd compacted")
			dropWatches(e)
			// Wait for our relist after the 410 (it is what the scene is about).
			return waitFor(ctx, 30*time.Second, func() bool {
				e.ours.mu.Lock()
				defer e.ours.mu.Unlock()
				return e.ours.relists["watch-gone"] > 0
			})
		},
	},
	{
		name: "drop", title: build.Current + ": the watch connection is dropped mid-stream",
		opts: harness.Options{Version: build.Current}, objects: 10,
		trouble: func(ctx context.Context, e *env) error {
			if err := create(ctx, e, "before-drop"); err != nil {
				return err
			}
			if err := waitFor(ctx, 15*time.Second, func() bool { return has(e.ours, "before-drop") }); err != nil {
				return err
			}
			dropWatches(e)
			return create(ctx, e, "after-drop")
		},
	},
	{
		name: "ha", title: "two " + build.Current + " apiservers, requests alternating; one member restarted (lagging) meanwhile",
		opts: harness.Options{Version: build.Current, HA: true}, objects: 10,
		trouble: func(ctx context.Context, e *env) error {
			member := e.c.APIServers()[1]
			e.t.say("demo", "restarting %s: its watch cache starts again from etcd; requests routed to it fail until it is ready", member.Name())
			e.expectDuring(member.Name() + " restarting")
			restarted := make(chan error, 1)
			go func() { restarted <- member.Restart(ctx) }()
			var errs []error
			for i := 0; i < 10; i++ {
				errs = append(errs, update(ctx, e, fmt.Sprintf("cm-%d", i%3)))
				if i == 2 || i == 6 {
					dropWatches(e)
				}
				time.Sleep(200 * time.Millisecond) // pacing the writes over the restart, not synchronisation
			}
			err := <-restarted
			e.expectDuring("")
			if err == nil {
				e.t.say("demo", "%s is ready again", member.Name())
			}
			dropWatches(e)
			return errors.Join(append(errs, err)...)
		},
	},
}

func sceneNames() []string {
	out := make([]string, len(scenes))
	for i, s := range scenes {
		out[i] = s.name
	}
	return out
}

func sceneByName(n string) (scene, bool) {
	for _, s := range scenes {
		if s.name == n {
			return s, true
		}
	}
	return scene{}, false
}

func runScene(ctx context.Context, t *timeline, sc scene, cfg config, progress io.Writer) (_ []result, err error) {
	o := sc.opts
	o.Progress = progress
	t.say("demo", "starting %s (kube-apiserver %s; built or reused from e2e/.cache, progress on stderr)", clusterShape(o), o.Version)
	c, err := harness.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := c.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	t.say("demo", "cluster ready")
	// Writes and the truth go straight to the first apiserver (in HA, the
	// member that is not restarted); a MostRecent list is a consistent read.
	direct := c.APIServers()[0].RESTConfig()
	cs, err := kubernetes.NewForConfig(direct)
	if err != nil {
		return nil, err
	}
	ns, err := populateNamespace(ctx, cs, "demo-"+sc.name, sc.objects)
	if err != nil {
		return nil, err
	}
	t.say("demo", "namespace %s holds %d ConfigMaps", ns, sc.objects)

	backends := c.APIServers()[:1]
	if o.HA {
		backends = c.APIServers()
	}
	stockP, stockCfg, err := c.NewProxy(ctx, backends...)
	if err != nil {
		return nil, err
	}
	oursP, oursCfg, err := c.NewProxy(ctx, backends...)
	if err != nil {
		return nil, err
	}
	if o.HA {
		stockP.Alternate()
		oursP.Alternate()
	}

	sctx, stopSides := context.WithCancel(ctx)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopSides()
		}
	}
	defer stop()
	ours, err := startOurs(sctx, t, oursP, oursCfg, ns)
	if err != nil {
		return nil, err
	}
	stock, err := startStock(sctx, t, stockP, stockCfg, ns)
	if err != nil {
		return nil, err
	}
	e := &env{c: c, t: t, cs: cs, ns: ns, stock: stock, ours: ours}

	// Sync: ours must, stock gets --stock-bound.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if waitFor(ctx, cfg.stockBound, stock.hasSynced) != nil {
			t.say("stock", "NOT SYNCED    after %v (still waiting: %s)", cfg.stockBound, lastSync(stock))
		}
	}()
	oursErr := waitFor(ctx, 60*time.Second, ours.hasSynced)
	wg.Wait()
	if oursErr != nil {
		t.say("ours", "NOT SYNCED    after 60s")
	} else {
		// Both watching (or stock hopelessly waiting) before the trouble.
		_ = waitFor(ctx, 10*time.Second, func() bool { return watching(ours) })
		if stock.hasSynced() {
			_ = waitFor(ctx, 10*time.Second, func() bool { return watching(stock) })
		}
		if err := sc.trouble(ctx, e); err != nil {
			t.say("demo", "trouble did not go as planned: %v", err)
		}
	}

	// One more write, then both stores against a fresh MostRecent list.
	if err := create(ctx, e, "final"); err != nil {
		return nil, err
	}
	want, rv, err := truth(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	_ = waitFor(ctx, 30*time.Second, func() bool {
		return maps.Equal(ours.storeRVs(), want) && (!stock.hasSynced() || maps.Equal(stock.storeRVs(), want))
	})
	var results []result
	for _, s := range []*side{stock, ours} {
		s.printNew() // every request answered so far, before the verdict
	}
	for _, s := range []*side{stock, ours} {
		r := result{scene: sc.name, who: s.who, syncs: s.syncs(), requests: len(s.requests()), backward: s.backward.Load()}
		r.syncedIn, r.synced = s.synced()
		s.mu.Lock()
		r.causes, r.fallbacks, r.decision = maps.Clone(s.relists), maps.Clone(s.fallbacks), s.decision
		s.mu.Unlock()
		switch got := s.storeRVs(); {
		case !r.synced:
			r.storeNote = fmt.Sprintf("never synced; %d of %d objects", len(got), len(want))
		case maps.Equal(got, want):
			r.storeOK, r.storeNote = true, fmt.Sprintf("%d objects, list at rv %s", len(want), rv)
		default:
			r.storeNote = diff(got, want)
		}
		verdict := "== truth"
		if !r.storeOK {
			verdict = "!= truth: " + r.storeNote
		}
		t.say(s.who, "FINAL         store %s", verdict)
		results = append(results, r)
	}
	stop()
	for _, s := range []*side{stock, ours} {
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.say(s.who, "did not stop within 15s")
		}
	}
	return results, nil
}

func clusterShape(o harness.Options) string {
	s := "1 apiserver"
	if o.HA {
		s = "2 apiservers behind per-client balancers"
	}
	if o.DisableWatchCache {
		s += ", watch cache off"
	}
	return s
}

// lastSync describes the side's last sync request on the wire.
func lastSync(s *side) string {
	var last *faults.Request
	for _, r := range s.requests() {
		if isSync(r) {
			r := r
			last = &r
		}
	}
	if last == nil {
		return "no list sent"
	}
	state := "open"
	if last.Done {
		state = "ended"
	}
	return fmt.Sprintf("%s, %s for %v", describeRequest(*last), state, time.Since(last.Time).Round(100*time.Millisecond))
}

// watching reports whether a watch of the side is in flight (a streaming
// list stays open as the watch once its initial events are in).
func watching(s *side) bool {
	for _, r := range s.requests() {
		if r.Verb == "watch" && !r.Done && r.Status == 200 {
			return true
		}
	}
	return false
}

func has(s *side, name string) bool {
	_, ok := s.storeRVs()[name]
	return ok
}

// dropWatches resets every watch stream of both sides (expected faults: the
// sides' reports of them are labelled so).
func dropWatches(e *env) {
	n, m := e.stock.p.DropWatches(), e.ours.p.DropWatches()
	e.stock.exp.dropped(n)
	e.ours.exp.dropped(m)
	e.t.say("demo", "dropped the watch connections (stock: %d, ours: %d): an expected fault", n, m)
}

// expectDuring marks both sides' errors as expected for why, until called
// with "".
func (e *env) expectDuring(why string) {
	e.stock.exp.during(why)
	e.ours.exp.during(why)
}

func create(ctx context.Context, e *env, name string) error {
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	e.t.say("demo", "created %s at rv %s", name, cm.ResourceVersion)
	return nil
}

func update(ctx context.Context, e *env, name string) error {
	cms := e.cs.CoreV1().ConfigMaps(e.ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["updated"] = time.Now().Format(time.RFC3339Nano)
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	e.t.say("demo", "updated %s to rv %s", name, cm.ResourceVersion)
	return nil
}

func populateNamespace(ctx context.Context, cs kubernetes.Interface, prefix string, n int) (string, error) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	for i := 0; i < n; i++ {
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
			Data:       map[string]string{"i": fmt.Sprint(i)},
		}, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	return ns.Name, nil
}

// waitFor polls cond every 50ms until it is true (nil), d passes or ctx ends.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("condition not met within %v: %w", d, ctx.Err())
		case <-tick.C:
		}
	}
}
