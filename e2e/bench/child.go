package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
)

// Child processes: each contender runs in a process of its own, so its heap
// and GC state do not depend on what ran before. The child writes one JSON
// object per line on stdout and reads commands on stdin.

type childFlags struct {
	mode, kubeconfig, contender, namespace string
	expect, instances                      int
	proto                                  bool
	timeout                                time.Duration
	cpuprofile, heapprofile                string
	replica, replicas                      int
}

// syncResult is the initial sync's outcome of one contender run.
type syncResult struct {
	Contender    string  `json:"contender"`
	Instances    int     `json:"instances,omitempty"`
	Objects      int     `json:"objects"`
	SyncMs       float64 `json:"sync_ms"`
	PeakHeap     uint64  `json:"peak_heap_bytes"`
	BaseHeap     uint64  `json:"base_heap_bytes"`
	RetainedHeap uint64  `json:"retained_heap_bytes"`
	GCCycles     uint64  `json:"gc_cycles"`
	wireStats
}

// decodeResult is the limit: decoding the same list once from memory.
type decodeResult struct {
	Proto     bool    `json:"proto"`
	Objects   int     `json:"objects"`
	Bytes     int     `json:"bytes"`
	DecodeMs  float64 `json:"decode_ms"`
	PeakHeap  uint64  `json:"peak_heap_bytes"`
	BaseHeap  uint64  `json:"base_heap_bytes"`
	Retained  uint64  `json:"retained_heap_bytes"`
	FetchMs   float64 `json:"fetch_ms"`
	GCCycles  uint64  `json:"gc_cycles"`
	Encoding  string  `json:"content_type"`
	Instances int     `json:"-"`
}

// recoveryResult is the outcome of a recovery or a restart: from the "go" command until every
// instance has seen the marker object.
type recoveryResult struct {
	Contender  string  `json:"contender"`
	Instances  int     `json:"instances"`
	InitialMs  float64 `json:"initial_sync_ms"`
	RecoverMs  float64 `json:"recover_ms"`
	DoneUnixNs int64   `json:"done_unix_ns"`
	wireStats
}

func runChild(args []string) error {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	var f childFlags
	fs.StringVar(&f.mode, "mode", "", "sync, decode, recover, relist or shard")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the server (or proxy)")
	fs.StringVar(&f.contender, "contender", "", "contender name")
	fs.StringVar(&f.namespace, "namespace", "", "namespace of the ConfigMaps")
	fs.IntVar(&f.expect, "expect", 0, "objects expected in the namespace")
	fs.IntVar(&f.instances, "instances", 1, "caches to run (sync and recover mode)")
	fs.BoolVar(&f.proto, "proto", false, "decode mode: protobuf")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "bound on the whole child")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "sync mode: write a CPU profile of the sync to this file")
	fs.StringVar(&f.heapprofile, "heapprofile", "", "relist mode: write heap profiles (pprof) at the relist window's start (<file>.start) and end (<file>.end)")
	fs.IntVar(&f.replica, "replica", 0, "shard mode: this replica's index")
	fs.IntVar(&f.replicas, "replicas", 0, "shard mode: replica count (0: stock client-go, unsharded)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	switch f.mode {
	case "sync":
		r, err := childSync(ctx, cfg, f)
		if err != nil {
			return err
		}
		return out.Encode(r)
	case "decode":
		r, err := childDecode(ctx, cfg, f)
		if err != nil {
			return err
		}
		return out.Encode(r)
	case "recover":
		return childRecover(ctx, cfg, f, out)
	case "relist":
		return childRelist(ctx, cfg, f, out)
	case "shard":
		return childShard(ctx, cfg, f, out)
	}
	return fmt.Errorf("unknown child mode %q", f.mode)
}

// childClient returns contender name, the client configuration it runs
// with over cfg, counted by a new netCounter, and a clientset over it.
func childClient(cfg *rest.Config, name string) (contender, *netCounter, *rest.Config, kubernetes.Interface, error) {
	c, err := contenderByName(name)
	if err != nil {
		return contender{}, nil, nil, nil, err
	}
	nc := newNetCounter()
	ccfg := nc.instrument(c.clientConfig(cfg))
	cs, err := kubernetes.NewForConfig(ccfg)
	if err != nil {
		return contender{}, nil, nil, nil, err
	}
	return c, nc, ccfg, cs, nil
}

// detectServer detects the server over ccfg for steadywatch's contenders
// (one detector per process, as an operator would have); nil for stock.
func detectServer(c contender, ccfg *rest.Config) (compat.Server, error) {
	if !c.Ours {
		return nil, nil
	}
	return compat.NewDetector(compat.DetectorOptions{}).ForConfig(ccfg)
}

