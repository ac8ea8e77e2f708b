package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
	"github.com/steadywatch/steadywatch/internal/capability"
	shard "github.com/steadywatch/steadywatch/internal/sharding"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// Sharding (KEP-5866, "Sharded List and Watch"). An operator's replicas
// each hold one range of the uid hash space (package shard), instead of
// every replica holding everything. For each server mode (v1.37.2 with the
// ShardedListAndWatch gate on: the server filters; with it off, or an older
// server: the client filters) and each replica count N, N child processes
// start their caches at once, each a drop-in informer
// (reflector.NewSharedIndexInformerWithOptions, or with -sharding-replica
// sw-dropin-decoding reflector.NewInformerFor) over shard.Wrap of a
// typed cache.ListWatch holding a static range: the slices shard.Assign gives it
// among N members (no Leases: membership is not what is measured). Beside
// them, stock client-go's informer holds everything in one process. Each
// process measures its own sync time, heap and bytes on the wire; the
// parent reads the apiserver's CPU seconds for the whole group and checks
// that the replicas' caches split the objects exactly once.

// shardingServer is one entry of -sharding-servers: a release, with the
// ShardedListAndWatch gate on ("v1.37.2/sharded") or not.
type shardingServer struct {
	Spec    string `json:"spec"`
	Version string `json:"version"`
	Gate    bool   `json:"sharded_list_and_watch"`
}

func parseShardingServers(s string) ([]shardingServer, error) {
	return parseReleases(s, "-sharding-servers", "sharded", "only /sharded: --feature-gates=ShardedListAndWatch=true",
		func(f string) string { return fmt.Sprintf("-sharding-servers: %q", f) },
		func(f, v string, gate bool) shardingServer { return shardingServer{Spec: f, Version: v, Gate: gate} })
}

// wantMode is the mode every replica must find on the server.
func (s shardingServer) wantMode() shard.Mode {
	if s.Gate {
		return shard.ModeServer
	}
	return shard.ModeClient
}

// stock is the unsharded baseline on this server: client-go's informer with
// its defaults, or with WatchListClient off on a server before 1.27, where
// stock client-go never syncs (the server ignores sendInitialEvents; see the initial sync).
func (s shardingServer) stock() string {
	if minor, err := strconv.Atoi(strings.Split(strings.TrimPrefix(s.Version, "v"), ".")[1]); err == nil && minor < 27 {
		return "stock-list"
	}
	return "stock"
}

// shardingReplicaPaths: the adoption paths a replica can run over shard.Wrap (the
// drop-in informer over a typed cache.ListWatch, without or with
// item-by-item list decoding).
var shardingReplicaPaths = []string{"sw-dropin-listwatch", "sw-dropin-decoding"}

// shardingSlices: the hash space is cut as shard.Assign cuts it for a Membership
// (64 divides evenly among 1, 2 and 4 members).
const shardingSlices = shard.DefaultSlices

// shardingSelector is replica i's static range among n: the slices shard.Assign
// gives member "replica-<i>" of n, as one Selector over metadata.uid.
func shardingSelector(i, n int) (shard.Selector, error) {
	members := make([]string, n)
	for k := range members {
		members[k] = "replica-" + strconv.Itoa(k)
	}
	owned := shard.Assign(members, shardingSlices)[members[i]]
	sel, ok := shard.SelectorOf(shard.FieldUID, owned, shardingSlices)
	if !ok {
		return shard.Selector{}, fmt.Errorf("replica %d of %d has no slices", i, n)
	}
	return sel, nil
}

