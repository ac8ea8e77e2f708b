package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
)

// bench is the shared real control plane and the objects in it.
type bench struct {
	c       config
	spec    serverSpec
	cluster *harness.Cluster
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	exe     string
	dir     string
	// populated remembers namespaces already filled (the recovery reuses
	// the initial sync's).
	populated map[string]int
	// failed: contenders that did not sync on this server (initial sync), by name.
	failed map[string]string
	// costBaseHeap: the lowest heap-in-use baseline an apiserver cost run
	// on this server has started from (0 before the first); see costOnce.
	costBaseHeap float64
}

// serverSpec is one entry of -servers: a kube-apiserver release and how it
// is started ("v1.37.2", "v1.37.2/nocache" = --watch-cache=false).
type serverSpec struct {
	Spec    string `json:"spec"`
	Version string `json:"version"`
	NoCache bool   `json:"no_cache,omitempty"`
}

func parseServers(s string) ([]serverSpec, error) {
	return parseReleases(s, "-servers", "nocache", "only /nocache", func(f string) string { return fmt.Sprintf("server %q", f) },
		func(f, v string, noCache bool) serverSpec { return serverSpec{Spec: f, Version: v, NoCache: noCache} })
}

// parseReleases parses s, a comma-separated list of kube-apiserver releases
// ("v1.37.2"), each with option ("v1.37.2/<option>") or not, into spec's
// values; empty entries are skipped. Errors name an entry with entry, tell
// what option is with optionHelp, and name the flag list when s holds no
// entry.
func parseReleases[T any](s, list, option, optionHelp string, entry func(f string) string, spec func(f, version string, opt bool) T) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, opt, _ := strings.Cut(f, "/")
		if opt != "" && opt != option {
			return nil, fmt.Errorf("%s: unknown option %q (%s)", entry(f), opt, optionHelp)
		}
		if !strings.HasPrefix(v, "v1.") {
			return nil, fmt.Errorf("%s: want a release like v1.37.2", entry(f))
		}
		out = append(out, spec(f, v, opt == option))
	}
	if len(out) == 0 {
		return nil, errors.New(list + " is empty")
	}
	return out, nil
}

func startBench(ctx context.Context, c config, sp serverSpec) (*bench, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(build.BinaryPath(build.CacheDir(), sp.Version)); err != nil {
		logf("kube-apiserver %s is not in the cache (%s): build.Ensure builds it or waits for a running build", sp.Version, build.CacheDir())
	}
	logf("starting a real kube-apiserver %s (harness, watch cache %s)", sp.Version, map[bool]string{true: "off", false: "on"}[sp.NoCache])
	// --profiling=true (kube-apiserver's own default; the harness turns it
	// off): the apiserver cost forces a GC through /debug/pprof/heap?gc=1 before each
	// baseline. It costs nothing until that endpoint is called.
	cl, err := harness.Start(ctx, harness.Options{Version: sp.Version, DisableWatchCache: sp.NoCache, Progress: os.Stderr,
		ExtraArgs: []string{"--profiling=true"}})
	if err != nil {
		return nil, err
	}
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = cl.Stop()
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		_ = cl.Stop()
		return nil, err
	}
	b := &bench{c: c, spec: sp, cluster: cl, cs: cs, dyn: dyn, exe: exe, dir: cl.Dir(), populated: map[string]int{}, failed: map[string]string{}}
	return b, nil
}

func (b *bench) stop() {
	if err := b.cluster.Stop(); err != nil {
		logf("stopping the cluster: %v", err)
	}
}

// createAll runs create(i) for i in [0,n) on a bounded pool of workers
// (the bench's client has no QPS limit), logging progress every 10 s.
func createAll(ctx context.Context, what string, n int, create func(ctx context.Context, i int) error) error {
	begin := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range createWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := create(ctx, i); err != nil && !apierrors.IsAlreadyExists(err) {
					once.Do(func() { firstErr = fmt.Errorf("creating %s %d: %w", what, i, err); cancel() })
					continue
				}
				done.Add(1)
			}
		}()
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
feed:
	for i := 0; i < n; i++ {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		case <-tick.C:
			i--
			logf("  created %d/%d %s (%.0f/s)", done.Load(), n, what, float64(done.Load())/time.Since(begin).Seconds())
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	el := time.Since(begin)
	logf("created %d %s in %s (%.0f/s)", n, what, el.Round(time.Millisecond), float64(n)/el.Seconds())
	return nil
}

// createWorkers bounds concurrent creates: enough to keep the apiserver and
// etcd busy on 2 cores without piling up requests.
const createWorkers = 16