func childSync(ctx context.Context, cfg *rest.Config, f childFlags) (*syncResult, error) {
	c, nc, ccfg, cs, err := childClient(cfg, f.contender)
	if err != nil {
		return nil, err
	}
	server, err := detectServer(c, ccfg)
	if err != nil {
		return nil, err
	}
	base := retainedHeap()
	gc0 := gcCycles()
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	hs := startHeapSampler(time.Millisecond)
	begin := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	// -instances > 1 (apiserver cost): that many caches of the same namespace start at
	// once in this process, over one clientset, as a herd of informers would.
	ins := make([]*instance, max(1, f.instances))
	c = c.forProcess()
	for i := range ins {
		if ins[i], err = c.start(runCtx, ccfg, cs, server, f.namespace); err != nil {
			return nil, err
		}
	}
	in := ins[0]
	allSynced := func() bool {
		for _, in := range ins {
			if !in.synced() {
				return false
			}
		}
		return true
	}
	if err := poll.Until(ctx, 200*time.Microsecond, allSynced); err != nil {
		return nil, fmt.Errorf("%s: not synced after %s (%s): %w", c.Name, time.Since(begin).Round(time.Second), in.state(), err)
	}
	took := time.Since(begin)
	peak := hs.finish()
	if f.cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	gcs := gcCycles() - gc0
	n := in.size()
	for i, in := range ins {
		if k := in.size(); f.expect > 0 && k != f.expect {
			return nil, fmt.Errorf("%s: cache %d synced with %d objects, want %d", c.Name, i, k, f.expect)
		}
	}
	retained := retainedHeap()
	wire := nc.stats()
	stop()
	return &syncResult{
		Contender: c.Name, Instances: len(ins), Objects: n, SyncMs: ms(took), PeakHeap: peak, BaseHeap: base, RetainedHeap: retained,
		GCCycles: gcs, wireStats: wire,
	}, nil
}

// childDecode fetches the namespace's list once as raw bytes, then decodes
// it once with client-go's own codecs: the floor of any initial sync.
func childDecode(ctx context.Context, cfg *rest.Config, f childFlags) (*decodeResult, error) {
	ct := "application/json"
	if f.proto {
		ct = protobuf
	}
	ccfg := contender{}.clientConfig(cfg)
	cs, err := kubernetes.NewForConfig(ccfg)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	raw, err := cs.CoreV1().RESTClient().Get().Namespace(f.namespace).Resource("configmaps").
		SetHeader("Accept", ct).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	fetch := time.Since(t0)
	dec := scheme.Codecs.UniversalDeserializer()
	base := retainedHeap()
	gc0 := gcCycles()
	hs := startHeapSampler(200 * time.Microsecond)
	begin := time.Now()
	obj, _, err := dec.Decode(raw, nil, &corev1.ConfigMapList{})
	took := time.Since(begin)
	peak := hs.finish()
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*corev1.ConfigMapList)
	if !ok {
		return nil, fmt.Errorf("decoded %T", obj)
	}
	if f.expect > 0 && len(l.Items) != f.expect {
		return nil, fmt.Errorf("decoded %d objects, want %d", len(l.Items), f.expect)
	}
	r := &decodeResult{Proto: f.proto, Objects: len(l.Items), Bytes: len(raw), DecodeMs: ms(took), PeakHeap: peak,
		BaseHeap: base, FetchMs: ms(fetch), GCCycles: gcCycles() - gc0, Encoding: ct}
	raw = nil
	r.Retained = retainedHeap()
	runtime.KeepAlive(l)
	return r, nil
}

// childRecover starts f.instances caches, reports when all are synced,
// then waits for "go <marker>" on stdin, answers "armed", and reports how
// long until every cache has seen the marker object (which the parent
// creates after disrupting the watch or the apiserver).
func childRecover(ctx context.Context, cfg *rest.Config, f childFlags, out *json.Encoder) error {
	c, nc, ccfg, cs, err := childClient(cfg, f.contender)
	if err != nil {
		return err
	}
	server, err := detectServer(c, ccfg)
	if err != nil {
		return err
	}
	begin := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ins := make([]*instance, f.instances)
	c = c.forProcess()
	for i := range ins {
		if ins[i], err = c.start(runCtx, ccfg, cs, server, f.namespace); err != nil {
			return err
		}
	}
	allSynced := func() bool {
		for _, in := range ins {
			if !in.synced() {
				return false
			}
		}
		return true
	}
	if err := poll.Until(ctx, time.Millisecond, allSynced); err != nil {
		return fmt.Errorf("%s: %d caches not synced: %w", c.Name, f.instances, err)
	}
	initial := time.Since(begin)
	for i, in := range ins {
		if f.expect > 0 && in.size() != f.expect {
			return fmt.Errorf("%s: cache %d synced with %d objects, want %d", c.Name, i, in.size(), f.expect)
		}
	}
	if err := out.Encode(map[string]any{"event": "synced", "initial_sync_ms": ms(initial)}); err != nil {
		return err
	}
	line, err := readLine(ctx, os.Stdin)
	if err != nil {
		return err
	}
	marker, ok := strings.CutPrefix(line, "go ")
	if !ok {
		return fmt.Errorf("expected 'go <marker>', got %q", line)
	}
	nc.reset()
	t0 := time.Now()
	for _, in := range ins {
		in.setMarker(marker)
	}
	if err := out.Encode(map[string]any{"event": "armed"}); err != nil {
		return err
	}
	for i, in := range ins {
		select {
		case <-in.marker:
		case <-ctx.Done():
			return fmt.Errorf("%s: cache %d never saw marker %s: %w", c.Name, i, marker, ctx.Err())
		}
	}
	took := time.Since(t0)
	done := time.Now()
	wire := nc.stats()
	stop()
	return out.Encode(&recoveryResult{
		Contender: c.Name, Instances: f.instances, InitialMs: ms(initial), RecoverMs: ms(took), DoneUnixNs: done.UnixNano(),
		wireStats: wire,
	})
}

func readLine(ctx context.Context, f *os.File) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := bufio.NewReader(f).ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