// shardingResult is what one child (a replica, or stock) measured.
type shardingResult struct {
	Replica  int `json:"replica"`
	Replicas int `json:"replicas"` // 0 = stock client-go, unsharded
	// Mode: shard.ListerWatcher.Mode at sync ("" for stock).
	Mode string `json:"mode,omitempty"`
	// Ranges: how many shardRange terms the replica's selector has.
	Ranges  int     `json:"ranges,omitempty"`
	Objects int     `json:"objects"`
	SyncMs  float64 `json:"sync_ms"`
	// PeakHeap: peak of /memory/classes/heap/objects:bytes (live and not
	// yet swept) sampled every millisecond from the start to the sync;
	// PeakLive: peak of /gc/heap/live:bytes; BaseHeap: heap after the
	// forced GC before the start; RetainedHeap: heap after a forced GC once
	// synced (the cache and the process's fixed cost).
	PeakHeap     uint64 `json:"peak_heap_bytes"`
	PeakLive     uint64 `json:"peak_live_bytes"`
	BaseHeap     uint64 `json:"base_heap_bytes"`
	RetainedHeap uint64 `json:"retained_heap_bytes"`
	GCCycles     uint64 `json:"gc_cycles"`
	wireStats
	// Names: the keys the cache held (for the parent's split check; not
	// kept in the results).
	Names []string `json:"names,omitempty"`
}

// shardingGroup is one run of a replica count (or of stock): its processes
// started at once.
type shardingGroup struct {
	Replicas int `json:"replicas"` // 0 = stock
	Rep      int `json:"rep"`
	// WallMs: from "go" until the last process reported; APIServerCPU: the
	// apiserver's process_cpu_seconds_total over that time.
	WallMs       float64          `json:"wall_ms"`
	APIServerCPU float64          `json:"apiserver_cpu_s"`
	Results      []shardingResult `json:"results"`
}

type shardingReport struct {
	Server    string            `json:"server"`
	Version   string            `json:"version"`
	Gate      bool              `json:"sharded_list_and_watch"`
	Objects   int               `json:"objects"`
	Namespace string            `json:"namespace"`
	Count     int               `json:"count"`
	Replicas  []int             `json:"replicas"`
	Slices    int               `json:"slices"`
	CreatedS  float64           `json:"created_s"` // creating the objects on this server (0: reused)
	Stock     string            `json:"stock"`     // the unsharded baseline's contender
	Replica   string            `json:"replica"`   // each replica's contender (adoption path)
	Groups    []shardingGroup   `json:"groups"`
	Failures  map[string]string `json:"failures,omitempty"`
}

// shardingTimeout bounds one group (every process syncing 100k objects at once on
// a loaded machine).
const shardingTimeout = 10 * time.Minute

// shardingFlags sets the sharding configuration from its flags.
func (c *config) shardingFlags(servers, replicas string) error {
	var err error
	if c.shardingServers, err = parseShardingServers(servers); err != nil {
		return err
	}
	if c.shardingReplicas, err = parseInts(replicas); err != nil {
		return fmt.Errorf("-sharding-replicas: %w", err)
	}
	slices.Sort(c.shardingReplicas)
	c.shardingReplicas = slices.Compact(c.shardingReplicas)
	if len(c.shardingReplicas) == 0 || c.shardingReplicas[len(c.shardingReplicas)-1] > 16 {
		return errors.New("-sharding-replicas: want counts from 1 to 16")
	}
	if c.shardingObjects < 1 {
		return errors.New("-sharding-objects must be positive")
	}
	if c.shardingCount < 1 {
		return errors.New("-sharding-count must be positive")
	}
	if !slices.Contains(shardingReplicaPaths, c.shardingReplica) {
		return fmt.Errorf("-sharding-replica: %q is not one of %s", c.shardingReplica, strings.Join(shardingReplicaPaths, ", "))
	}
	return nil
}

