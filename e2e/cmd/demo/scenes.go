package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
	"github.com/steadywatch/steadywatch/e2e/internal/storecheck"
	"github.com/steadywatch/steadywatch/e2e/soak"
)

// env is what a scene's trouble acts on.
type env struct {
	c           *harness.Cluster
	t           *timeline
	cs          kubernetes.Interface // admin client straight to the apiserver
	ns          string
	stock, ours *side
}

// scene is one fault, held against both sides on a real apiserver.
type scene struct {
	name string
	// fault and watch make the scene's start line: what happens, and what
	// to watch for.
	fault, watch string
	// legacy runs the scene on build.Legacy; the others share one
	// build.Current cluster.
	legacy bool
	// soakFault is the e2e/soak catalogue fault armed on both sides' proxies
	// before they start and lifted after trouble; "" = none.
	soakFault string
	// arm, when set, arms a fault of the scene's own on both sides'
	// proxies before they start; soak.Lift lifts it after trouble.
	arm     func(p *faults.Proxy)
	objects int
	// trouble runs once both sides are started, while the fault holds;
	// the fault is lifted when it returns.
	trouble func(ctx context.Context, e *env) error
	// window is how long after the lift both sides are given to hold what
	// the server holds (steadywatch's side is given at least oursBound).
	window time.Duration
}

// badBookmarkWatchTimeout caps the watches' timeout in the bad-bookmark
// scene (faults.StreamFaults.WatchTimeout).
const badBookmarkWatchTimeout = 4 * time.Second

// oursBound is how long after the lift steadywatch's side may take to hold
// what the server holds. A scene ends sooner when both sides do.
const oursBound = 30 * time.Second

