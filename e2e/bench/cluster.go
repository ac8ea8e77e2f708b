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
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/steadywatch/steadywatch/e2e/harness"
)

// bench is the shared real control plane and the objects in it.
type bench struct {
	c       config
	cluster *harness.Cluster
	cs      kubernetes.Interface
	exe     string
	dir     string
	// populated remembers namespaces already filled (P2 reuses P1's).
	populated map[string]int
}

func startBench(ctx context.Context, c config) (*bench, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf("starting a real kube-apiserver (harness, watch cache on)")
	cl, err := harness.Start(ctx, harness.Options{Progress: os.Stderr})
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
	b := &bench{c: c, cluster: cl, cs: cs, exe: exe, dir: cl.Dir(), populated: map[string]int{}}
	return b, nil
}

func (b *bench) stop() {
	if err := b.cluster.Stop(); err != nil {
		logf("stopping the cluster: %v", err)
	}
}

// populate creates n ConfigMaps of about 2.4 KB each in ns (once).
func (b *bench) populate(ctx context.Context, ns string, n int) error {
	if b.populated[ns] == n {
		return nil
	}
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	begin := time.Now()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	val := func(k int) string {
		var sb strings.Builder
		for range k {
			sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	jobs := make(chan *corev1.ConfigMap)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cm := range jobs {
				if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("cm-%06d", i),
				Labels: map[string]string{"app": "bench", "shard": strconv.Itoa(i % 16)},
			},
			Data: map[string]string{
				"config.yaml": val(1800),
				"owner":       val(40),
				"checksum":    val(64),
				"notes":       val(300),
			},
		}
		select {
		case jobs <- cm:
		case err := <-errs:
			close(jobs)
			wg.Wait()
			return err
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	b.populated[ns] = n
	logf("created %d ConfigMaps in %s in %s", n, ns, time.Since(begin).Round(time.Millisecond))
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
	text, err := b.cluster.APIServers()[0].Metrics(ctx)
	if err != nil {
		return nil, err
	}
	return parseCounters(text), nil
}

// counters are apiserver metrics about configmaps, summed by the label that
// matters: e.g. "apiserver_request_total{verb=LIST}", "etcd_requests_total{operation=list}".
type counters map[string]float64

var counterLabel = map[string]string{
	"apiserver_request_total":                      "verb",
	"etcd_requests_total":                          "operation",
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

func parseCounters(text string) counters {
	out := counters{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' || !strings.Contains(line, `resource="configmaps"`) {
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

// etcdLists is the number of lists that reached etcd.
func (c counters) etcdLists() float64 { return c["etcd_requests_total{operation=list}"] }

var errNoFault = errors.New("the injected fault did not fire")