// runSharding starts each -sharding-servers entry in turn and measures every replica
// count beside stock on it. Entries of one release share an etcd data
// directory, so their objects are created once.
func runSharding(ctx context.Context, c config) ([]*shardingReport, error) {
	root, err := os.MkdirTemp("", "steadywatch-bench-sharding-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	var out []*shardingReport
	for _, sp := range c.shardingServers {
		rep, err := runShardingServer(ctx, c, sp, filepath.Join(root, sp.Version))
		if err != nil {
			return out, fmt.Errorf("sharding on %s: %w", sp.Spec, err)
		}
		out = append(out, rep)
	}
	return out, nil
}

func runShardingServer(ctx context.Context, c config, sp shardingServer, dir string) (*shardingReport, error) {
	args := []string{"--profiling=true"}
	if sp.Gate {
		args = append(args, "--feature-gates=ShardedListAndWatch=true")
	}
	logf("sharding: starting a real kube-apiserver %s (harness, %s, etcd data in %s)", sp.Version, strings.Join(args, " "), dir)
	cl, err := harness.Start(ctx, harness.Options{Version: sp.Version, Dir: dir, Progress: os.Stderr, ExtraArgs: args})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			logf("stopping the cluster: %v", err)
		}
	}()
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b := &bench{c: c, cluster: cl, cs: cs, exe: exe, dir: cl.Dir(), populated: map[string]int{}, failed: map[string]string{}}
	n := c.shardingObjects
	ns := "sharding-" + strconv.Itoa(n)
	rep := &shardingReport{Server: sp.Spec, Version: cl.Version(), Gate: sp.Gate, Objects: n, Namespace: ns, Count: c.shardingCount,
		Replicas: c.shardingReplicas, Slices: shardingSlices, Stock: sp.stock(), Replica: c.shardingReplica, Failures: map[string]string{}}
	have, err := countObjects(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	if have == n {
		logf("sharding: %d ConfigMaps already in %s (etcd data reused)", n, ns)
	} else {
		if have > n {
			return nil, fmt.Errorf("namespace %s holds %d ConfigMaps, want %d", ns, have, n)
		}
		t0 := time.Now()
		if err := b.populate(ctx, ns, n); err != nil {
			return nil, err
		}
		rep.CreatedS = time.Since(t0).Seconds()
	}
	groups := append([]int{0}, c.shardingReplicas...) // 0 = stock
	heading := func(r int) { logf("sharding %s, %d objects: repetition %d/%d", sp.Spec, n, r+1, c.shardingCount) }
	once := func(r, k int) error {
		g, err := b.shardingGroup(ctx, sp, ns, n, k, r)
		if err != nil {
			return err
		}
		rep.Groups = append(rep.Groups, *g)
		key := shardingGroupName(k)
		for _, res := range g.Results {
			logf("  %-10s replica %d: %s %d objects in %6.0f ms, peak heap %6.1f MiB, retained %6.1f MiB, wire in %6.1f MiB",
				key, res.Replica, res.Mode, res.Objects, res.SyncMs, mib(res.PeakHeap), mib(res.RetainedHeap), mib(uint64(res.WireIn)))
		}
		logf("  %-10s group: %.0f ms, apiserver CPU %.2f s", key, g.WallMs, g.APIServerCPU)
		return nil
	}
	if err := repeatAlternating(ctx, c.shardingCount, groups, shardingGroupName, 10, rep.Failures, heading, once); err != nil {
		return nil, err
	}
	return rep, nil
}

func shardingGroupName(replicas int) string {
	if replicas == 0 {
		return "stock"
	}
	return strconv.Itoa(replicas) + " replica" + map[bool]string{true: "s"}[replicas > 1]
}

// countObjects counts the ConfigMaps in ns from one limit=1 list.
func countObjects(ctx context.Context, cs kubernetes.Interface, ns string) (int, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	n := len(l.Items)
	if l.RemainingItemCount != nil {
		n += int(*l.RemainingItemCount)
	} else if l.Continue != "" {
		return -1, nil // unknown: populate (it skips what exists)
	}
	return n, nil
}

