package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// Relist memory. A client that relists holds its cache and the new
// list at once; running out of memory during relists is among the most
// reported informer failures (kubernetes/client-go#1224,
// kubernetes-sigs/aws-load-balancer-controller#3919). Each contender syncs
// a cache of ConfigMaps through a fault proxy; then, for a fixed window, the
// proxy answers every plain watch with 410 Expired (as a watch ERROR event,
// as the watch cache does for a resourceVersion it no longer holds) and
// ends the open watches, so the client relists again and again while it
// holds its cache. With streaming lists off the proxy refuses every
// streaming list with the 422 of a server whose WatchList gate is off (for
// the whole run, the initial sync included); with them on it also ends each
// streaming list right after its initial-events-end bookmark during the
// window (otherwise the stream stays open as the watch and nothing is
// relisted). The child samples its heap every millisecond during the
// initial sync and during the window.

// relistContenders: stock client-go and every adoption path of steadywatch
// over a typed clientset (the dynamic and metadata shapes are the initial sync's CR
// contenders, on custom resources).
var relistContenders = []string{"stock", "sw-informer", "sw-reflector", "sw-dropin-listwatch", "sw-informerfor", "sw-reflector-funcs"}

// relistLabels name the adoption paths as the README does.
var relistLabels = map[string]string{
	"stock":               "stock client-go informer (`SharedInformerFactory`)",
	"sw-informer":         "client-go factory line, `reflector.NewSharedInformerFactory(cs, ...)`",
	"sw-reflector":        "`reflector.New` over `lister.FromClientset`",
	"sw-dropin-listwatch": "drop-in informer over a typed `cache.ListWatch` (what controller-runtime's `NewInformer` hook and `lister.Wrap` receive)",
	"sw-informerfor":      "controller-runtime's line, `reflector.NewInformerFor(cfg, ...)`, over the same `cache.ListWatch`",
	"sw-dropin-decoding":  "the same with `reflector.NewSharedIndexInformerWithDecoding` (removed; `reflector.NewInformerFor` replaces it)",
	"sw-reflector-funcs":  "`reflector.New` over `lister.FromFuncs`",
}

// relistPhase is what one child measured in one phase (the initial sync or the
// relist window).
type relistPhase struct {
	Ms float64 `json:"ms"`
	// PeakHeap: peak of /memory/classes/heap/objects:bytes (live objects
	// plus garbage not yet swept; MemStats.HeapAlloc), sampled every
	// millisecond. PeakLive: peak of /gc/heap/live:bytes (the heap the last
	// completed GC cycle marked live: no garbage). BaseHeap: heap objects
	// right after the forced GC that starts the phase.
	PeakHeap   uint64          `json:"peak_heap_bytes"`
	PeakLive   uint64          `json:"peak_live_bytes"`
	BaseHeap   uint64          `json:"base_heap_bytes"`
	GCCycles   uint64          `json:"gc_cycles"`
	Objects    int             `json:"objects"` // cache size at the phase's end
	Relists    int             `json:"relists"` // lists and streaming lists answered 200 (first pages, no limit=1 count reads)
	WireIn     int64           `json:"wire_in_bytes"`
	Requests   map[string]int  `json:"requests"`
	RequestLog []requestRecord `json:"request_log,omitempty"`
	// CPUMs: the child's own CPU time in the phase (user and system,
	// getrusage; its millisecond heap sampler included, as for every
	// contender). ServerCPUMs: the apiserver's process_cpu_seconds_total
	// over the initial sync, read by the parent before the child started
	// and once it reported synced (the child's start included). 0 in
	// results that did not record them.
	CPUMs       float64 `json:"cpu_ms,omitempty"`
	ServerCPUMs float64 `json:"apiserver_cpu_ms,omitempty"`
}

func (p relistPhase) requests() int {
	n := 0
	for _, v := range p.Requests {
		n += v
	}
	return n
}

type relistResult struct {
	Contender string      `json:"contender"`
	Initial   relistPhase `json:"initial"`
	Window    relistPhase `json:"window"`
}