var scenes = []scene{
	{
		name:      "redelivered",
		fault:     "a proxy re-sends each object's previous MODIFIED event after the newer one (kubernetes/kubernetes#73845, linkerd/linkerd#1680)",
		watch:     "stock applies the older event and goes back in time, and stays there; ours never applies it",
		soakFault: "older-event-redelivered", objects: 3, window: 5 * time.Second,
		trouble: func(ctx context.Context, e *env) error {
			if err := e.waitWatching(ctx); err != nil {
				return err
			}
			// Each object updated 4 times on the stream: 3 re-deliveries each.
			for i := 0; i < 8; i++ {
				if err := update(ctx, e, fmt.Sprintf("cm-%d", i%2)); err != nil {
					return err
				}
				if err := poll.Sleep(ctx, 250*time.Millisecond); err != nil {
					return err
				}
			}
			return nil
		},
	},
	{
		name:      "cut-stream",
		fault:     "a proxy ends every streaming list cleanly right before its initial-events-end bookmark (kubernetes/kubernetes#140890)",
		watch:     "stock asks again at once, without a delay: a request storm; ours lists instead and syncs",
		soakFault: "cut-before-end-bookmark", objects: 10, window: 10 * time.Second,
		trouble: func(ctx context.Context, e *env) error {
			return poll.Sleep(ctx, 5*time.Second)
		},
	},
	{
		name:      "bad-bookmark",
		fault:     `a proxy rewrites watch bookmarks to resourceVersion "abc" and ends the watch after each (a robustness case)`,
		watch:     `stock resumes from "abc", is refused (400) and relists from "abc", refused by the server itself, and never recovers; ours keeps its last good resourceVersion`,
		soakFault: "bookmark-rv-abc", objects: 3, window: 5 * time.Second,
		// The soak's stream faults, and each watch's timeout capped at 4 s:
		// the apiserver then sends every watch its bookmark 2 s before the
		// timeout instead of about once a minute.
		arm: func(p *faults.Proxy) {
			p.SetStreamFaults(faults.StreamFaults{BookmarkRV: "abc", EndAfterBookmarkRV: true, WatchTimeout: badBookmarkWatchTimeout})
		},
		trouble: func(ctx context.Context, e *env) error {
			if err := e.waitWatching(ctx); err != nil {
				return err
			}
			// The watch cache sends a bookmark only when its resourceVersion
			// moved: writes in another namespace move it without touching
			// what either side holds.
			scratch, err := populateNamespace(ctx, e.cs, "demo-scratch", 0)
			if err != nil {
				return err
			}
			rewritten := func(s *side) bool {
				for _, r := range s.requests() {
					if r.Verb == "watch" && strings.Contains(r.Fault, "-> abc") {
						return true
					}
				}
				return false
			}
			i, last := 0, time.Time{}
			if err := waitFor(ctx, 30*time.Second, func() bool {
				if rewritten(e.stock) && rewritten(e.ours) {
					return true
				}
				if time.Since(last) >= 500*time.Millisecond {
					i++
					last = time.Now()
					_, _ = e.cs.CoreV1().ConfigMaps(scratch).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", i)}}, metav1.CreateOptions{})
				}
				return false
			}); err != nil {
				return fmt.Errorf("no bookmark reached both sides: %w", err)
			}
			e.t.verbose("demo", "both sides got a bookmark at \"abc\"")
			// Both resume from what they hold; the write must reach them.
			return update(ctx, e, "cm-0")
		},
	},
	{
		name:      "retry-after",
		fault:     "every list and watch answered 429 Too Many Requests with Retry-After: -1 (client-go parses any integer)",
		watch:     "stock retries each request 10 times at once, then again after its backoff: a request storm; ours one request per backoff",
		soakFault: "429-retry-after-minus-1", objects: 3, window: 25 * time.Second,
		trouble: func(ctx context.Context, e *env) error {
			return poll.Sleep(ctx, 6*time.Second)
		},
	},
	{
		name:   "legacy",
		fault:  "a " + build.Legacy + " apiserver, which ignores sendInitialEvents: a streaming list's end bookmark never comes",
		watch:  "stock waits for that bookmark forever and never syncs; ours lists and syncs",
		legacy: true, objects: 20, window: 5 * time.Second,
		trouble: func(ctx context.Context, e *env) error {
			return waitFor(ctx, 30*time.Second, func() bool { _, ok := e.ours.synced(); return ok })
		},
	},
	{
		name: "stale-reads",
		fault: fmt.Sprintf("a proxy holds every watch event back %v (a lagging watch, kubernetes/kubernetes#59848) while a controller loop writes an object and reads it right back, %d times",
			staleDelay, staleCycles),
		watch:   "stock reads its informer's cache and gets objects older than its own write (stale reads); ours reads through readyourwrites.Client: never older, at the cost of a wait",
		arm:     func(p *faults.Proxy) { p.SetStreamFaults(faults.StreamFaults{DelayEvents: staleDelay}) },
		objects: 1, window: 5 * time.Second,
		trouble: func(ctx context.Context, e *env) error {
			if err := e.waitWatching(ctx); err != nil {
				return err
			}
			// Both controllers loop at once, each on its own object.
			errs := make(chan error, 2)
			go func() { errs <- e.stock.stockLoop(ctx, "stock-loop", staleCycles) }()
			go func() { errs <- e.ours.oursLoop(ctx, "ours-loop", staleCycles) }()
			return errors.Join(<-errs, <-errs)
		},
	},
	{
		name:    "drop",
		fault:   "the watch connections are dropped mid-stream (control: the fault client-go was built for)",
		watch:   "both ask again from their last resourceVersion and end equal to the server",
		objects: 5, window: 10 * time.Second,
		trouble: func(ctx context.Context, e *env) error {
			if err := e.waitWatching(ctx); err != nil {
				return err
			}
			if err := update(ctx, e, "cm-0"); err != nil {
				return err
			}
			n, m := e.stock.p.DropWatches(), e.ours.p.DropWatches()
			e.stock.exp.dropped(n)
			e.ours.exp.dropped(m)
			e.t.verbose("demo", "dropped the watch connections (stock: %d, ours: %d)", n, m)
			return update(ctx, e, "cm-1")
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

// waitWatching waits until both sides synced and watch.
func (e *env) waitWatching(ctx context.Context) error {
	return waitFor(ctx, 30*time.Second, func() bool {
		_, a := e.stock.synced()
		_, b := e.ours.synced()
		return a && b && e.stock.watching() && e.ours.watching()
	})
}

// runScene runs sc on c: a namespace of its own, both sides each behind a
// new proxy of c, the fault held, lifted, one more write, and both stores
// compared with the server's.
func runScene(ctx context.Context, t *timeline, sc scene, c *harness.Cluster, cfg config) (_ []result, err error) {
	api := c.APIServers()[0]
	cs, err := kubernetes.NewForConfig(api.RESTConfig())
	if err != nil {
		return nil, err
	}
	ns, err := populateNamespace(ctx, cs, "demo-"+sc.name, sc.objects)
	if err != nil {
		return nil, err
	}
	var f soak.Fault
	if sc.soakFault != "" {
		fs, unknown := soak.ByID([]string{sc.soakFault})
		if len(unknown) > 0 {
			return nil, fmt.Errorf("no fault %q in the soak's catalogue", sc.soakFault)
		}
		f = fs[0]
	}
	sctx, stopSides := context.WithCancel(ctx)
	var started []*side
	defer func() {
		stopSides()
		for _, s := range started {
			s.stop()
			_ = s.p.Close()
		}
	}()
	e := &env{c: c, t: t, cs: cs, ns: ns}
	for _, who := range []string{stock, ours} {
		p, pcfg, err := c.NewProxy(ctx, api)
		if err != nil {
			return nil, err
		}
		if f.Arm != nil {
			f.Arm(p)
		}
		if sc.arm != nil {
			sc.arm(p)
		}
		s, err := startSide(sctx, t, who, p, pcfg, ns, cfg.verbose)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		started = append(started, s)
		if who == stock {
			e.stock = s
		} else {
			e.ours = s
		}
	}
	if err := sc.trouble(ctx, e); err != nil {
		t.say("demo", "the fault did not go as planned: %v", err)
	}
	lift := time.Now()
	if f.Arm != nil || sc.arm != nil {
		soak.Lift(e.stock.p)
		soak.Lift(e.ours.p)
		t.verbose("demo", "fault lifted; one more write, then both stores against the server's")
	} else {
		t.verbose("demo", "one more write, then both stores against the server's")
	}
	if err := create(ctx, e, "after-fault"); err != nil {
		return nil, err
	}

	// Both sides against a fresh MostRecent list, until both hold it, or
	// stock's window and ours' bound passed.
	recovered := map[string]time.Duration{}
	check := func() error {
		want, _, err := storecheck.Truth(ctx, cs, ns)
		if err != nil {
			return err
		}
		for _, s := range []*side{e.stock, e.ours} {
			if _, ok := recovered[s.who]; !ok && maps.Equal(s.storeRVs(), want) {
				recovered[s.who] = time.Since(lift)
			}
		}
		return nil
	}
	var checkErr error
	_ = waitFor(ctx, max(sc.window, oursBound), func() bool {
		if checkErr = check(); checkErr != nil {
			return ctx.Err() != nil
		}
		_, stockDone := recovered[stock]
		_, oursDone := recovered[ours]
		return (stockDone || time.Since(lift) >= sc.window) && (oursDone || time.Since(lift) >= oursBound)
	})
	if checkErr != nil {
		return nil, checkErr
	}
	end := time.Now()
	want, rv, err := storecheck.Truth(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	var results []result
	for _, s := range []*side{e.stock, e.ours} {
		r := result{scene: sc.name, who: s.who, waited: end.Sub(lift), wire: s.wire(end), backward: s.track.WentBack()}
		r.syncedIn, r.synced = s.synced()
		r.recoveredIn, r.recovered = recovered[s.who]
		if s.who == ours {
			r.counters = s.rec.String()
		}
		r.loop = s.loop
		if got := s.storeRVs(); maps.Equal(got, want) {
			r.storeOK, r.storeNote = true, fmt.Sprintf("%d objects at rv %s", len(want), rv)
		} else {
			r.storeNote = diff(got, want)
		}
		results = append(results, r)
	}
	return results, nil
}

func create(ctx context.Context, e *env, name string) error {
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	e.t.verbose("demo", "created %s at rv %s", name, cm.ResourceVersion)
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
	e.t.verbose("demo", "updated %s to rv %s", name, cm.ResourceVersion)
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
	if err := poll.Within(ctx, d, 50*time.Millisecond, cond); err != nil {
		return fmt.Errorf("condition not met within %v: %w", d, err)
	}
	return nil
}