// shardingGroup runs one group: k replicas (0: stock) as child processes that
// start their caches at once, and checks the split.
func (b *bench) shardingGroup(ctx context.Context, sp shardingServer, ns string, n, k, r int) (*shardingGroup, error) {
	ctx, cancel := context.WithTimeout(ctx, shardingTimeout)
	defer cancel()
	procs := max(1, k)
	kids := make([]*child, procs)
	defer func() {
		for _, ch := range kids {
			if ch != nil {
				_ = ch.cmd.Process.Kill() // on an error path; a no-op once it exited
			}
		}
	}()
	name := b.c.shardingReplica
	if k == 0 {
		name = sp.stock()
	}
	c, err := contenderByName(name)
	if err != nil {
		return nil, err
	}
	for i := range kids {
		var err error
		kids[i], err = b.spawn(ctx, c.Env, "-mode", "shard", "-contender", name, "-kubeconfig", b.cluster.KubeconfigPath(), "-namespace", ns,
			"-replica", strconv.Itoa(i), "-replicas", strconv.Itoa(k), "-timeout", shardingTimeout.String())
		if err != nil {
			return nil, err
		}
	}
	for i, ch := range kids {
		var ev relistEvent
		if err := ch.next(ctx, &ev); err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		if ev.Event != "ready" {
			return nil, fmt.Errorf("replica %d said %q, want ready", i, ev.Event)
		}
	}
	cpu0, err := b.apiserverCPU(ctx)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for _, ch := range kids {
		if err := ch.send("go"); err != nil {
			return nil, err
		}
	}
	g := &shardingGroup{Replicas: k, Rep: r, Results: make([]shardingResult, procs)}
	for i, ch := range kids {
		if err := ch.next(ctx, &g.Results[i]); err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
	}
	g.WallMs = ms(time.Since(t0))
	cpu1, err := b.apiserverCPU(ctx)
	if err != nil {
		return nil, err
	}
	g.APIServerCPU = cpu1 - cpu0
	for i, ch := range kids {
		if err := ch.wait(); err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
	}
	if err := g.checkSplit(n, sp.wantMode()); err != nil {
		return nil, err
	}
	for i := range g.Results {
		g.Results[i].Names = nil
		if r > 0 {
			g.Results[i].RequestLog = nil
		}
	}
	return g, nil
}

// checkSplit: stock holds every object; k replicas hold every object
// exactly once between them (each child has checked that every object it
// holds is in its own range), each in the mode the server calls for.
func (g *shardingGroup) checkSplit(n int, want shard.Mode) error {
	if g.Replicas == 0 {
		if got := g.Results[0].Objects; got != n {
			return fmt.Errorf("stock synced %d objects, want %d", got, n)
		}
		return nil
	}
	owner := make(map[string]int, n)
	for i, res := range g.Results {
		if len(res.Names) != res.Objects {
			return fmt.Errorf("replica %d reported %d names for %d objects", i, len(res.Names), res.Objects)
		}
		for _, name := range res.Names {
			if j, dup := owner[name]; dup {
				return fmt.Errorf("%s is held by replicas %d and %d", name, j, i)
			}
			owner[name] = i
		}
		if res.Mode != "" && shard.Mode(res.Mode) != want {
			return fmt.Errorf("replica %d ran in mode %q, want %q", i, res.Mode, want)
		}
	}
	if len(owner) != n {
		return fmt.Errorf("the %d replicas hold %d objects between them, want %d", g.Replicas, len(owner), n)
	}
	return nil
}

func (b *bench) apiserverCPU(ctx context.Context) (float64, error) {
	text, err := b.cluster.APIServers()[0].Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return parseProcessMetrics(text).CPU, nil
}