type relistRun struct {
	Rep    int           `json:"rep"`
	Result *relistResult `json:"result"`
	// Faults: what the proxy did during the window, by kind, with counts.
	Faults map[string]int `json:"faults,omitempty"`
}

type relistReport struct {
	Server     string                 `json:"server"`
	Version    string                 `json:"version"`
	Objects    int                    `json:"objects"`
	Namespace  string                 `json:"namespace"`
	Streaming  bool                   `json:"streaming"`
	WindowS    float64                `json:"window_s"`
	Count      int                    `json:"count"`
	Contenders []string               `json:"contenders"`
	Runs       map[string][]relistRun `json:"runs"`
	Failures   map[string]string      `json:"failures,omitempty"`
}

// relistTimeout bounds one relist memory child (initial sync of 50k objects on a loaded
// machine, the window, and the report).
const relistTimeout = 5 * time.Minute

func (b *bench) runRelist(ctx context.Context) ([]*relistReport, error) {
	var out []*relistReport
	for _, n := range b.c.relistObjects {
		ns := "sync-" + strconv.Itoa(n) // the initial sync's objects, created once
		if err := b.populate(ctx, ns, n); err != nil {
			return nil, err
		}
		for _, streaming := range b.c.relistStreaming {
			rep, err := b.runRelistMode(ctx, ns, n, streaming)
			if err != nil {
				return nil, fmt.Errorf("%d objects, streaming lists %s: %w", n, relistOnOff(streaming), err)
			}
			out = append(out, rep)
		}
	}
	return out, nil
}

func (b *bench) runRelistMode(ctx context.Context, ns string, n int, streaming bool) (*relistReport, error) {
	proxy, pcfg, err := b.cluster.NewProxy(ctx, b.cluster.APIServers()[0])
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	kc, err := b.writeKubeconfig(pcfg, "bench-relist-proxy.kubeconfig")
	if err != nil {
		return nil, err
	}
	if !streaming {
		// A server with the WatchList gate off (1.27+), for the whole run.
		proxy.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Query: map[string]string{"sendInitialEvents": "true"},
			Status: 422, Message: faults.SendInitialEventsForbiddenMessage})
	}
	rep := &relistReport{Server: b.spec.Spec, Version: b.cluster.Version(), Objects: n, Namespace: ns, Streaming: streaming,
		WindowS: b.c.relistWindow.Seconds(), Count: b.c.relistCount, Contenders: b.c.relistContenders, Runs: map[string][]relistRun{}, Failures: map[string]string{}}
	heading := func(r int) {
		logf("relist memory %d objects, streaming lists %s: repetition %d/%d", n, relistOnOff(streaming), r+1, b.c.relistCount)
	}
	once := func(r int, name string) error {
		run, err := b.relistOnce(ctx, proxy, kc, ns, n, name, r, streaming)
		if err != nil {
			return err
		}
		rep.Runs[name] = append(rep.Runs[name], *run)
		res := run.Result
		logf("  %-20s initial sync %6.0f ms, peak heap %6.1f MiB; %g s of relists: peak heap %6.1f MiB (marked live %6.1f), %d relists, requests %v; proxy %v",
			name, res.Initial.Ms, mib(res.Initial.PeakHeap), rep.WindowS, mib(res.Window.PeakHeap), mib(res.Window.PeakLive),
			res.Window.Relists, res.Window.Requests, run.Faults)
		return nil
	}
	if err := repeatAlternating(ctx, b.c.relistCount, b.c.relistContenders, contenderKey, 20, rep.Failures, heading, once); err != nil {
		return nil, err
	}
	return rep, nil
}

// relistEvent is a child's progress line ("synced", "armed").
type relistEvent struct {
	Event string `json:"event"`
}

