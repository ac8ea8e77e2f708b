// Command bench measures steadywatch against stock client-go v0.37.2, side
// by side in one run on real kube-apiservers: P1 initial
// sync (ConfigMaps and custom resources), scaling of sync time and client
// heap with the object count, P2 recovery after a watch 410, P3 a herd of
// informers across an apiserver restart, P4 per-event/per-page overhead (go
// test -bench), P5 the apiserver's cost when a herd of informers starts at
// once on a large namespace (KEP-3157), and the limit (decoding the same
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
//   - P1 at every -size count (small: 10k; full: 10k and 50k) ConfigMaps of
//     ~2.4 KB: all contenders on the first server, a core set on the others
//     (-p1-contenders overrides); with -kinds cr also -cr-objects custom
//     resources (a CRD installed by the bench; JSON) with the CR contenders.
//     A contender that does not sync (stock on v1.18.19, which ignores
//     sendInitialEvents) is recorded once and not run again on that server.
//   - scaling (first server only): -scaling counts (small: 1k,10k; full:
//     1k,10k,50k,100k) with stock, stock-list, sw-informer, sw-reflector;
//     rendered as line charts of sync time and peak heap vs objects.
//   - P5: -p5-informers caches of one contender in one process start at once
//     on -p5-objects ConfigMaps of -p5-size-kb KiB. The apiserver is
//     restarted (same etcd) before every run and the baseline is taken once
//     its watch cache is initialised and its RSS is steady; its /metrics is
//     sampled every -p5-sample-ms (100) for peak heap-in-use and RSS minus that baseline,
//     CPU seconds, and etcd-reaching lists. -p5-count repetitions (default
//     -count), on the -p5-servers (default all), with -p5-contenders;
//     -p5-ballast-mib adds other ConfigMaps the apiserver holds (not listed).
//   - P2 and P3 (first server only), before the scaling-only sizes and P5.
//   - P6, relist memory (first server only, after P3; p6.go): each typed
//     adoption path beside stock syncs through a fault proxy, then for
//     -p6-window every plain watch gets 410 while it holds its cache; peak
//     heap of the initial sync and of the window, at -p6-objects, with
//     streaming lists refused and/or served (-p6-streaming). -only p6 alone
//     (make bench-relist) adds its section to the existing benchmarks.md.
//   - P7, sharding (p7.go; only with -only p7, make bench-shard): on its own
//     servers (-p7-servers: v1.37.2 with the ShardedListAndWatch gate on,
//     then off), 1, 2 and 4 replicas of a shard.Wrap informer, each in a
//     child process holding its share of -p7-objects ConfigMaps, syncing at
//     once, beside stock unsharded; per replica sync time, heap and bytes,
//     the apiserver's CPU per group, and a check that the replicas split
//     the objects exactly once.
//
// Objects are created by a pool of 16 workers (no client-side QPS limit),
// with progress lines every 10 s. -only picks scenarios (p1,p2,p3,p4,p5,p6,
// p7,scaling); -count repetitions run interleaved (ABAB...).
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
	size      string
	out       string
	root      string
	count     int
	only      string
	herd      int
	herdObjs  int
	p1Sizes   []int
	p2Size    int
	benchtime string
	profile   string
	servers   []serverSpec
	kinds     []string
	crObjects int
	scaling   []int
	// p1Contenders overrides the P1 contender set of ConfigMaps ("" = all
	// on the first server, p1Core on the others).
	p1Contenders []string
	// crContenders overrides the P1 contender set of custom resources.
	crContenders []string
	p5Informers  int
	p5Objects    int
	p5SizeKB     int
	p5Count      int
	p5BallastMiB int
	p5SampleMs   int
	p5Pprof      string
	p5PprofSecs  int
	p5Contenders []string
	p5Servers    []string // -servers entries P5 runs on; nil = all
	// P6 (p6.go): object counts, streaming lists off (false) and/or on
	// (true), repetitions, the relist window, contenders.
	p6Objects    []int
	p6Streaming  []bool
	p6Count      int
	p6Window     time.Duration
	p6Heapprof   string
	p6Contenders []string
	// P7 (p7.go): object count, replica counts, servers, repetitions.
	p7Objects  int
	p7Replicas []int
	p7Servers  []p7Server
	p7Count    int
	// p7Replica: the contender each replica runs over shard.Wrap.
	p7Replica string
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
	flag.StringVar(&c.root, "root", "..", "the SDK module root (for P4's go test -bench)")
	flag.IntVar(&c.count, "count", 5, "repetitions per contender (interleaved)")
	flag.StringVar(&c.only, "only", "p1,p2,p3,p4,p5,p6,scaling", "comma-separated subset of p1,p2,p3,p4,p5,p6,p7,scaling (-only p6 or p7 alone adds its section to the existing benchmarks.md; p7 runs only when named)")
	flag.IntVar(&c.herd, "herd", 50, "informers per contender in P3")
	flag.StringVar(&c.profile, "profile", "", "P1: write a CPU profile of each contender's first repetition into this directory (perturbs that repetition)")
	flag.StringVar(&c.benchtime, "benchtime", "1s", "P4 -benchtime")
	objects := flag.Int("objects", 0, "override the object count of P1/P2 (and P3 when -herd-objects is 0); for quick trials")
	herdObjs := flag.Int("herd-objects", 0, "override the object count of P3")
	servers := flag.String("servers", "", "comma-separated kube-apiservers, each started in turn: a release (v1.37.2) or release/nocache (--watch-cache=false); P2/P3 run on the first only. Default: v1.37.2 (small), v1.37.2,v1.37.2/nocache,v1.33.13,v1.18.19 (full)")
	kinds := flag.String("kinds", "configmaps,cr", "P1 kinds: configmaps and/or cr (custom resources, JSON)")
	crObjects := flag.Int("cr-objects", 10000, "P1: custom resources per server (-kinds cr)")
	scaling := flag.String("scaling", "", "comma-separated object counts for the scaling charts (first server; stock, stock-list, sw-informer, sw-reflector). Default: 1000,10000 (small), 1000,10000,50000,100000 (full)")
	crc := flag.String("cr-contenders", "", "comma-separated P1 custom-resource contenders (default: "+strings.Join(p1Default(true), ",")+")")
	p1c := flag.String("p1-contenders", "", "comma-separated P1 ConfigMap contenders (default: all on the first server, "+strings.Join(p1Core, ",")+" on the others)")
	flag.IntVar(&c.p5Informers, "p5-informers", 8, "P5: informers of one contender started at once in one process (up to 16)")
	flag.IntVar(&c.p5Objects, "p5-objects", 5000, "P5: ConfigMaps in the namespace")
	flag.IntVar(&c.p5SizeKB, "p5-size-kb", 50, "P5: KiB of data per ConfigMap")
	p5c := flag.String("p5-contenders", strings.Join(p5Contenders, ","), "P5 contenders (comma-separated)")
	p5s := flag.String("p5-servers", "", "P5 only on these -servers entries (comma-separated); default: all")
	flag.IntVar(&c.p5Count, "p5-count", 0, "P5: repetitions per contender (each restarts the apiserver); 0 = -count")
	flag.IntVar(&c.p5SampleMs, "p5-sample-ms", 100, "P5: how often the apiserver's /metrics is sampled during a run; each scrape is itself garbage in the heap it measures (2-3 MiB), "+
		"so a short run's peak heap carries up to 10 scrapes' garbage per second")
	flag.StringVar(&c.p5Pprof, "p5-pprof", "", "P5: write the apiserver's CPU profile of every run (its /debug/pprof/profile, -p5-pprof-seconds from the child's start) and its heap profile at the run's baseline "+
		"(after the forced GC; the profile's own garbage, about a MiB, then counts in the run's peak heap) into this directory; "+
		"the run's measurements then wait for the profile to end before measuring a scrape's cost")
	flag.IntVar(&c.p5PprofSecs, "p5-pprof-seconds", 45, "P5: length of each apiserver CPU profile (-p5-pprof); longer than the slowest run, or the profile misses its end")
	flag.IntVar(&c.p5BallastMiB, "p5-ballast-mib", 0, "P5: MiB of other ConfigMaps (namespace p5-ballast, -p5-size-kb each) the apiserver also holds, "+
		"as a real cluster's apiserver holds other data: its garbage collector's headroom grows with its live heap (etcd's 2 GiB quota bounds P5 data plus ballast)")
	p6Objects := flag.String("p6-objects", "", "P6 (relist memory): comma-separated ConfigMap counts (default: 10000 small, 10000,50000 full)")
	p6Streaming := flag.String("p6-streaming", "", "P6: streaming lists off (the proxy refuses them with 422) and/or on: off, on or off,on (default: off small, off,on full)")
	flag.IntVar(&c.p6Count, "p6-count", 0, "P6: repetitions per contender (default: 1 small, 3 full)")
	flag.DurationVar(&c.p6Window, "p6-window", 10*time.Second, "P6: how long every plain watch is answered 410 while each client holds its cache")
	flag.StringVar(&c.p6Heapprof, "p6-heapprofile", "", "P6: write each child's heap profiles (pprof) at the relist window's start and end into this directory (<contender>-<objects>-streaming-<on|off>-<rep>.heap.start/.end; compare with go tool pprof -diff_base)")
	p6c := flag.String("p6-contenders", strings.Join(p6Contenders, ","), "P6 contenders (comma-separated)")
	flag.IntVar(&c.p7Objects, "p7-objects", 100000, "P7 (sharding): ConfigMaps in the namespace (e.g. 20000 for a quick run)")
	p7Replicas := flag.String("p7-replicas", "1,2,4", "P7: replica counts (comma-separated), each run beside stock unsharded")
	p7Servers := flag.String("p7-servers", "v1.37.2/sharded,v1.37.2", "P7: kube-apiservers, each started in turn: a release, /sharded = --feature-gates=ShardedListAndWatch=true (the server filters); entries of one release share their etcd data")
	flag.IntVar(&c.p7Count, "p7-count", 1, "P7: repetitions (interleaved)")
	flag.StringVar(&c.p7Replica, "p7-replica", "sw-dropin-listwatch", "P7: each replica's adoption path over shard.Wrap: sw-dropin-listwatch (reflector.NewSharedIndexInformerWithOptions) or sw-dropin-decoding (reflector.NewInformerFor over the wrap)")
	unthrottled := flag.Bool("unthrottled", false, "contenders' clients without client-side rate limit (default: client-go's QPS 5, burst 10, what a user who sets nothing gets)")
	render := flag.String("render", "", "only re-render <out>/benchmarks.md and the charts from this results JSON (e.g. after editing docs/bench/notes.md)")
	flag.Parse()
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
	defP6Objects, defP6Streaming, defP6Count := "10000", "off", 1
	switch c.size {
	case "small":
		c.p1Sizes, c.p2Size, c.herdObjs = []int{10000}, 10000, 1000
	case "full":
		c.p1Sizes, c.p2Size, c.herdObjs = []int{10000, 50000}, 10000, 5000
		defServers, defScaling = "v1.37.2,v1.37.2/nocache,v1.33.13,v1.18.19", "1000,10000,50000,100000"
		defP6Objects, defP6Streaming, defP6Count = "10000,50000", "off,on", 3
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
	if c.p1Contenders, err = parseContenders("p1-contenders", *p1c, false); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.crContenders, err = parseContenders("cr-contenders", *crc, true); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.p5Informers < 1 || c.p5Informers > 16 {
		fmt.Fprintln(os.Stderr, "bench: -p5-informers must be 1..16")
		os.Exit(2)
	}
	if c.p5PprofSecs < 1 || c.p5PprofSecs > 55 {
		// The apiserver ends a request that is not long-running after its
		// --request-timeout (1 minute by default), profiles included.
		fmt.Fprintln(os.Stderr, "bench: -p5-pprof-seconds must be 1..55 (the apiserver's request timeout ends longer profiles)")
		os.Exit(2)
	}
	if c.p5Pprof != "" {
		if err := os.MkdirAll(c.p5Pprof, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -p5-pprof:", err)
			os.Exit(2)
		}
	}
	if c.p5SampleMs < 10 {
		fmt.Fprintln(os.Stderr, "bench: -p5-sample-ms must be at least 10")
		os.Exit(2)
	}
	c.crObjects = *crObjects
	if c.p5Contenders, err = parseContenders("p5-contenders", *p5c, false); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.p5Contenders == nil {
		c.p5Contenders = p5Contenders
	}
	for _, sp := range strings.Split(*p5s, ",") {
		if sp = strings.TrimSpace(sp); sp == "" {
			continue
		}
		if !slices.ContainsFunc(c.servers, func(s serverSpec) bool { return s.Spec == sp }) {
			fmt.Fprintf(os.Stderr, "bench: -p5-servers: %q is not in -servers\n", sp)
			os.Exit(2)
		}
		c.p5Servers = append(c.p5Servers, sp)
	}
	if c.p5Count <= 0 {
		c.p5Count = c.count
	}
	if err := c.p6Flags(*p6Objects, defP6Objects, *p6Streaming, defP6Streaming, defP6Count, *p6c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := c.p7Flags(*p7Servers, *p7Replicas); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *objects > 0 {
		c.p1Sizes, c.p2Size, c.crObjects = []int{*objects}, *objects, *objects
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
	if c.want("p4") {
		logf("P4: go test -bench (wrapper overhead) in %s", c.root)
		if rep.P4, err = runP4(ctx, c); err != nil {
			return fmt.Errorf("P4: %w", err)
		}
	}
	if c.want("p7") {
		if rep.P7, err = runP7(ctx, c); err != nil {
			return fmt.Errorf("P7: %w", err)
		}
	}
	if !c.want("p1") && !c.want("p2") && !c.want("p3") && !c.want("p5") && !c.want("p6") && !c.want("scaling") {
		return finish(rep, c, start)
	}
	servers := c.servers
	if !c.want("p1") && !c.want("p5") {
		servers = servers[:1] // P2, P3, P6 and scaling run on the first server only
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
	// Order on a server: P1 sizes and CRs; P2 and P3 (first server); the
	// scaling-only sizes (up to 100k objects: after P2/P3, so their
	// apiserver restarts do not reload them); P5 last (it restarts the
	// apiserver before every run, and a contender that did not sync in P1
	// is not given P5's long timeout).
	p1Names := c.p1Contenders
	if p1Names == nil {
		p1Names = p1Default(false)
		if i > 0 {
			p1Names = p1Core
		}
	}
	if c.wantKind("configmaps") && c.want("p1") {
		for _, n := range c.p1Sizes {
			r, err := b.runP1(ctx, n, "configmaps", p1Names, true)
			if err != nil {
				return fmt.Errorf("P1 %d: %w", n, err)
			}
			rep.P1 = append(rep.P1, r)
		}
	}
	if c.wantKind("cr") && c.want("p1") && c.crObjects > 0 {
		crNames := c.crContenders
		if crNames == nil {
			crNames = p1Default(true)
		}
		r, err := b.runP1(ctx, c.crObjects, "cr", crNames, false)
		if err != nil {
			return fmt.Errorf("P1 %d custom resources: %w", c.crObjects, err)
		}
		rep.P1 = append(rep.P1, r)
	}
	if i == 0 && c.want("p2") {
		if rep.P2, err = b.runP2(ctx, c.p2Size); err != nil {
			return fmt.Errorf("P2: %w", err)
		}
		rep.P2.Server = sp.Spec
	}
	if i == 0 && c.want("p3") {
		if rep.P3, err = b.runP3(ctx); err != nil {
			return fmt.Errorf("P3: %w", err)
		}
		rep.P3.Server = sp.Spec
	}
	if i == 0 && c.want("p6") {
		p, err := b.runP6(ctx)
		if err != nil {
			return fmt.Errorf("P6: %w", err)
		}
		rep.P6 = append(rep.P6, p...)
	}
	if i == 0 && c.want("scaling") {
		for _, n := range c.scaling {
			if c.want("p1") && c.wantKind("configmaps") && slices.Contains(c.p1Sizes, n) {
				continue // P1 ran this size with every scaling contender
			}
			r, err := b.runP1(ctx, n, "configmaps", scalingContenders, false)
			if err != nil {
				return fmt.Errorf("scaling %d: %w", n, err)
			}
			rep.P1 = append(rep.P1, r)
		}
	}
	if c.want("p5") && (c.p5Servers == nil || slices.Contains(c.p5Servers, sp.Spec)) {
		p, err := b.runP5(ctx)
		if err != nil {
			return fmt.Errorf("P5: %w", err)
		}
		rep.P5 = append(rep.P5, p)
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
