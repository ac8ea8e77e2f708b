// Command bench measures steadywatch against stock client-go v0.37.2, side
// by side in one run on real kube-apiservers: initial sync (ConfigMaps
// and custom resources), scaling of sync time and client heap with the
// object count, recovery after a watch 410, a herd of informers across an
// apiserver restart, per-event/per-page overhead (go test -bench), the
// apiserver's cost when a herd of informers starts at once on a large
// namespace (KEP-3157), relist memory, sharding, and the limit (decoding the same
// list once from memory). Every figure it reports is a ratio ours / stock
// from the same run; absolute times on a shared machine are noise.
//
//	cd e2e && go run ./bench -size small -out ../docs    # make bench: one server, 10k objects
//	cd e2e && go run ./bench -size full  -out ../docs    # four servers, 10k and 50k, scaling to 100k
//
// Servers (-servers, comma-separated) are started one after another, each
// with a fresh etcd: a release ("v1.37.2") or a release without its watch
// cache ("v1.37.2/nocache"). Binaries come from e2e/harness/build's cache
// (STEADYWATCH_CACHE_DIR), built there if missing. On each server, in order:
//
//   - Initial sync at every -size count (small: 10k; full: 10k and 50k) ConfigMaps of
//     ~2.4 KB: all contenders on the first server, a core set on the others
//     (-sync-contenders overrides); with -kinds cr also -cr-objects custom
//     resources (a CRD installed by the bench; JSON) with the CR contenders.
//     A contender that does not sync (stock on v1.18.19, which ignores
//     sendInitialEvents) is recorded once and not run again on that server.
//   - scaling (first server only): -scaling counts (small: 1k,10k; full:
//     1k,10k,50k,100k) with stock, stock-list, sw-informer, sw-reflector;
//     rendered as line charts of sync time and peak heap vs objects.
//   - Apiserver cost: -cost-informers caches of one contender in one process start at once
//     on -cost-objects ConfigMaps of -cost-size-kb KiB. The apiserver is
//     restarted (same etcd) before every run and the baseline is taken once
//     its watch cache is initialised and its RSS is steady; its /metrics is
//     sampled every -cost-sample-ms (100) for peak heap-in-use and RSS minus that baseline,
//     CPU seconds, and etcd-reaching lists. -cost-count repetitions (default
//     -count), on the -cost-servers (default all), with -cost-contenders;
//     -cost-ballast-mib adds other ConfigMaps the apiserver holds (not listed).
//   - Recovery after a watch 410 and the restart herd (first server only),
//     before the scaling-only sizes and the apiserver cost.
//   - Relist memory (first server only, after the restart herd; relist.go): each typed
//     adoption path beside stock syncs through a fault proxy, then for
//     -relist-window every plain watch gets 410 while it holds its cache; peak
//     heap of the initial sync and of the window, at -relist-objects, with
//     streaming lists refused and/or served (-relist-streaming). -only relist alone
//     (make bench-relist) adds its section to the existing benchmarks.md.
//   - Sharding (sharding.go; only with -only sharding, make bench-shard): on its own
//     servers (-sharding-servers: v1.37.2 with the ShardedListAndWatch gate on,
//     then off), 1, 2 and 4 replicas of a shard.Wrap informer, each in a
//     child process holding its share of -sharding-objects ConfigMaps, syncing at
//     once, beside stock unsharded; per replica sync time, heap and bytes,
//     the apiserver's CPU per group, and a check that the replicas split
//     the objects exactly once.
//
// Objects are created by a pool of 16 workers (no client-side QPS limit),
// with progress lines every 10 s. -only picks scenarios (sync, recovery,
// restart, overhead, cost, relist, sharding, scaling); -count repetitions run interleaved (ABAB...).
//
// It writes <out>/benchmarks.md, <out>/bench/results-<size>.json and the
// charts (<out>/bench/*.png); -render re-renders them from a results JSON.
// Each contender runs in a child process of its own (this binary
// re-executed with "child"), so GC state is independent.
//
// It is not a test: it asserts only that every contender really synced the
// expected number of objects and that the injected fault really fired.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	size         string
	out          string
	root         string
	count        int
	only         string
	herd         int
	herdObjs     int
	syncSizes    []int
	recoverySize int
	benchtime    string
	profile      string
	servers      []serverSpec
	kinds        []string
	crObjects    int
	scaling      []int
	// syncContenders overrides the initial sync's contender set of ConfigMaps ("" = all
	// on the first server, syncCore on the others).
	syncContenders []string
	// crContenders overrides the initial sync's contender set of custom resources.
	crContenders   []string
	costInformers  int
	costObjects    int
	costSizeKB     int
	costCount      int
	costBallastMiB int
	costSampleMs   int
	costPprof      string
	costPprofSecs  int
	costContenders []string
	costServers    []string // -servers entries the apiserver cost runs on; nil = all
	// Relist memory (relist.go): object counts, streaming lists off (false) and/or on
	// (true), repetitions, the relist window, contenders.
	relistObjects    []int
	relistStreaming  []bool
	relistCount      int
	relistWindow     time.Duration
	relistHeapprof   string
	relistContenders []string
	// Sharding (sharding.go): object count, replica counts, servers, repetitions.
	shardingObjects  int
	shardingReplicas []int
	shardingServers  []shardingServer
	shardingCount    int
	// shardingReplica: the contender each replica runs over shard.Wrap.
	shardingReplica string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := runChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.StringVar(&c.size, "size", "small", "small (10k ConfigMaps, scaling 1k and 10k, one server) or full (10k and 50k, scaling up to 100k, four servers)")
	flag.StringVar(&c.out, "out", "../docs", "directory for benchmarks.md; JSON and PNGs go to <out>/bench")
	flag.StringVar(&c.root, "root", "..", "the SDK module root (for the overhead benchmarks' go test -bench)")
	flag.IntVar(&c.count, "count", 5, "repetitions per contender (interleaved)")
	flag.StringVar(&c.only, "only", "sync,recovery,restart,overhead,cost,relist,scaling", "comma-separated subset of sync (initial sync), recovery (after a watch 410), restart (a herd across an apiserver restart), overhead (per event and page), cost (the apiserver's, of a herd start), relist (memory), sharding, scaling (-only relist or sharding alone adds its section to the existing benchmarks.md; sharding runs only when named)")
	flag.IntVar(&c.herd, "herd", 50, "informers per contender in the restart herd")
	flag.StringVar(&c.profile, "profile", "", "initial sync: write a CPU profile of each contender's first repetition into this directory (perturbs that repetition)")
	flag.StringVar(&c.benchtime, "benchtime", "1s", "the overhead benchmarks' -benchtime")
	objects := flag.Int("objects", 0, "override the object count of the initial sync and the recovery (and of the restart herd when -herd-objects is 0); for quick trials")
	herdObjs := flag.Int("herd-objects", 0, "override the object count of the restart herd")
	servers := flag.String("servers", "", "comma-separated kube-apiservers, each started in turn: a release (v1.37.2) or release/nocache (--watch-cache=false); recovery and restart run on the first only. Default: v1.37.2 (small), v1.37.2,v1.37.2/nocache,v1.33.13,v1.18.19 (full)")
	kinds := flag.String("kinds", "configmaps,cr", "initial sync kinds: configmaps and/or cr (custom resources, JSON)")
	crObjects := flag.Int("cr-objects", 10000, "initial sync: custom resources per server (-kinds cr)")
	scaling := flag.String("scaling", "", "comma-separated object counts for the scaling charts (first server; stock, stock-list, sw-informer, sw-reflector). Default: 1000,10000 (small), 1000,10000,50000,100000 (full)")
	crc := flag.String("cr-contenders", "", "comma-separated initial-sync custom-resource contenders (default: "+strings.Join(syncDefault(true), ",")+")")
	syncFlag := flag.String("sync-contenders", "", "comma-separated initial-sync ConfigMap contenders (default: all on the first server, "+strings.Join(syncCore, ",")+" on the others)")
	flag.IntVar(&c.costInformers, "cost-informers", 8, "apiserver cost: informers of one contender started at once in one process (up to 16)")
	flag.IntVar(&c.costObjects, "cost-objects", 5000, "apiserver cost: ConfigMaps in the namespace")
	flag.IntVar(&c.costSizeKB, "cost-size-kb", 50, "apiserver cost: KiB of data per ConfigMap")
	costFlag := flag.String("cost-contenders", strings.Join(costContenders, ","), "apiserver cost contenders (comma-separated)")
	costServersFlag := flag.String("cost-servers", "", "the apiserver cost only on these -servers entries (comma-separated); default: all")
	flag.IntVar(&c.costCount, "cost-count", 0, "apiserver cost: repetitions per contender (each restarts the apiserver); 0 = -count")
	flag.IntVar(&c.costSampleMs, "cost-sample-ms", 100, "apiserver cost: how often the apiserver's /metrics is sampled during a run; each scrape is itself garbage in the heap it measures (2-3 MiB), "+
		"so a short run's peak heap carries up to 10 scrapes' garbage per second")
	flag.StringVar(&c.costPprof, "cost-pprof", "", "apiserver cost: write the apiserver's CPU profile of every run (its /debug/pprof/profile, -cost-pprof-seconds from the child's start) and its heap profile at the run's baseline "+
		"(after the forced GC; the profile's own garbage, about a MiB, then counts in the run's peak heap) into this directory; "+
		"the run's measurements then wait for the profile to end before measuring a scrape's cost")
	flag.IntVar(&c.costPprofSecs, "cost-pprof-seconds", 45, "apiserver cost: length of each apiserver CPU profile (-cost-pprof); longer than the slowest run, or the profile misses its end")
	flag.IntVar(&c.costBallastMiB, "cost-ballast-mib", 0, "apiserver cost: MiB of other ConfigMaps (namespace cost-ballast, -cost-size-kb each) the apiserver also holds, "+
		"as a real cluster's apiserver holds other data: its garbage collector's headroom grows with its live heap (etcd's 2 GiB quota bounds the scenario's data plus ballast)")
	relistObjects := flag.String("relist-objects", "", "relist memory: comma-separated ConfigMap counts (default: 10000 small, 10000,50000 full)")
	relistStreaming := flag.String("relist-streaming", "", "relist memory: streaming lists off (the proxy refuses them with 422) and/or on: off, on or off,on (default: off small, off,on full)")
	flag.IntVar(&c.relistCount, "relist-count", 0, "relist memory: repetitions per contender (default: 1 small, 3 full)")
	flag.DurationVar(&c.relistWindow, "relist-window", 10*time.Second, "relist memory: how long every plain watch is answered 410 while each client holds its cache")
	flag.StringVar(&c.relistHeapprof, "relist-heapprofile", "", "relist memory: write each child's heap profiles (pprof) at the relist window's start and end into this directory (<contender>-<objects>-streaming-<on|off>-<rep>.heap.start/.end; compare with go tool pprof -diff_base)")
	relistFlag := flag.String("relist-contenders", strings.Join(relistContenders, ","), "relist memory contenders (comma-separated)")
	flag.IntVar(&c.shardingObjects, "sharding-objects", 100000, "sharding: ConfigMaps in the namespace (e.g. 20000 for a quick run)")
	shardingReplicas := flag.String("sharding-replicas", "1,2,4", "sharding: replica counts (comma-separated), each run beside stock unsharded")
	shardingServers := flag.String("sharding-servers", "v1.37.2/sharded,v1.37.2", "sharding: kube-apiservers, each started in turn: a release, /sharded = --feature-gates=ShardedListAndWatch=true (the server filters); entries of one release share their etcd data")
	flag.IntVar(&c.shardingCount, "sharding-count", 1, "sharding: repetitions (interleaved)")
	flag.StringVar(&c.shardingReplica, "sharding-replica", "sw-dropin-listwatch", "sharding: each replica's adoption path over shard.Wrap: sw-dropin-listwatch (reflector.NewSharedIndexInformerWithOptions) or sw-dropin-decoding (reflector.NewInformerFor over the wrap)")
	unthrottled := flag.Bool("unthrottled", false, "contenders' clients without client-side rate limit (default: client-go's QPS 5, burst 10, what a user who sets nothing gets)")
	render := flag.String("render", "", "only re-render <out>/benchmarks.md and the charts from this results JSON (e.g. after editing docs/bench/notes.md)")
	flag.Parse()
	if err := checkScenarios(c.only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *unthrottled {
		os.Setenv("BENCH_UNTHROTTLED", "1")
	}
	if *render != "" {
		if err := rerender(*render, c.out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	defServers, defScaling := "v1.37.2", "1000,10000"
	defRelistObjects, defRelistStreaming, defRelistCount := "10000", "off", 1
	switch c.size {
	case "small":
		c.syncSizes, c.recoverySize, c.herdObjs = []int{10000}, 10000, 1000
	case "full":
		c.syncSizes, c.recoverySize, c.herdObjs = []int{10000, 50000}, 10000, 5000
		defServers, defScaling = "v1.37.2,v1.37.2/nocache,v1.33.13,v1.18.19", "1000,10000,50000,100000"
		defRelistObjects, defRelistStreaming, defRelistCount = "10000,50000", "off,on", 3
	default:
		fmt.Fprintln(os.Stderr, "bench: -size must be small or full")
		os.Exit(2)
	}
	if *servers == "" {
		*servers = defServers
	}
	if *scaling == "" {
		*scaling = defScaling
	}
	var err error
	if c.servers, err = parseServers(*servers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.scaling, err = parseInts(*scaling); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -scaling:", err)
		os.Exit(2)
	}
	slices.Sort(c.scaling)
	c.scaling = slices.Compact(c.scaling)
	for _, k := range strings.Split(*kinds, ",") {
		switch k = strings.TrimSpace(k); k {
		case "configmaps", "cr":
			c.kinds = append(c.kinds, k)
		case "":
		default:
			fmt.Fprintf(os.Stderr, "bench: -kinds: unknown kind %q (configmaps, cr)\n", k)
			os.Exit(2)
		}
	}
	if c.syncContenders, err = parseContenders("sync-contenders", *syncFlag, false); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.crContenders, err = parseContenders("cr-contenders", *crc, true); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.costInformers < 1 || c.costInformers > 16 {
		fmt.Fprintln(os.Stderr, "bench: -cost-informers must be 1..16")
		os.Exit(2)
	}
	if c.costPprofSecs < 1 || c.costPprofSecs > 55 {
		// The apiserver ends a request that is not long-running after its
		// --request-timeout (1 minute by default), profiles included.
		fmt.Fprintln(os.Stderr, "bench: -cost-pprof-seconds must be 1..55 (the apiserver's request timeout ends longer profiles)")
		os.Exit(2)
	}
	if c.costPprof != "" {
		if err := os.MkdirAll(c.costPprof, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cost-pprof:", err)
			os.Exit(2)
		}
	}
	if c.costSampleMs < 10 {
		fmt.Fprintln(os.Stderr, "bench: -cost-sample-ms must be at least 10")
		os.Exit(2)
	}
	c.crObjects = *crObjects
	if c.costContenders, err = parseContenders("cost-contenders", *costFlag, false); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.costContenders == nil {
		c.costContenders = costContenders
	}
	for _, sp := range strings.Split(*costServersFlag, ",") {
		if sp = strings.TrimSpace(sp); sp == "" {
			continue
		}
		if !slices.ContainsFunc(c.servers, func(s serverSpec) bool { return s.Spec == sp }) {
			fmt.Fprintf(os.Stderr, "bench: -cost-servers: %q is not in -servers\n", sp)
			os.Exit(2)
		}
		c.costServers = append(c.costServers, sp)
	}
	if c.costCount <= 0 {
		c.costCount = c.count
	}
	if err := c.relistFlags(*relistObjects, defRelistObjects, *relistStreaming, defRelistStreaming, defRelistCount, *relistFlag); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := c.shardingFlags(*shardingServers, *shardingReplicas); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *objects > 0 {
		c.syncSizes, c.recoverySize, c.crObjects = []int{*objects}, *objects, *objects
	}
	if *herdObjs > 0 {
		c.herdObjs = *herdObjs
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 6*time.Hour)
	defer cancelT()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		if n > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// scenarios are the names -only takes.
var scenarios = []string{"sync", "recovery", "restart", "overhead", "cost", "relist", "sharding", "scaling"}

// checkScenarios refuses an -only list that names no scenario or one the
// bench does not know: a run of nothing would write an empty page.
func checkScenarios(only string) error {
	named := false
	for _, s := range strings.Split(only, ",") {
		if s == "" {
			continue
		}
		if !slices.Contains(scenarios, s) {
			return fmt.Errorf("-only: unknown scenario %q (%s)", s, strings.Join(scenarios, ", "))
		}
		named = true
	}
	if !named {
		return fmt.Errorf("-only names no scenario (%s)", strings.Join(scenarios, ", "))
	}
	return nil
}

func (c config) want(p string) bool { return slices.Contains(strings.Split(c.only, ","), p) }

func (c config) wantKind(k string) bool { return slices.Contains(c.kinds, k) }

func run(ctx context.Context, c config) error {
	start := time.Now()
	rep := &report{Size: c.size, Count: c.count, Command: commandLine(), Env: environment(ctx, c)}
	if c.want("scaling") {
		rep.Scaling = c.scaling
	}
	var err error
	if c.root, err = filepath.Abs(c.root); err != nil {
		return err
	}
	if c.want("overhead") {
		logf("overhead: go test -bench (wrapper overhead) in %s", c.root)
		if rep.Overhead, err = runOverhead(ctx, c); err != nil {
			return fmt.Errorf("overhead: %w", err)
		}
	}
	if c.want("sharding") {
		if rep.Sharding, err = runSharding(ctx, c); err != nil {
			return fmt.Errorf("sharding: %w", err)
		}
	}
	if !c.want("sync") && !c.want("recovery") && !c.want("restart") && !c.want("cost") && !c.want("relist") && !c.want("scaling") {
		return finish(rep, c, start)
	}
	servers := c.servers
	if !c.want("sync") && !c.want("cost") {
		servers = servers[:1] // recovery, restart, relist and scaling run on the first server only
	}
	var versions []string
	for i, sp := range servers {
		if err := runServer(ctx, c, rep, i, sp); err != nil {
			return fmt.Errorf("server %s: %w", sp.Spec, err)
		}
		versions = append(versions, rep.Servers[len(rep.Servers)-1].Version)
		// Keep what is done so far: a later server failing loses nothing.
		if err := rep.write(c.out); err != nil {
			return err
		}
	}
	rep.Env.Server = strings.Join(versions, ", ")
	return finish(rep, c, start)
}

func finish(rep *report, c config, start time.Time) error {
	rep.Env.LoadEnd = loadAvg()
	rep.Env.DurationS = time.Since(start).Seconds()
	return rep.write(c.out)
}

// runServer starts server i, runs the chosen scenarios on it and stops it.
func runServer(ctx context.Context, c config, rep *report, i int, sp serverSpec) error {
	t0 := time.Now()
	b, err := startBench(ctx, c, sp)
	if err != nil {
		return err
	}
	defer b.stop()
	rep.Servers = append(rep.Servers, serverRun{serverSpec: sp, Version: b.cluster.Version()})
	// Order on a server: initial sync sizes and CRs; recovery and restart
	// (first server); the scaling-only sizes (up to 100k objects: after
	// recovery and restart, so their apiserver restarts do not reload them);
	// the apiserver cost last (it restarts the apiserver before every run,
	// and a contender that did not sync in the initial sync is not given
	// the apiserver cost's long timeout).
	syncNames := c.syncContenders
	if syncNames == nil {
		syncNames = syncDefault(false)
		if i > 0 {
			syncNames = syncCore
		}
	}
	if c.wantKind("configmaps") && c.want("sync") {
		for _, n := range c.syncSizes {
			r, err := b.runSync(ctx, n, "configmaps", syncNames, true)
			if err != nil {
				return fmt.Errorf("initial sync %d: %w", n, err)
			}
			rep.Sync = append(rep.Sync, r)
		}
	}
	if c.wantKind("cr") && c.want("sync") && c.crObjects > 0 {
		crNames := c.crContenders
		if crNames == nil {
			crNames = syncDefault(true)
		}
		r, err := b.runSync(ctx, c.crObjects, "cr", crNames, false)
		if err != nil {
			return fmt.Errorf("initial sync %d custom resources: %w", c.crObjects, err)
		}
		rep.Sync = append(rep.Sync, r)
	}
	if i == 0 && c.want("recovery") {
		if rep.Recovery, err = b.runRecovery(ctx, c.recoverySize); err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
		rep.Recovery.Server = sp.Spec
	}
	if i == 0 && c.want("restart") {
		if rep.Restart, err = b.runRestart(ctx); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		rep.Restart.Server = sp.Spec
	}
	if i == 0 && c.want("relist") {
		p, err := b.runRelist(ctx)
		if err != nil {
			return fmt.Errorf("relist memory: %w", err)
		}
		rep.Relist = append(rep.Relist, p...)
	}
	if i == 0 && c.want("scaling") {
		for _, n := range c.scaling {
			if c.want("sync") && c.wantKind("configmaps") && slices.Contains(c.syncSizes, n) {
				continue // the initial sync ran this size with every scaling contender
			}
			r, err := b.runSync(ctx, n, "configmaps", scalingContenders, false)
			if err != nil {
				return fmt.Errorf("scaling %d: %w", n, err)
			}
			rep.Sync = append(rep.Sync, r)
		}
	}
	if c.want("cost") && (c.costServers == nil || slices.Contains(c.costServers, sp.Spec)) {
		p, err := b.runCost(ctx)
		if err != nil {
			return fmt.Errorf("apiserver cost: %w", err)
		}
		rep.Cost = append(rep.Cost, p)
	}
	rep.Servers[len(rep.Servers)-1].DurationS = time.Since(t0).Seconds()
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func commandLine() string {
	return "cd e2e && go run ./bench " + strings.Join(os.Args[1:], " ")
}

// parseContenders splits a -*-contenders flag's comma-separated list and
// checks that every name is a known contender of the right kind (custom
// resources or ConfigMaps). An empty list gives nil: the default set.
func parseContenders(flagName, list string, cr bool) ([]string, error) {
	kind := "a ConfigMap"
	if cr {
		kind = "a custom-resource"
	}
	var out []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		ct, err := contenderByName(name)
		if err != nil {
			return nil, fmt.Errorf("-%s: %w", flagName, err)
		}
		if ct.CR != cr {
			return nil, fmt.Errorf("-%s: %q is not %s contender", flagName, name, kind)
		}
		out = append(out, name)
	}
	return out, nil
}