func (b *bench) relistOnce(ctx context.Context, proxy *faults.Proxy, kc, ns string, n int, name string, r int, streaming bool) (*relistRun, error) {
	c, _ := contenderByName(name)
	ctx, cancel := context.WithTimeout(ctx, relistTimeout)
	defer cancel()
	proxy.ResetRequests()
	cpu0, err := b.apiserverCPU(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"-mode", "relist", "-kubeconfig", kc, "-contender", name, "-namespace", ns,
		"-expect", strconv.Itoa(n), "-timeout", relistTimeout.String()}
	if b.c.relistHeapprof != "" {
		args = append(args, "-heapprofile", filepath.Join(b.c.relistHeapprof, fmt.Sprintf("%s-%d-streaming-%s-%d.heap", name, n, relistOnOff(streaming), r+1)))
	}
	ch, err := b.spawn(ctx, c.Env, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ch.cmd.Process.Kill() }() // on an error path; a no-op once it exited
	var ev relistEvent
	if err := ch.next(ctx, &ev); err != nil {
		return nil, err
	}
	if ev.Event != "synced" {
		return nil, fmt.Errorf("child said %q, want synced", ev.Event)
	}
	cpu1, err := b.apiserverCPU(ctx)
	if err != nil {
		return nil, err
	}
	if err := waitWatchThenReset(ctx, proxy, true); err != nil {
		return nil, err
	}
	if err := ch.send("go"); err != nil {
		return nil, err
	}
	if err := ch.next(ctx, &ev); err != nil {
		return nil, err
	}
	if ev.Event != "armed" {
		return nil, fmt.Errorf("child said %q, want armed", ev.Event)
	}
	rule := proxy.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true,
		Message: "too old resource version (injected by bench)", Match: func(q url.Values) bool { return q.Get("sendInitialEvents") != "true" }})
	if streaming {
		proxy.SetStreamFaults(faults.StreamFaults{CloseAfterInitialEventsEnd: true})
	}
	proxy.EndWatches()
	// The window is the measurement's length, not a synchronisation.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(b.c.relistWindow):
	}
	if err := ch.send("end"); err != nil {
		return nil, err
	}
	var res relistResult
	err = ch.next(ctx, &res)
	proxy.Remove(rule)
	proxy.SetStreamFaults(faults.StreamFaults{})
	if err != nil {
		return nil, err
	}
	if err := ch.wait(); err != nil {
		return nil, err
	}
	fired := map[string]int{}
	for _, q := range proxy.Requests() {
		for _, f := range strings.Split(q.Fault, "; ") {
			if f == "" {
				continue
			}
			if _, rest, ok := strings.Cut(f, ": "); ok && strings.HasPrefix(f, "rule ") {
				f = rest // "rule 3: 410 Expired" -> "410 Expired"
			}
			fired[q.Verb+" "+f]++
		}
	}
	if len(fired) == 0 {
		return nil, errNoFault
	}
	if res.Window.Relists == 0 {
		return nil, fmt.Errorf("no relist in the %s window (requests %v)", b.c.relistWindow, res.Window.Requests)
	}
	res.Initial.ServerCPUMs = (cpu1 - cpu0) * 1000
	if r > 0 {
		res.Initial.RequestLog, res.Window.RequestLog = nil, nil
	}
	return &relistRun{Rep: r, Result: &res, Faults: fired}, nil
}

// childRelist (mode relist) syncs one cache, reports "synced", and on "go"
// starts measuring the relist window, which the parent ends with "end".
func childRelist(ctx context.Context, cfg *rest.Config, f childFlags, out *json.Encoder) error {
	c, nc, ccfg, cs, err := childClient(cfg, f.contender)
	if err != nil {
		return err
	}
	lines := stdinLines()
	server, err := detectServer(c, ccfg)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ph := startPhase()
	in, err := c.forProcess().start(runCtx, ccfg, cs, server, f.namespace)
	if err != nil {
		return err
	}
	if err := poll.Until(ctx, 200*time.Microsecond, in.synced); err != nil {
		return fmt.Errorf("%s: not synced after %s (%s): %w", c.Name, time.Since(ph.begin).Round(time.Second), in.state(), err)
	}
	initial := ph.end(nc, in)
	if f.expect > 0 && initial.Objects != f.expect {
		return fmt.Errorf("%s: synced with %d objects, want %d", c.Name, initial.Objects, f.expect)
	}
	if err := out.Encode(relistEvent{Event: "synced"}); err != nil {
		return err
	}
	if err := expectLine(ctx, lines, "go"); err != nil {
		return err
	}
	nc.reset()
	ph = startPhase()
	if err := writeHeapProfile(f.heapprofile, ".start"); err != nil {
		return err
	}
	if err := out.Encode(relistEvent{Event: "armed"}); err != nil {
		return err
	}
	if err := expectLine(ctx, lines, "end"); err != nil {
		return err
	}
	window := ph.end(nc, in)
	if err := writeHeapProfile(f.heapprofile, ".end"); err != nil {
		return err
	}
	stop()
	return out.Encode(&relistResult{Contender: c.Name, Initial: initial, Window: window})
}