// childShard (mode shard) prepares one cache (-replicas 0: stock client-go's
// informer holding everything; else replica -replica of -replicas through
// shard.Wrap; -contender names the client's configuration), reports "ready", and on "go" syncs it and reports a shardingResult.
func childShard(ctx context.Context, cfg *rest.Config, f childFlags, out *json.Encoder) error {
	lines := stdinLines()
	name := f.contender // stock or stock-list; a replica's path (shardingReplicaPaths)
	c, nc, ccfg, cs, err := childClient(cfg, name)
	if err != nil {
		return err
	}
	var (
		server compat.Server
		sel    shard.Selector
	)
	if f.replicas > 0 {
		if f.replica < 0 || f.replica >= f.replicas {
			return fmt.Errorf("-replica %d is not in [0, %d)", f.replica, f.replicas)
		}
		if sel, err = shardingSelector(f.replica, f.replicas); err != nil {
			return err
		}
		if server, err = compat.NewDetector(compat.DetectorOptions{}).ForConfig(ccfg); err != nil {
			return err
		}
	}
	base := retainedHeap()
	if err := out.Encode(relistEvent{Event: "ready"}); err != nil {
		return err
	}
	if err := expectLine(ctx, lines, "go"); err != nil {
		return err
	}
	nc.reset()
	gc0 := gcCycles()
	s := startLiveSampler(time.Millisecond)
	begin := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		inf  cache.SharedIndexInformer
		slw  *shard.ListerWatcher
		noop = cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}, UpdateFunc: func(_, _ any) {}, DeleteFunc: func(any) {}}
	)
	if f.replicas == 0 {
		// What contender stock runs: client-go's factory with its defaults.
		fac := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(f.namespace))
		inf = fac.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(noop); err != nil {
			return err
		}
		fac.Start(runCtx.Done())
	} else {
		lw := typedListWatch(cs.CoreV1().ConfigMaps(f.namespace))
		selector := func() shard.Selector { return sel }
		slw = shard.Wrap(lw, shard.WrapOptions{Selector: selector, Server: capability.ForGroupVersion(server, corev1.SchemeGroupVersion), Name: "v1/configmaps"})
		io := cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}}
		switch c.Kind {
		case "sw-dropin":
			inf = reflector.NewSharedIndexInformerWithOptions(slw, &corev1.ConfigMap{}, io, lister.Options{Server: server})
		case "sw-informerfor":
			inf = reflector.NewInformerFor(ccfg, lister.Options{Server: server})(slw, &corev1.ConfigMap{}, 0, io.Indexers)
		default:
			return fmt.Errorf("contender %s is not a replica path (%s)", name, strings.Join(shardingReplicaPaths, ", "))
		}
		if _, err := inf.AddEventHandler(shard.Handler(noop, selector)); err != nil {
			return err
		}
		go inf.RunWithContext(runCtx)
	}
	if err := poll.Until(ctx, 200*time.Microsecond, inf.HasSynced); err != nil {
		return fmt.Errorf("%s: not synced after %s: %w", name, time.Since(begin).Round(time.Second), err)
	}
	took := time.Since(begin)
	heap, live := s.finish()
	gcs := gcCycles() - gc0
	wire := nc.stats()
	retained := retainedHeap()
	res := &shardingResult{Replica: f.replica, Replicas: f.replicas, SyncMs: ms(took), PeakHeap: heap, PeakLive: live, BaseHeap: base,
		RetainedHeap: retained, GCCycles: gcs, wireStats: wire}
	objs := inf.GetStore().List()
	stop()
	res.Objects = len(objs)
	if slw != nil {
		res.Mode, res.Ranges = string(slw.Mode()), len(sel.Ranges)
		res.Names = make([]string, 0, len(objs))
		for _, o := range objs {
			m, ok := o.(metav1.Object)
			if !ok {
				return fmt.Errorf("cache holds a %T", o)
			}
			in, err := sel.MatchesMeta(m)
			if err != nil {
				return err
			}
			if !in {
				return fmt.Errorf("replica %d of %d holds %s (uid %s), outside its range %s", f.replica, f.replicas, m.GetName(), m.GetUID(), sel)
			}
			res.Names = append(res.Names, m.GetName())
		}
	}
	return out.Encode(res)
}
