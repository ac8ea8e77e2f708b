package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
)

// syncRun is one contender run of the initial sync with the server-side cost it caused.
type syncRun struct {
	Rep    int         `json:"rep"`
	Result *syncResult `json:"result"`
	Server counters    `json:"server"`
}

type syncReport struct {
	// Server is the -servers entry this ran on ("" in results from before
	// -servers: the single server of the run); Kind "configmaps" or "cr".
	Server string `json:"server,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// ScalingOnly: run for the scaling charts only (scaling contenders, no
	// decode limit); not an initial-sync section of its own.
	ScalingOnly bool                       `json:"scaling_only,omitempty"`
	Objects     int                        `json:"objects"`
	Namespace   string                     `json:"namespace"`
	Contenders  []contender                `json:"contenders"`
	Runs        map[string][]syncRun       `json:"runs"`
	Decode      map[string][]*decodeResult `json:"decode"` // "json", "proto"
	// Failures: contenders that did not sync (not retried in later repetitions).
	Failures map[string]string `json:"failures,omitempty"`
}

func (p *syncReport) isCR() bool { return p.Kind == "cr" }

// runSync syncs n objects of kind ("configmaps" or "cr") with each named
// contender, count times interleaved; decode adds the decode limit.
func (b *bench) runSync(ctx context.Context, n int, kind string, names []string, decode bool) (*syncReport, error) {
	ns := "sync-" + strconv.Itoa(n)
	resource := "configmaps"
	if kind == "cr" {
		ns = "synccr-" + strconv.Itoa(n)
		resource = crGVR.Resource
		decode = false
		if err := b.populateCR(ctx, ns, n); err != nil {
			return nil, err
		}
	} else if err := b.populate(ctx, ns, n); err != nil {
		return nil, err
	}
	kc := b.cluster.KubeconfigPath()
	rep := &syncReport{Server: b.spec.Spec, Kind: kind, ScalingOnly: !decode && kind != "cr", Objects: n, Namespace: ns, Runs: map[string][]syncRun{}, Decode: map[string][]*decodeResult{}, Failures: map[string]string{}}
	for _, name := range names {
		c, err := contenderByName(name)
		if err != nil {
			return nil, err
		}
		rep.Contenders = append(rep.Contenders, c)
		if why, ok := b.failed[name]; ok {
			// It did not sync at a smaller size on this server: do not
			// spend another timeout on it.
			rep.Failures[name] = "not run: " + why
		}
	}
	order := slices.Clone(names)
	if decode {
		order = append(order, "decode-json", "decode-proto")
	}
	for r := 0; r < b.c.count; r++ {
		logf("initial sync %s %d %s: repetition %d/%d", b.spec.Spec, n, kind, r+1, b.c.count)
		for _, name := range alternate(order, r) {
			if proto, ok := strings.CutPrefix(name, "decode-"); ok {
				var d decodeResult
				if err := b.runChildOnce(ctx, nil, &d, "-mode", "decode", "-kubeconfig", kc, "-namespace", ns,
					"-expect", strconv.Itoa(n), "-proto="+strconv.FormatBool(proto == "proto")); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				rep.Decode[proto] = append(rep.Decode[proto], &d)
				continue
			}
			if _, failed := rep.Failures[name]; failed {
				continue
			}
			c, _ := contenderByName(name)
			before, err := b.serverMetricsFor(ctx, resource)
			if err != nil {
				return nil, err
			}
			var res syncResult
			args := []string{"-mode", "sync", "-kubeconfig", kc, "-contender", name, "-namespace", ns, "-expect", strconv.Itoa(n), "-timeout", syncTimeout.String()}
			if b.c.profile != "" && r == 0 {
				args = append(args, "-cpuprofile", filepath.Join(b.c.profile, fmt.Sprintf("sync-%s-%d-%s.prof", strings.ReplaceAll(b.spec.Spec, "/", "-"), n, name)))
			}
			if err := b.runChildOnce(ctx, c.Env, &res, args...); err != nil {
				// A contender that cannot sync is a result, not a reason to
				// lose the others': record it and stop running it.
				rep.Failures[name] = fmt.Sprintf("repetition %d: %v", r+1, err)
				b.failed[name] = fmt.Sprintf("did not sync %d objects on this server", n)
				logf("  %-28s FAILED: %v", name, err)
				continue
			}
			after, err := b.serverMetricsFor(ctx, resource)
			if err != nil {
				return nil, err
			}
			if r > 0 {
				res.RequestLog = nil // keep the JSON small: one request log per contender
			}
			rep.Runs[name] = append(rep.Runs[name], syncRun{Rep: r, Result: &res, Server: after.minus(before)})
			logf("  %-28s synced %d in %7.1f ms, peak heap %6.1f MiB, wire in %6.1f MiB, requests %v",
				name, res.Objects, res.SyncMs, mib(res.PeakHeap), mib(uint64(res.WireIn)), res.Requests)
		}
	}
	return rep, nil
}

// syncTimeout bounds one contender's initial sync (the slowest healthy one,
// JSON at 50k objects, takes about 15 s on a loaded 2-core machine); stock
// on v1.18 never syncs, and 45 s shows that as well as longer would.
const syncTimeout = 45 * time.Second

func (b *bench) runChildOnce(ctx context.Context, env []string, v any, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ch, err := b.spawn(ctx, env, args...)
	if err != nil {
		return err
	}
	if err := ch.next(ctx, v); err != nil {
		return err
	}
	return ch.wait()
}

func mib(v uint64) float64 { return float64(v) / (1 << 20) }

// recoveryRun is one contender run of the recovery or the restart herd.
type recoveryRun struct {
	Rep          int             `json:"rep"`
	Result       *recoveryResult `json:"result"`
	Server       counters        `json:"server"`
	Faults       []string        `json:"faults,omitempty"`         // recovery: what the proxy did
	ReadyMs      float64         `json:"restart_ms,omitempty"`     // restart: stop..ready of the apiserver
	AfterReadyMs float64         `json:"after_ready_ms,omitempty"` // restart: ready..all caches saw the marker
}

type recoveryReport struct {
	Server     string                   `json:"server,omitempty"`
	Objects    int                      `json:"objects"`
	Instances  int                      `json:"instances"`
	Namespace  string                   `json:"namespace"`
	Contenders []string                 `json:"contenders"`
	Runs       map[string][]recoveryRun `json:"runs"`
	Baseline   counters                 `json:"baseline_server,omitempty"` // restart: one without clients
}

var recoveryContenders = []string{"stock", "stock-list", "sw-informer", "sw-reflector"}

// runRecovery: each contender syncs through a fault proxy; then its watch is ended
// and the re-watch answered with a 410 ERROR event (what a watch served from
// the watch cache gets when its resourceVersion has left the window); the
// contender recovers however it does; a marker ConfigMap created right after
// shows when it is in sync again.
func (b *bench) runRecovery(ctx context.Context, n int) (*recoveryReport, error) {
	ns := "sync-" + strconv.Itoa(n)
	if err := b.populate(ctx, ns, n); err != nil {
		return nil, err
	}
	proxy, pcfg, err := b.cluster.NewProxy(ctx, b.cluster.APIServers()[0])
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	kc, err := b.writeKubeconfig(pcfg, "bench-proxy.kubeconfig")
	if err != nil {
		return nil, err
	}
	rep := &recoveryReport{Objects: n, Instances: 1, Namespace: ns, Contenders: recoveryContenders, Runs: map[string][]recoveryRun{}}
	for r := 0; r < b.c.count; r++ {
		logf("recovery %d objects: repetition %d/%d", n, r+1, b.c.count)
		for _, name := range alternate(recoveryContenders, r) {
			run, err := b.recoveryOnce(ctx, proxy, kc, ns, n, name, r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			rep.Runs[name] = append(rep.Runs[name], *run)
			res := run.Result
			logf("  %-22s re-synced in %7.1f ms, wire in %6.1f MiB, requests %v, etcd lists %v",
				name, res.RecoverMs, mib(uint64(res.WireIn)), res.Requests, run.Server.etcdLists())
		}
	}
	return rep, nil
}

func (b *bench) recoveryOnce(ctx context.Context, proxy *faults.Proxy, kc, ns string, n int, name string, r int) (*recoveryRun, error) {
	c, _ := contenderByName(name)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	proxy.ResetRequests()
	ch, err := b.spawn(ctx, c.Env, "-mode", "recover", "-kubeconfig", kc, "-contender", name, "-namespace", ns, "-expect", strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := ch.next(ctx, &ev); err != nil {
		return nil, err
	}
	if err := waitWatchThenReset(ctx, proxy, false); err != nil {
		return nil, err
	}
	rule := proxy.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Count: 1, Status: 410,
		Message: "too old resource version (injected by bench)", AsWatchEvent: true})
	defer proxy.Remove(rule)
	marker := fmt.Sprintf("marker-recovery-%s-%d", name, r)
	before, err := b.serverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	if err := ch.send("go " + marker); err != nil {
		return nil, err
	}
	if err := ch.next(ctx, &ev); err != nil {
		return nil, err
	}
	proxy.EndWatches()
	res, after, err := b.markerSeen(ctx, ch, ns, marker)
	if err != nil {
		return nil, err
	}
	var fired []string
	for _, q := range proxy.Requests() {
		if q.Fault != "" {
			fired = append(fired, q.Verb+" "+q.Fault)
		}
	}
	if len(fired) == 0 {
		return nil, errNoFault
	}
	if r > 0 {
		res.RequestLog = nil
	}
	// The marker's create and delete are ours, not the contender's.
	return &recoveryRun{Rep: r, Result: res, Server: after.minus(before), Faults: fired}, nil
}

var restartContenders = []string{"stock", "sw-informer", "sw-reflector"}

// runRestart: a herd of informers of one kind in one process, synced; the
// apiserver restarts; how many requests and etcd lists until every cache
// has seen a marker created once the server is ready again.
func (b *bench) runRestart(ctx context.Context) (*recoveryReport, error) {
	ns := "herd"
	n := b.c.herdObjs
	if err := b.populate(ctx, ns, n); err != nil {
		return nil, err
	}
	api := b.cluster.APIServers()[0]
	rep := &recoveryReport{Objects: n, Instances: b.c.herd, Namespace: ns, Contenders: restartContenders, Runs: map[string][]recoveryRun{}}
	// Baseline: what a restart costs with no client at all.
	if err := api.Restart(ctx); err != nil {
		return nil, err
	}
	if err := b.createMarker(ctx, ns, "marker-restart-baseline"); err != nil {
		return nil, err
	}
	// The restarted server fills its watch cache from etcd in the background.
	var base counters
	pctx, pcancel := context.WithTimeout(ctx, time.Minute)
	err := poll.Until(pctx, 100*time.Millisecond, func() bool {
		m, err := b.serverMetrics(pctx)
		base = m
		return err == nil && m["apiserver_watch_cache_initializations_total"] >= 1
	})
	pcancel()
	if err != nil {
		return nil, fmt.Errorf("baseline: watch cache not initialised after restart: %w", err)
	}
	rep.Baseline = base
	if err := b.deleteMarker(ctx, ns, "marker-restart-baseline"); err != nil {
		return nil, err
	}
	count := max(1, b.c.count/2) // each repetition restarts the apiserver per contender
	for r := 0; r < count; r++ {
		logf("restart %d informers x %d objects: repetition %d/%d", b.c.herd, n, r+1, count)
		for _, name := range alternate(restartContenders, r) {
			run, err := b.restartOnce(ctx, ns, n, name, r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			rep.Runs[name] = append(rep.Runs[name], *run)
			res := run.Result
			logf("  %-22s all %d re-synced %7.1f ms after ready (restart %.0f ms), requests %v, etcd lists %v",
				name, res.Instances, run.AfterReadyMs, run.ReadyMs, res.Requests, run.Server.etcdLists())
		}
	}
	return rep, nil
}

func (b *bench) restartOnce(ctx context.Context, ns string, n int, name string, r int) (*recoveryRun, error) {
	c, _ := contenderByName(name)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ch, err := b.spawn(ctx, c.Env, "-mode", "recover", "-kubeconfig", b.cluster.KubeconfigPath(), "-contender", name,
		"-namespace", ns, "-expect", strconv.Itoa(n), "-instances", strconv.Itoa(b.c.herd))
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := ch.next(ctx, &ev); err != nil {
		return nil, err
	}
	marker := fmt.Sprintf("marker-restart-%s-%d", name, r)
	if err := ch.send("go " + marker); err != nil {
		return nil, err
	}
	if err := ch.next(ctx, &ev); err != nil {
		return nil, err
	}
	api := b.cluster.APIServers()[0]
	t0 := time.Now()
	if err := api.Restart(ctx); err != nil {
		return nil, err
	}
	ready := time.Now()
	// The server's counters restarted with it: they hold everything since
	// the restart (the baseline shows what a restart alone costs).
	res, after, err := b.markerSeen(ctx, ch, ns, marker)
	if err != nil {
		return nil, err
	}
	if r > 0 {
		res.RequestLog = nil
	}
	return &recoveryRun{Rep: r, Result: res, Server: after, ReadyMs: ms(ready.Sub(t0)),
		AfterReadyMs: ms(time.Unix(0, res.DoneUnixNs).Sub(ready))}, nil
}

// markerSeen creates marker in ns, reads the child's result (every cache
// has seen the marker), waits for the child to exit, reads the server's
// counters and deletes the marker.
func (b *bench) markerSeen(ctx context.Context, ch *child, ns, marker string) (*recoveryResult, counters, error) {
	if err := b.createMarker(ctx, ns, marker); err != nil {
		return nil, nil, err
	}
	var res recoveryResult
	if err := ch.next(ctx, &res); err != nil {
		return nil, nil, err
	}
	if err := ch.wait(); err != nil {
		return nil, nil, err
	}
	after, err := b.serverMetrics(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := b.deleteMarker(ctx, ns, marker); err != nil {
		return nil, nil, err
	}
	return &res, after, nil
}

// waitWatchThenReset waits (up to a minute) until the proxy's request log
// holds a configmaps watch that the backend answered 200 without a fault,
// and still open if stillOpen, then resets the log: HasSynced can be true
// before the watch that follows a list is open, and ending watches then
// would end nothing.
func waitWatchThenReset(ctx context.Context, proxy *faults.Proxy, stillOpen bool) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll.Until(wctx, 5*time.Millisecond, func() bool {
		for _, q := range proxy.Requests() {
			if q.Verb == "watch" && q.Resource == "configmaps" && q.Status == 200 && q.Fault == "" && (!stillOpen || !q.Done) {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("no watch open after sync: %w", err)
	}
	proxy.ResetRequests()
	return nil
}