// writeHeapProfile writes the heap profile (in use as of the last completed
// GC cycle, and allocated since the start) to file+suffix, without forcing
// a GC; file "" writes nothing.
func writeHeapProfile(file, suffix string) error {
	if file == "" {
		return nil
	}
	f, err := os.Create(file + suffix)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stdinLines reads stdin line by line (one reader for the child's life).
func stdinLines() <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			ch <- strings.TrimSpace(sc.Text())
		}
	}()
	return ch
}

func expectLine(ctx context.Context, lines <-chan string, want string) error {
	select {
	case l, ok := <-lines:
		if !ok {
			return fmt.Errorf("stdin closed, want %q", want)
		}
		if l != want {
			return fmt.Errorf("got %q on stdin, want %q", l, want)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// phase measures one relist memory phase: a forced GC first (so what the previous
// phase left as garbage does not count), then the heap sampled every
// millisecond until end.
type phase struct {
	begin time.Time
	base  uint64
	gc0   uint64
	cpu0  time.Duration
	s     *liveSampler
}

func startPhase() *phase {
	base := retainedHeap()
	return &phase{begin: time.Now(), base: base, gc0: gcCycles(), cpu0: processCPU(), s: startLiveSampler(time.Millisecond)}
}

// processCPU is the CPU time (user and system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (p *phase) end(nc *netCounter, in *instance) relistPhase {
	took := time.Since(p.begin)
	heap, live := p.s.finish()
	wi, _, _, reqs := nc.snapshot()
	return relistPhase{Ms: ms(took), CPUMs: ms(processCPU() - p.cpu0), PeakHeap: heap, PeakLive: live, BaseHeap: p.base, GCCycles: gcCycles() - p.gc0,
		Objects: in.size(), Relists: countRelists(reqs), WireIn: wi, Requests: classifyRequests(reqs), RequestLog: reqs}
}

// countRelists counts the lists a client started: lists (first pages: no
// continue token) and streaming lists answered 200, without the limit=1
// reads that count a collection beside a streaming list.
func countRelists(reqs []requestRecord) int {
	n := 0
	for _, r := range reqs {
		if r.Status != 200 {
			continue
		}
		q, _ := url.ParseQuery(r.Query)
		switch requestClass(r) {
		case "list":
			if q.Get("continue") == "" && q.Get("limit") != "1" {
				n++
			}
		case "watch-list":
			n++
		}
	}
	return n
}

// liveSampler records the peaks of heap objects (live and not yet swept)
// and of the heap the last GC cycle marked live.
type liveSampler struct {
	heap, live atomic.Uint64
	stop, done chan struct{}
}

const heapLive = "/gc/heap/live:bytes"

func startLiveSampler(interval time.Duration) *liveSampler {
	s := &liveSampler{stop: make(chan struct{}), done: make(chan struct{})}
	buf := []metrics.Sample{{Name: heapObjects}, {Name: heapLive}}
	s.sample(buf)
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample(buf)
			}
		}
	}()
	return s
}

func (s *liveSampler) sample(buf []metrics.Sample) {
	metrics.Read(buf)
	if v := buf[0].Value.Uint64(); v > s.heap.Load() {
		s.heap.Store(v)
	}
	if buf[1].Value.Kind() == metrics.KindUint64 {
		if v := buf[1].Value.Uint64(); v > s.live.Load() {
			s.live.Store(v)
		}
	}
}

func (s *liveSampler) finish() (heap, live uint64) {
	close(s.stop)
	<-s.done
	s.sample([]metrics.Sample{{Name: heapObjects}, {Name: heapLive}})
	return s.heap.Load(), s.live.Load()
}

