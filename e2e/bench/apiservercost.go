package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/steadywatch/steadywatch/e2e/internal/poll"
)

// Apiserver cost: what the apiserver spends when a herd of informers of one
// contender starts at once on a large namespace (the KEP-3157 scenario: many
// clients listing hundreds of MB at the same time). The apiserver is restarted (same etcd)
// before every run, so each contender meets a server with the same heap
// state: freshly started, watch cache initialised, resident memory steady.

type costRun struct {
	Rep    int         `json:"rep"`
	Result *syncResult `json:"result"`
	Server counters    `json:"server"` // configmaps counters, diffed around the run
	// Apiserver process, from its /metrics sampled every SampleMs during the
	// run: peak minus the value just before the child started.
	HeapBase   float64 `json:"heap_inuse_base_bytes"`
	HeapPeak   float64 `json:"heap_inuse_peak_bytes"`
	RSSBase    float64 `json:"rss_base_bytes"`
	RSSPeak    float64 `json:"rss_peak_bytes"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// AllocBytes: bytes the apiserver allocated during the run
	// (go_memstats_alloc_bytes_total delta): the memory work of the lists,
	// which the peak heap shows only up to the collector's pacing.
	AllocBytes float64 `json:"alloc_bytes,omitempty"`
	Samples    int     `json:"samples"`
	SettleMs   float64 `json:"settle_ms"` // restart until the baseline was taken
	// ScrapeAllocBytes and ScrapeCPUSeconds: what one /metrics scrape cost
	// the apiserver, measured on the server right after the run (21
	// scrapes back to back). The run's CPU and allocations include its
	// Samples+1 scrapes (about a third of a core at ~10 a second on
	// v1.37.2), which cost the longer runs more: costReport.netCPU and
	// netAlloc take them out. 0 in results that did not measure it.
	ScrapeAllocBytes float64 `json:"scrape_alloc_bytes,omitempty"`
	ScrapeCPUSeconds float64 `json:"scrape_cpu_seconds,omitempty"`
	// GCCycles: garbage collections the apiserver completed during the run
	// (go_gc_duration_seconds_count delta; 0 in results that did not record it).
	GCCycles float64 `json:"apiserver_gc_cycles,omitempty"`
	// Profile: the apiserver's CPU profile of the run (-cost-pprof), a file
	// name in that directory.
	Profile string `json:"profile,omitempty"`
	// BaselineRestarts: extra apiserver restarts before this run because
	// its settled heap was more than costBaselineSpread above the lowest
	// baseline of the server's earlier runs.
	BaselineRestarts int `json:"baseline_restarts,omitempty"`
}

// costBaselineSpread is how far apart (as a ratio) two runs' settled
// apiserver heaps may be for their peak heaps to be compared. The
// apiserver's collector lets its heap grow in proportion to its live heap
// (GOGC), so a run that starts from a larger live heap has more room for
// garbage and shows a larger peak for the same work. An apiserver can
// settle at one of a few levels after a restart, far enough apart to make
// identical lists look markedly dearer from the higher one.
const costBaselineSpread = 1.15

// costMaxBaselineRestarts bounds the extra restarts costOnce makes to start a
// run from the same apiserver state as the others.
const costMaxBaselineRestarts = 3

// costCalibrationRestarts: restarts before a server's first apiserver cost run to find
// the lowest level its apiserver settles at.
const costCalibrationRestarts = 3

func mibs(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(mib(uint64(x)))
	}
	return out
}

// sameBaseline: whether two runs started from comparable apiserver heaps.
func sameBaseline(a, b costRun) bool {
	lo, hi := min(a.HeapBase, b.HeapBase), max(a.HeapBase, b.HeapBase)
	return lo > 0 && hi <= lo*costBaselineSpread
}

func (r costRun) heapDelta() float64 { return r.HeapPeak - r.HeapBase }
func (r costRun) rssDelta() float64  { return r.RSSPeak - r.RSSBase }

// netCPU is the run's apiserver CPU seconds without its Samples+1 /metrics
// scrapes at cpu seconds each.
func (r costRun) netCPU(cpu float64) float64 {
	return max(0, r.CPUSeconds-float64(r.Samples+1)*cpu)
}

// netAlloc is the run's apiserver allocated bytes without its Samples+1
// /metrics scrapes at alloc bytes each.
func (r costRun) netAlloc(alloc float64) float64 {
	return max(0, r.AllocBytes-float64(r.Samples+1)*alloc)
}

type costReport struct {
	Server     string               `json:"server"`
	Version    string               `json:"version"`
	Objects    int                  `json:"objects"`
	SizeKB     int                  `json:"size_kb"`
	Informers  int                  `json:"informers"`
	Namespace  string               `json:"namespace"`
	Contenders []string             `json:"contenders"`
	Runs       map[string][]costRun `json:"runs"`
	Failures   map[string]string    `json:"failures,omitempty"`
	Baseline   string               `json:"baseline"` // how the baseline was made fair
	// BallastMiB: MiB of other ConfigMaps (namespace cost-ballast) the
	// apiserver held during the runs (-cost-ballast-mib); 0 = only the scenario's
	// namespace's.
	BallastMiB int `json:"ballast_mib,omitempty"`
	// CalibrationHeap: the apiserver's settled heap-in-use after each of
	// the restarts made before the first run (empty in results made
	// without calibration); the lowest is the baseline every run is
	// started near (costOnce).
	CalibrationHeap []float64 `json:"calibration_heap_inuse_bytes,omitempty"`
	// SampleMs: the /metrics sampling period (0 in results that did not
	// record it: 100 ms).
	SampleMs int `json:"sample_ms,omitempty"`
	Count    int `json:"count"`
}

// scrapeCost is the cost of one /metrics scrape on this report's server:
// the median of its runs' measurements (one taken right after a run can
// catch the apiserver collecting that run's garbage; the median of a
// server's runs cannot be moved by one such). 0, 0 where none was measured.
func (p *costReport) scrapeCost() (alloc, cpu float64) {
	var as, cs []float64
	for _, runs := range p.Runs {
		for _, r := range runs {
			if r.ScrapeCPUSeconds > 0 || r.ScrapeAllocBytes > 0 {
				as, cs = append(as, r.ScrapeAllocBytes), append(cs, r.ScrapeCPUSeconds)
			}
		}
	}
	if len(cs) == 0 {
		return 0, 0
	}
	return median(as), median(cs)
}

// netCPU and netAlloc: a run's apiserver CPU seconds and allocated bytes
// without the bench's own /metrics scrapes (at the server's scrapeCost).
func (p *costReport) netCPU(r costRun) float64 {
	_, cpu := p.scrapeCost()
	return r.netCPU(cpu)
}

func (p *costReport) netAlloc(r costRun) float64 {
	alloc, _ := p.scrapeCost()
	return r.netAlloc(alloc)
}

// costTimeout bounds one apiserver cost child (N informers over ~250 MB).
const costTimeout = 8 * time.Minute

func (b *bench) runCost(ctx context.Context) (*costReport, error) {
	ns := "apiserver-cost"
	n := b.c.costObjects
	if b.c.costBallastMiB > 0 {
		if err := b.populateCM(ctx, "cost-ballast", b.c.costBallastMiB<<10/b.c.costSizeKB, b.c.costSizeKB); err != nil {
			return nil, err
		}
	}
	if err := b.populateCM(ctx, ns, n, b.c.costSizeKB); err != nil {
		return nil, err
	}
	rep := &costReport{Server: b.spec.Spec, Version: b.cluster.Version(), Objects: n, SizeKB: b.c.costSizeKB, Informers: b.c.costInformers,
		Namespace: ns, Count: b.c.costCount, SampleMs: b.c.costSampleMs, Contenders: b.c.costContenders, Runs: map[string][]costRun{}, Failures: map[string]string{},
		Baseline: "apiserver restarted (same etcd) before every run; baseline sampled once its watch cache is initialised and its resident memory is steady, right after two forced GCs (`/debug/pprof/heap?gc=1`; a sync.Pool survives one); " +
			"the apiserver is restarted again (at most 3 times) where that heap is more than 15% above the lowest of 3 restarts before the first run, and peak heaps are compared only between runs whose baselines are within 15%"}
	if b.spec.NoCache {
		rep.Baseline = "apiserver restarted (same etcd) before every run; baseline sampled once its resident memory is steady (no watch cache), right after two forced GCs (`/debug/pprof/heap?gc=1`; a sync.Pool survives one)"
	}
	if b.c.costBallastMiB > 0 {
		rep.BallastMiB = b.c.costBallastMiB
		rep.Baseline += fmt.Sprintf("; the apiserver also holds %d MiB of other ConfigMaps (namespace cost-ballast, not listed by the informers), as a real cluster's apiserver holds other data", b.c.costBallastMiB)
	}
	for _, name := range b.c.costContenders {
		if why, ok := b.failed[name]; ok {
			rep.Failures[name] = "not run: " + why + " (initial sync)"
		}
	}
	// Calibrate: the apiserver settles at one of a few heap levels after a
	// restart (with the initial sync's and the scaling run's objects in the server), so
	// find the lowest before the first run rather than letting the first
	// run set it.
	for i := 0; i < costCalibrationRestarts; i++ {
		base, _, err := b.restartAndSettle(ctx)
		if err != nil {
			return nil, err
		}
		rep.CalibrationHeap = append(rep.CalibrationHeap, base.HeapInuse)
	}
	logf("apiserver cost %s: the apiserver settles at %v MiB after a restart; runs start within %.0f%% of the lowest",
		b.spec.Spec, mibs(rep.CalibrationHeap), (costBaselineSpread-1)*100)
	kc := b.cluster.KubeconfigPath()
	heading := func(r int) {
		logf("apiserver cost %s: %d informers x %d ConfigMaps of %d KiB: repetition %d/%d", b.spec.Spec, b.c.costInformers, n, b.c.costSizeKB, r+1, b.c.costCount)
	}
	once := func(r int, name string) error {
		run, err := b.costOnce(ctx, kc, ns, n, name, r)
		if err != nil {
			return err
		}
		rep.Runs[name] = append(rep.Runs[name], *run)
		logf("  %-14s all synced in %7.0f ms; apiserver heap +%6.1f MiB (peak %6.1f), RSS +%6.1f MiB, CPU %5.2f s, allocated %7.1f MiB "+
			"(net of %d /metrics scrapes at %.1f MiB, %.3f CPU s each), etcd lists %g, requests %v, apiserver GCs %g",
			name, run.Result.SyncMs, mib(uint64(max(0, run.heapDelta()))), mib(uint64(run.HeapPeak)), mib(uint64(max(0, run.rssDelta()))),
			run.netCPU(run.ScrapeCPUSeconds), mib(uint64(run.netAlloc(run.ScrapeAllocBytes))), run.Samples+1, mib(uint64(max(0, run.ScrapeAllocBytes))), run.ScrapeCPUSeconds,
			run.Server.etcdLists(), run.Result.Requests, run.GCCycles)
		return nil
	}
	if err := repeatAlternating(ctx, b.c.costCount, b.c.costContenders, contenderKey, 14, rep.Failures, heading, once); err != nil {
		return nil, err
	}
	return rep, nil
}

func (b *bench) costOnce(ctx context.Context, kc, ns string, n int, name string, r int) (*costRun, error) {
	c, _ := contenderByName(name)
	api := b.cluster.APIServers()[0]
	t0 := time.Now()
	var (
		base     processMetrics
		restarts int
	)
	for {
		var (
			ref float64
			err error
		)
		if base, ref, err = b.restartAndSettle(ctx); err != nil {
			return nil, err
		}
		// The same starting point for every run: a settled heap well above
		// the lowest this server has settled at gives the collector more
		// room (see costBaselineSpread), so restart again, a bounded number
		// of times; the renderer also pairs only runs with close baselines.
		if ref == 0 || base.HeapInuse <= ref*costBaselineSpread || restarts == costMaxBaselineRestarts {
			break
		}
		b.saveBaselineHeap(ctx, costProfileName(b.spec.Spec, name, r, fmt.Sprintf("-baseline-restart%d.heap", restarts)))
		restarts++
		logf("  %-14s apiserver settled at %.0f MiB, above this server's lowest baseline %.0f MiB: restarting it again (%d/%d)",
			name, mib(uint64(base.HeapInuse)), mib(uint64(ref)), restarts, costMaxBaselineRestarts)
	}
	settle := time.Since(t0)
	b.saveBaselineHeap(ctx, costProfileName(b.spec.Spec, name, r, "-baseline.heap"))
	before, err := b.serverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	// Sample the apiserver's process metrics every -cost-sample-ms while the herd syncs.
	sctx, stopSampling := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		peak    = base
		last    = base
		samples int
		wg      sync.WaitGroup
	)
	sample := func(ctx context.Context) {
		text, err := api.Metrics(ctx)
		if err != nil {
			return
		}
		p := parseProcessMetrics(text)
		mu.Lock()
		defer mu.Unlock()
		peak.HeapInuse = max(peak.HeapInuse, p.HeapInuse)
		peak.RSS = max(peak.RSS, p.RSS)
		if p.CPU > 0 {
			last = p
		}
		samples++
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Duration(b.c.costSampleMs) * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				sample(sctx)
			}
		}
	}()
	// The apiserver's CPU profile of the run (-cost-pprof): started with the
	// child, it runs -cost-pprof-seconds whatever the child does.
	var (
		profile     string
		profileDone = make(chan error, 1)
	)
	if b.c.costPprof != "" {
		profile = costProfileName(b.spec.Spec, name, r, ".cpu")
		go func() {
			data, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", strconv.Itoa(b.c.costPprofSecs)).DoRaw(ctx)
			if err == nil {
				err = os.WriteFile(filepath.Join(b.c.costPprof, profile), data, 0o644)
			}
			profileDone <- err
		}()
	}
	var res syncResult
	err = b.runChildOnce(ctx, c.Env, &res, "-mode", "sync", "-kubeconfig", kc, "-contender", name, "-namespace", ns,
		"-expect", strconv.Itoa(n), "-instances", strconv.Itoa(b.c.costInformers), "-timeout", costTimeout.String())
	stopSampling()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	sample(ctx) // one last sample: the CPU counter after the run
	if profile != "" {
		// The scrape-cost measurement below must not land in the profile.
		if perr := <-profileDone; perr != nil {
			logf("  (no apiserver CPU profile: %v)", perr)
			profile = ""
		}
	}
	after, err := b.serverMetrics(ctx)
	if err != nil {
		return nil, err
	}
	if r > 0 {
		res.RequestLog = nil
	}
	run := &costRun{Rep: r, Result: &res, Server: after.minus(before), HeapBase: base.HeapInuse, HeapPeak: peak.HeapInuse,
		RSSBase: base.RSS, RSSPeak: peak.RSS, CPUSeconds: last.CPU - base.CPU, AllocBytes: last.Alloc - base.Alloc, Samples: samples, SettleMs: ms(settle), BaselineRestarts: restarts,
		GCCycles: last.GCCycles - base.GCCycles, Profile: profile}
	if run.ScrapeAllocBytes, run.ScrapeCPUSeconds, err = b.measureScrapeCost(ctx); err != nil {
		logf("  (could not measure the cost of a /metrics scrape: %v)", err)
	}
	return run, nil
}

// measureScrapeCost measures what one /metrics scrape costs the apiserver
// (allocated bytes, CPU seconds): 20 scrapes back to back between two
// readings, i.e. about 21 scrapes' worth, on the server idle after a run.
func (b *bench) measureScrapeCost(ctx context.Context) (allocBytes, cpuSeconds float64, err error) {
	api := b.cluster.APIServers()[0]
	read := func() (processMetrics, error) {
		text, err := api.Metrics(ctx)
		return parseProcessMetrics(text), err
	}
	m0, err := read()
	if err != nil {
		return 0, 0, err
	}
	for range 20 {
		if _, err := read(); err != nil {
			return 0, 0, err
		}
	}
	m1, err := read()
	if err != nil {
		return 0, 0, err
	}
	return (m1.Alloc - m0.Alloc) / 21, (m1.CPU - m0.CPU) / 21, nil
}

// settle waits, after an apiserver restart, until the configmaps watch
// cache is initialised (where the server has one and reports it) and the
// process's resident memory has been steady (within 2%) for a second, and
// returns the process metrics after a forced GC: the baseline of an apiserver cost run.
func (b *bench) settle(ctx context.Context) (processMetrics, error) {
	api := b.cluster.APIServers()[0]
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var prev processMetrics
	steady := 0
	err := poll.Until(ctx, 250*time.Millisecond, func() bool {
		text, err := api.Metrics(ctx)
		if err != nil {
			return false
		}
		if !b.spec.NoCache && strings.Contains(text, "apiserver_watch_cache_initializations_total") &&
			parseCounters(text)["apiserver_watch_cache_initializations_total"] < 1 {
			return false
		}
		p := parseProcessMetrics(text)
		if prev.RSS > 0 && p.RSS > 0 && p.RSS < prev.RSS*1.02 && p.RSS > prev.RSS*0.98 {
			steady++
		} else {
			steady = 0
		}
		prev = p
		return steady >= 4
	})
	if err != nil {
		return processMetrics{}, fmt.Errorf("apiserver did not settle after restart: %w", err)
	}
	// Force two GCs in the apiserver (its pprof heap endpoint runs one with
	// gc=1), so the baseline's heap-in-use is live data, not whatever
	// garbage the last cycle left: the same starting point for every run.
	// Two, because a sync.Pool keeps its objects through one collection (as
	// its victim cache): after one, the etcd client's gRPC receive buffers
	// of the watch cache's initial list (gRPC's mem buffer pools, hundreds
	// of MiB with this scenario's data) are still in the baseline or not, depending on
	// whether a collection has already run since; heap profiles of the two
	// settled levels differ by exactly those buffers.
	for i := 0; i < 2; i++ {
		if _, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil {
			logf("  (could not force a GC in the apiserver: %v)", err)
		}
	}
	text, err := api.Metrics(ctx)
	if err != nil {
		return processMetrics{}, err
	}
	return parseProcessMetrics(text), nil
}

// restartAndSettle restarts the apiserver and waits for it to settle
// (settle), and keeps the lowest settled heap-in-use of this server in
// b.costBaseHeap. ref is that lowest before this restart (0 at the first).
func (b *bench) restartAndSettle(ctx context.Context) (base processMetrics, ref float64, err error) {
	if err := b.cluster.APIServers()[0].Restart(ctx); err != nil {
		return base, 0, fmt.Errorf("restarting the apiserver: %w", err)
	}
	if base, err = b.settle(ctx); err != nil {
		return base, 0, err
	}
	ref = b.costBaseHeap
	if ref == 0 || base.HeapInuse < ref {
		b.costBaseHeap = base.HeapInuse
	}
	return base, ref, nil
}

// costProfileName names a profile of apiserver cost run r of contender name on server
// spec in the -cost-pprof directory; suffix is ".cpu", "-baseline.heap", ...
func costProfileName(spec, name string, r int, suffix string) string {
	return fmt.Sprintf("cost-%s-%s-%d%s.pprof", strings.ReplaceAll(spec, "/", "-"), name, r, suffix)
}

// saveBaselineHeap writes the apiserver's heap profile (taken after
// settle's forced GCs and baseline read) into the -cost-pprof directory as
// name, if it is set: what the apiserver holds at a run's start, to tell
// baselines apart.
func (b *bench) saveBaselineHeap(ctx context.Context, name string) {
	if b.c.costPprof == "" {
		return
	}
	raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(filepath.Join(b.c.costPprof, name), raw, 0o644)
	}
	if err != nil {
		logf("  (could not save the apiserver's baseline heap profile: %v)", err)
	}
}