func (b *bench) ensureNamespace(ctx context.Context, ns string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randString returns k pseudo-random characters (the same ones for the same rng state).
func randString(rng *rand.Rand, k int) string {
	buf := make([]byte, k)
	for i := range buf {
		buf[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(buf)
}

// benchData is the payload of an initial-sync object: about 2.4 KB per object as
// stored (protobuf), with metadata and managedFields.
func benchData(rng *rand.Rand) map[string]string {
	return map[string]string{
		"config.yaml": randString(rng, 1500),
		"owner":       randString(rng, 40),
		"checksum":    randString(rng, 64),
		"notes":       randString(rng, 300),
	}
}

// populate creates n ConfigMaps of about 2.4 KB each in ns (once).
func (b *bench) populate(ctx context.Context, ns string, n int) error {
	return b.populateCM(ctx, ns, n, 0)
}

// populateCM creates n ConfigMaps in ns (once): the initial sync's shape (about 2.4 KB)
// when blobKB is 0, else one data value of blobKB KiB (apiserver cost).
func (b *bench) populateCM(ctx context.Context, ns string, n, blobKB int) error {
	if b.populated[ns] == n {
		return nil
	}
	if err := b.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	err := createAll(ctx, "ConfigMaps in "+ns, n, func(ctx context.Context, i int) error {
		mu.Lock()
		var data map[string]string
		if blobKB > 0 {
			data = map[string]string{"blob": randString(rng, blobKB<<10)}
		} else {
			data = benchData(rng)
		}
		mu.Unlock()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("cm-%06d", i),
				Labels: map[string]string{"app": "bench", "shard": strconv.Itoa(i % 16)},
			},
			Data: data,
		}
		_, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	b.populated[ns] = n
	return nil
}

// installCRD installs the bench's CRD (namespaced, one version, a
// structural schema whose spec keeps unknown fields) and waits until it is
// established and served.
func (b *bench) installCRD(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crGVR.Resource + "." + crGVR.Group},
		"spec": map[string]any{
			"group": crGVR.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": crGVR.Resource, "singular": "benchitem", "kind": crKind, "listKind": crKind + "List"},
			"versions": []any{map[string]any{
				"name": crGVR.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	}}
	crds := b.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the CRD: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := poll.Until(wctx, 200*time.Millisecond, func() bool {
		_, err := b.dyn.Resource(crGVR).Namespace("default").List(wctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("the CRD %s is not served: %w", crGVR, err)
	}
	return nil
}

const crKind = "BenchItem"

// populateCR creates n custom resources of about 2.4 KB each in ns (once).
func (b *bench) populateCR(ctx context.Context, ns string, n int) error {
	key := "cr/" + ns
	if b.populated[key] == n {
		return nil
	}
	if err := b.installCRD(ctx); err != nil {
		return err
	}
	if err := b.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(2, uint64(n)))
	ri := b.dyn.Resource(crGVR).Namespace(ns)
	err := createAll(ctx, "custom resources in "+ns, n, func(ctx context.Context, i int) error {
		mu.Lock()
		data := benchData(rng)
		mu.Unlock()
		// JSON repeats apiVersion and kind in every item and nests the
		// data under spec: a shorter value keeps the object at ~2.4 KB.
		data["config.yaml"] = data["config.yaml"][:1380]
		spec := map[string]any{}
		for k, v := range data {
			spec[k] = v
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crGVR.GroupVersion().String(),
			"kind":       crKind,
			"metadata": map[string]any{
				"name":   fmt.Sprintf("cr-%06d", i),
				"labels": map[string]any{"app": "bench", "shard": strconv.Itoa(i % 16)},
			},
			"spec": spec,
		}}
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	b.populated[key] = n
	return nil
}

func (b *bench) createMarker(ctx context.Context, ns, name string) error {
	_, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

func (b *bench) deleteMarker(ctx context.Context, ns, name string) error {
	err := b.cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// writeKubeconfig writes a kubeconfig for cfg (e.g. a fault proxy's) into
// the cluster's directory, readable only by us.
func (b *bench) writeKubeconfig(cfg *rest.Config, name string) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["bench"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	kc.CurrentContext = "bench"
	path := filepath.Join(b.dir, name)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o600)
}

// child is a running contender process.
type child struct {
	cmd    *exec.Cmd
	stdin  *bufio.Writer
	in     interface{ Close() error }
	lines  chan []byte
	stderr *strings.Builder
	done   chan error
}

func (b *bench) spawn(ctx context.Context, env []string, args ...string) (*child, error) {
	cmd := exec.CommandContext(ctx, b.exe, append([]string{"child"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, stdin: bufio.NewWriter(stdin), in: stdin, lines: make(chan []byte, 16), stderr: &stderr, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			ch.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(ch.lines)
		ch.done <- cmd.Wait()
	}()
	return ch, nil
}

// next decodes the child's next JSON line into v.
func (ch *child) next(ctx context.Context, v any) error {
	select {
	case l, ok := <-ch.lines:
		if !ok {
			err := <-ch.done
			return fmt.Errorf("child exited (%v): %s", err, tail(ch.stderr.String(), 2000))
		}
		return json.Unmarshal(l, v)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ch *child) send(s string) error {
	if _, err := ch.stdin.WriteString(s + "\n"); err != nil {
		return err
	}
	return ch.stdin.Flush()
}

// wait waits for the child to exit.
func (ch *child) wait() error {
	_ = ch.in.Close()
	for range ch.lines {
	}
	if err := <-ch.done; err != nil {
		return fmt.Errorf("child: %w: %s", err, tail(ch.stderr.String(), 2000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serverMetrics reads the apiserver's counters about configmaps.
func (b *bench) serverMetrics(ctx context.Context) (counters, error) {
	return b.serverMetricsFor(ctx, "configmaps")
}

// serverMetricsFor reads the apiserver's counters about one resource.
func (b *bench) serverMetricsFor(ctx context.Context, resource string) (counters, error) {
	text, err := b.cluster.APIServers()[0].Metrics(ctx)
	if err != nil {
		return nil, err
	}
	return parseCountersFor(text, resource), nil
}

// counters are apiserver metrics about configmaps, summed by the label that
// matters: e.g. "apiserver_request_total{verb=LIST}", "etcd_requests_total{operation=list}".
type counters map[string]float64

var counterLabel = map[string]string{
	"apiserver_request_total":                      "verb",
	"etcd_requests_total":                          "operation",
	"etcd_request_duration_seconds_count":          "operation", // the only per-operation etcd count of old servers (1.18: label type=)
	"apiserver_cache_list_total":                   "",
	"apiserver_storage_list_total":                 "",
	"apiserver_storage_list_fetched_objects_total": "",
	"apiserver_watch_cache_consistent_read_total":  "fallback",
	"apiserver_response_sizes_sum":                 "verb",
	"apiserver_watch_events_sizes_sum":             "",
	"apiserver_watch_events_total":                 "",
	"apiserver_watch_list_duration_seconds_count":  "",
	"apiserver_request_duration_seconds_sum":       "verb",
	"apiserver_watch_cache_initializations_total":  "",
}

// etcdTypeNames: old servers (1.18) label etcd_request_duration_seconds by
// the Go type of the object or of the list's items (List: "*[]core.ConfigMap"), not by resource.
var etcdTypeNames = map[string][]string{
	"configmaps":   {"*core.ConfigMap", "*[]core.ConfigMap", "*core.ConfigMapList"},
	crGVR.Resource: {"*unstructured.Unstructured", "*[]unstructured.Unstructured", "*unstructured.UnstructuredList"},
}

func parseCounters(text string) counters { return parseCountersFor(text, "configmaps") }

func parseCountersFor(text, resource string) counters {
	out := counters{}
	match := []string{`resource="` + resource + `"`, `type="` + resource + `"`}
	for _, t := range etcdTypeNames[resource] {
		match = append(match, `type="`+t+`"`)
	}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' || !slices.ContainsFunc(match, func(m string) bool { return strings.Contains(line, m) }) {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series, val := line[:sp], line[sp+1:]
		name, labels, _ := strings.Cut(series, "{")
		lbl, ok := counterLabel[name]
		if !ok {
			continue
		}
		if strings.Contains(labels, `subresource="`) && !strings.Contains(labels, `subresource=""`) {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		key := name
		if lbl != "" {
			key += "{" + lbl + "=" + labelValue(labels, lbl) + "}"
		}
		out[key] += v
	}
	return out
}

// processMetrics are the apiserver process's own gauges and counters.
type processMetrics struct {
	HeapInuse float64 // go_memstats_heap_inuse_bytes
	RSS       float64 // process_resident_memory_bytes
	CPU       float64 // process_cpu_seconds_total
	Alloc     float64 // go_memstats_alloc_bytes_total
	GCCycles  float64 // go_gc_duration_seconds_count: garbage collections completed
}

func parseProcessMetrics(text string) processMetrics {
	var p processMetrics
	for _, line := range strings.Split(text, "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "go_memstats_heap_inuse_bytes":
			dst = &p.HeapInuse
		case "process_resident_memory_bytes":
			dst = &p.RSS
		case "process_cpu_seconds_total":
			dst = &p.CPU
		case "go_memstats_alloc_bytes_total":
			dst = &p.Alloc
		case "go_gc_duration_seconds_count":
			dst = &p.GCCycles
		default:
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			*dst = v
		}
	}
	return p
}

func labelValue(labels, name string) string {
	_, after, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// minus returns c - prev for every key (keys only in c are kept as is).
func (c counters) minus(prev counters) counters {
	out := counters{}
	for k, v := range c {
		if d := v - prev[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// etcdLists is the number of lists that reached etcd (servers before
// etcd_requests_total counted them only in etcd_request_duration_seconds).
func (c counters) etcdLists() float64 {
	if v, ok := c["etcd_requests_total{operation=list}"]; ok {
		return v
	}
	return c["etcd_request_duration_seconds_count{operation=list}"]
}

var errNoFault = errors.New("the injected fault did not fire")