// typedListWatch is what controller-runtime hands its NewInformer hook: a
// cache.ListWatch over a typed client (of cms's namespace).
func typedListWatch(cms typedcorev1.ConfigMapInterface) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cms.Watch(ctx, o)
		},
	}
}

// startRelistPath starts the adoption paths only the relist memory scenario runs: the drop-in
// informer over a typed cache.ListWatch and reflector.New over
// lister.FromFuncs.
func (c contender) startRelistPath(ctx context.Context, cs kubernetes.Interface, server compat.Server, ns string, in *instance, handler cache.ResourceEventHandlerFuncs) (*instance, error) {
	cms := cs.CoreV1().ConfigMaps(ns)
	lo := lister.Options{Server: server, ListGate: c.gate, DisableStreamingList: c.NoStream}
	switch c.Kind {
	case "sw-dropin":
		inf := reflector.NewSharedIndexInformerWithOptions(typedListWatch(cms), &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
			Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		}, lo)
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		go inf.Run(ctx.Done())
		in.fromInformer(inf)
	case "sw-reflector-funcs":
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		r := reflector.New(lister.FromFuncs(cms.List, cms.Watch), &corev1.ConfigMap{}, markerStore{Indexer: idx, in: in}, reflector.Options{Lister: lo})
		go r.Run(ctx)
		in.fromReflector(r, idx)
	default:
		return nil, fmt.Errorf("contender %s: unknown kind %q", c.Name, c.Kind)
	}
	return in, nil
}

// relistFlags sets the relist memory configuration from its flags ("" = the size's default).
func (c *config) relistFlags(objects, defObjects, streaming, defStreaming string, defCount int, contenders string) error {
	if objects == "" {
		objects = defObjects
	}
	if streaming == "" {
		streaming = defStreaming
	}
	var err error
	if c.relistObjects, err = parseInts(objects); err != nil {
		return fmt.Errorf("-relist-objects: %w", err)
	}
	c.relistStreaming = nil
	for _, s := range strings.Split(streaming, ",") {
		switch strings.TrimSpace(s) {
		case "off":
			c.relistStreaming = append(c.relistStreaming, false)
		case "on":
			c.relistStreaming = append(c.relistStreaming, true)
		case "":
		default:
			return fmt.Errorf("-relist-streaming: %q is not off or on", s)
		}
	}
	if c.relistCount <= 0 {
		c.relistCount = defCount
	}
	if c.relistWindow <= 0 {
		return fmt.Errorf("-relist-window must be positive")
	}
	if c.relistContenders, err = parseContenders("relist-contenders", contenders, false); err != nil {
		return err
	}
	if len(c.relistContenders) == 0 {
		c.relistContenders = relistContenders
	}
	if c.relistContenders[0] != "stock" {
		return fmt.Errorf("-relist-contenders: the first must be stock (every ratio is to it)")
	}
	return nil
}

// relistOnly: the run measured relist memory and nothing else. Its section
// then goes into the existing benchmarks.md (between the relist markers,
// replacing only an earlier relist memory section) and its results into
// results-relist-<size>.json, so such a run leaves the rest of the page and
// its results alone.
func (r *report) relistOnly() bool {
	return len(r.Relist) > 0 && len(r.Sync) == 0 && r.Recovery == nil && r.Restart == nil && r.Overhead == nil && len(r.Cost) == 0
}

const (
	relistBegin = "<!-- relist:begin: a run of e2e/bench -only relist replaces this section alone -->"
	relistEnd   = "<!-- relist:end -->"
)

func (r *report) writeRelistOnly(out string) error {
	return r.writeSectionOnly(out, "relist memory", "results-relist-"+r.Size+".json", func(page, jsonName string) string {
		return spliceRelist(page, r.relistSection(jsonName))
	})
}

// writeSectionOnly writes r as <out>/bench/<jsonName> and splices the
// section of one scenario (name) into <out>/benchmarks.md, leaving the rest
// of the page alone: the write of a run of one scenario (-only relist, -only sharding).
func (r *report) writeSectionOnly(out, name, jsonName string, splice func(page, jsonName string) string) error {
	dir, err := r.writeResults(out, jsonName)
	if err != nil {
		return err
	}
	page := filepath.Join(out, "benchmarks.md")
	old, err := os.ReadFile(page)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(old) == 0 {
		old = []byte("# Benchmarks: steadywatch vs stock client-go\n\n")
	}
	if err := os.WriteFile(page, []byte(splice(string(old), jsonName)), 0o644); err != nil {
		return err
	}
	logf("wrote the %s section of %s and %s", name, page, filepath.Join(dir, jsonName))
	return nil
}

// spliceRelist puts section in place of page's relist memory section, or
// before its first trailing section, or at its end.
func spliceRelist(page, section string) string {
	if i := strings.Index(page, relistBegin); i >= 0 {
		if j := strings.Index(page[i:], relistEnd); j >= 0 {
			return page[:i] + section + strings.TrimLeft(page[i+j+len(relistEnd):], "\n")
		}
	}
	return beforeTrailing(page, section)
}

// Headings of the sections a full run writes after the relist memory and
// sharding sections: each begins with one of these.
const (
	recoveryHeading = "## Recovery after a watch 410"
	restartHeading  = "## Restart herd:"
	overheadHeading = "## Overhead:"
)

// beforeTrailing puts section before the first of page's trailing sections
// (recovery, restart herd, overhead), or at its end.
func beforeTrailing(page, section string) string {
	for _, h := range []string{recoveryHeading, restartHeading, overheadHeading} {
		if i := strings.Index(page, "\n"+h); i >= 0 {
			return page[:i+1] + section + page[i+1:]
		}
	}
	return strings.TrimRight(page, "\n") + "\n\n" + section
}

func relistOnOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// stockStreams: stock's initial sync was a streaming list (and no list).
func (p *relistReport) stockStreams() bool {
	runs := p.Runs["stock"]
	if len(runs) == 0 {
		return false
	}
	q := runs[0].Result.Initial.Requests
	return q["watch-list"] > 0 && q["list"] == 0
}

// pairedRelist returns the per-repetition ratios f(ours)/f(stock), paired by
// repetition.
func (p *relistReport) paired(ours string, f func(*relistResult) float64) spread {
	base := map[int]*relistResult{}
	for _, r := range p.Runs["stock"] {
		base[r.Rep] = r.Result
	}
	var rs []float64
	for _, r := range p.Runs[ours] {
		if b, ok := base[r.Rep]; ok && f(b) > 0 {
			rs = append(rs, f(r.Result)/f(b))
		}
	}
	return spreadOf(rs)
}

func (p *relistReport) median(name string, f func(*relistResult) float64) float64 {
	var xs []float64
	for _, r := range p.Runs[name] {
		xs = append(xs, f(r.Result))
	}
	return median(xs)
}

var (
	relistInitialTime = func(r *relistResult) float64 { return r.Initial.Ms }
	relistInitialPeak = func(r *relistResult) float64 { return float64(r.Initial.PeakHeap) }
	relistWindowPeak  = func(r *relistResult) float64 { return float64(r.Window.PeakHeap) }
	relistWindowLive  = func(r *relistResult) float64 { return float64(r.Window.PeakLive) }
	relistWindowBase  = func(r *relistResult) float64 { return float64(r.Window.BaseHeap) }
	relistRelists     = func(r *relistResult) float64 { return float64(r.Window.Relists) }
	relistRequests    = func(r *relistResult) float64 { return float64(r.Window.requests()) }
	relistInitialCPU  = func(r *relistResult) float64 { return r.Initial.CPUMs }
	relistInitialSrv  = func(r *relistResult) float64 { return r.Initial.ServerCPUMs }
)

// The relist memory goals, ours / stock (the requests goal: ours - stock).
const (
	relistRelistGoal       = 0.5 // relist-window peak heap
	relistListedHeapGoal   = 0.6 // initial-sync peak heap where stock lists
	relistListedTimeGoal   = 0.7 // initial-sync time where stock lists
	relistStreamedHeapGoal = 0.9 // initial-sync peak heap where stock streams
	relistRequestSlack     = 3   // requests in the window beyond stock's
)

// extraRequests returns the most requests ours sent in the window beyond
// stock's in the same repetition, and how many repetitions were paired.
func (p *relistReport) extraRequests(ours string) (most, pairs int) {
	base := map[int]int{}
	for _, r := range p.Runs["stock"] {
		base[r.Rep] = r.Result.Window.requests()
	}
	most = math.MinInt
	for _, r := range p.Runs[ours] {
		if b, ok := base[r.Rep]; ok {
			most, pairs = max(most, r.Result.Window.requests()-b), pairs+1
		}
	}
	if pairs == 0 {
		return 0, 0
	}
	return most, pairs
}

// relistSection renders relist memory (between its markers) for the page.
func (r *report) relistSection(jsonName string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p0 := r.Relist[0]
	w("%s\n## Relist memory (server `%s`)\n\n", relistBegin, p0.Server)
	e := r.Env
	w("Produced by\n\n```sh\n%s\n```\n\n", reproduceCommand(r.Command))
	w("on %s (kube-apiserver %s, steadywatch commit %s, %s, %d CPUs, load average start %s, end %s; the run took %.0f s); results with every request in [`bench/%s`](bench/%s). ",
		e.Date, p0.Version, e.Commit, e.OS, e.CPUs, e.LoadStart, e.LoadEnd, e.DurationS, jsonName, jsonName)
	w("`make bench-relist` runs this section alone (10k ConfigMaps, streaming lists off, 1 repetition, a few minutes); `make bench-relist BENCH_SIZE=full` runs 10k and 50k, streaming lists off and on, 3 repetitions. It is not part of `make test`.\n\n")
	w("- **Setup.** ConfigMaps of about 2.4 KB (the initial sync's objects). Each contender runs in a fresh child process, one after another, repetitions interleaved ABAB, beside stock client-go in the same run, through the bench's fault proxy. ")
	w("*Streaming lists off*: the proxy answers every streaming list (`sendInitialEvents=true`) with the 422 of a server whose WatchList gate is off, for the whole run; *on*: it forwards them.\n")
	w("- **Initial sync**: from the cache's start until it reports synced, after a forced GC.\n")
	w("- **Relist window** (%g s), after a forced GC once the cache is synced and watching: the proxy answers every plain watch with 410 Expired (a watch ERROR event, as the watch cache does) and ends the open watches; with streaming lists on it also ends every streaming list right after its initial-events-end bookmark (otherwise the stream stays open as the watch and nothing relists; while it does, the proxy asks the apiserver for uncompressed watches). ", p0.WindowS)
	w("Each client relists as often as its own backoff lets it, holding its cache; *relists* counts the lists and streaming lists it started that were answered 200 (first pages; not the `limit=1` reads beside a streaming list), *requests* everything it sent in the window.\n")
	w("- **Figure**: peak heap = the peak of `/memory/classes/heap/objects:bytes` (runtime/metrics; the same as `MemStats.HeapAlloc`: live objects plus garbage not yet swept), sampled every millisecond. ")
	w("It depends on the collector's pacing (GOGC=100 lets it grow to about twice what the previous cycle marked live), as a process's memory does. ")
	w("*Cache* is the heap right after the forced GC that opens the window: the synced cache and the client's fixed cost. *Marked live* is the peak of `/gc/heap/live:bytes` in the window: what a completed GC cycle found live, without garbage; a relist that holds the old cache and the whole new list shows it at about twice the cache.\n")
	w("- **Goal** (steadywatch's one-line adoption paths against stock, at every size, streaming lists refused and served): relist-window peak <= %.1fx stock's; ", relistRelistGoal)
	w("initial sync where stock lists: peak heap <= %.1fx stock's and time <= %.1fx; where stock streams: peak heap <= %.1fx stock's; ", relistListedHeapGoal, relistListedTimeGoal, relistStreamedHeapGoal)
	w("requests in the window (every plain watch answered 410) at most stock's + %d in every repetition. ", relistRequestSlack)
	w("Ratios are ours / stock paired by repetition: median (min–max); a goal is met when the median is within it. Absolute MiB, ms and request counts are medians.\n\n")
	for _, p := range r.Relist {
		streams := p.stockStreams()
		w("### %s ConfigMaps, streaming lists %s\n\n", fmtCount(p.Objects), relistOnOff(p.Streaming))
		how := "stock lists"
		if streams {
			how = "stock streams its initial list"
		}
		w("%d repetition(s), %s (read from stock's own requests).\n\n", p.Count, how)
		w("| path | initial sync | ours / stock | initial-sync peak | ours / stock | goal | cache | relist-window peak | ours / stock | goal | marked live in window | relists / requests in window | requests: goal |\n")
		w("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, name := range p.Contenders {
			label := relistLabels[name]
			if label == "" {
				label = "`" + name + "`"
			}
			if why, failed := p.Failures[name]; failed && len(p.Runs[name]) == 0 {
				w("| %s | **failed**: %s | | | | | | | | | | | |\n", label, strings.ReplaceAll(why, "|", "/"))
				continue
			}
			it, ip, wp, wl, wb := p.median(name, relistInitialTime), p.median(name, relistInitialPeak), p.median(name, relistWindowPeak), p.median(name, relistWindowLive), p.median(name, relistWindowBase)
			counts := fmt.Sprintf("%g / %g", p.median(name, relistRelists), p.median(name, relistRequests))
			if name == "stock" {
				w("| %s | %.0f ms | (base) | %.0f MiB | (base) | | %.0f MiB | %.0f MiB | (base) | | %.0f MiB | %s | |\n", label, it, mib(uint64(ip)), mib(uint64(wb)), mib(uint64(wp)), mib(uint64(wl)), counts)
				continue
			}
			ts, is, ws := p.paired(name, relistInitialTime), p.paired(name, relistInitialPeak), p.paired(name, relistWindowPeak)
			initGoal := fmt.Sprintf("heap <= %.1fx: %s; time <= %.1fx: %s", relistListedHeapGoal, verdict(is.N > 0 && is.Median <= relistListedHeapGoal),
				relistListedTimeGoal, verdict(ts.N > 0 && ts.Median <= relistListedTimeGoal))
			if streams {
				initGoal = fmt.Sprintf("heap <= %.1fx: %s", relistStreamedHeapGoal, verdict(is.N > 0 && is.Median <= relistStreamedHeapGoal))
			}
			extra, pairs := p.extraRequests(name)
			w("| %s | %.0f ms | %s | %.0f MiB | %s | %s | %.0f MiB | %.0f MiB | %s | <= %.1fx: %s | %.0f MiB | %s | <= stock + %d: %s (at most %+d) |\n", label,
				it, ts, mib(uint64(ip)), is, initGoal,
				mib(uint64(wb)), mib(uint64(wp)), ws, relistRelistGoal, verdict(ws.N > 0 && ws.Median <= relistRelistGoal), mib(uint64(wl)), counts,
				relistRequestSlack, verdict(pairs > 0 && extra <= relistRequestSlack), extra)
		}
		w("\n")
		w("%s", p.cpuLine())
		for _, name := range sortedKeys(p.Failures) {
			if len(p.Runs[name]) > 0 {
				w("- `%s` failed in one repetition: %s\n", name, strings.ReplaceAll(p.Failures[name], "\n", " "))
			}
		}
	}
	w("%s\n\n", relistEnd)
	return b.String()
}

// cpuLine says, per contender, where the initial sync's time went: the
// client's own CPU and the apiserver's, medians (empty for results that
// did not record them).
func (p *relistReport) cpuLine() string {
	var parts []string
	for _, name := range p.Contenders {
		if len(p.Runs[name]) == 0 || p.median(name, relistInitialSrv) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %.0f ms wall, client CPU %.0f ms, apiserver CPU %.0f ms", name,
			p.median(name, relistInitialTime), p.median(name, relistInitialCPU), p.median(name, relistInitialSrv)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Initial sync, CPU time (medians; the client's includes its millisecond heap sampler): " + strings.Join(parts, "; ") + ".\n\n"
}
