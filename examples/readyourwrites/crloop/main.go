// Command crloop runs a controller's write-then-read loop with
// controller-runtime and counts the reads older than the write just made:
// those of the manager's plain cached client (mgr.GetClient()) beside
// those of crclient (examples/readyourwrites/crclient) over the same
// cache. The manager's informers are steadywatch's
// (cache.Options.NewInformer = reflector.NewInformerFor(cfg)).
//
// Each cycle reads the ConfigMap -name through crclient, updates it through
// crclient, then reads it at once, as a reconcile does, from the plain
// client and through crclient (timed: the added wait). At the end it prints
// one line and exits 0 (1 on an error):
//
//	crloop: cycles=200 plain-stale=71 crclient-stale=0 fallbacks=0 wait-p50=0.4ms wait-p99=3.1ms
//
// e2e/examples runs it against real kube-apiservers behind a fault proxy
// that holds watch events back:
//
//	cd e2e && go run ./cmd/devcluster              # prints KUBECONFIG=...
//	cd examples && KUBECONFIG=... go run ./readyourwrites/crloop -namespace default
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadywatch/steadywatch/examples/readyourwrites/crclient"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

func main() {
	ns := flag.String("namespace", "default", "namespace of the ConfigMap")
	name := flag.String("name", "crloop", "name of the ConfigMap the loop writes")
	cycles := flag.Int("cycles", 100, "write-then-read cycles")
	bound := flag.Duration("bound", 0, "crclient's Bound (0: its default)")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	ctrl.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := run(ctx, *ns, *name, *cycles, *bound); err != nil {
		fmt.Fprintln(os.Stderr, "crloop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, ns, name string, cycles int, bound time.Duration) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			NewInformer:       reflector.NewInformerFor(cfg),
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mgrErr error
	wg.Go(func() { mgrErr = mgr.Start(runCtx) })
	defer func() { cancel(); wg.Wait() }()

	// Start the ConfigMap informer and wait for it, before the first cycle.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("the cache did not sync")
	}
	fmt.Fprintln(os.Stderr, "crloop: cache synced")

	fb := &fallbacks{Recorder: metrics.Nop()}
	ryw := crclient.New(mgr, crclient.Options{Bound: bound, Metrics: fb})
	plain := mgr.GetClient()
	key := client.ObjectKey{Namespace: ns, Name: name}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := ryw.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintln(os.Stderr, "crloop: created", key)

	var plainStale, rywStale int
	waits := make([]time.Duration, 0, cycles)
	for i := range cycles {
		cur := &corev1.ConfigMap{}
		if err := ryw.Get(ctx, key, cur); err != nil {
			return fmt.Errorf("cycle %d: get: %w", i, err)
		}
		cur.Data = map[string]string{"n": strconv.Itoa(i)}
		if err := ryw.Update(ctx, cur); err != nil {
			return fmt.Errorf("cycle %d: update: %w", i, err)
		}
		written := cur.ResourceVersion

		got := &corev1.ConfigMap{}
		if err := plain.Get(ctx, key, got); err != nil {
			return fmt.Errorf("cycle %d: plain get: %w", i, err)
		}
		if stale, err := older(got.ResourceVersion, written); err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		} else if stale {
			plainStale++
		}

		begin := time.Now()
		if err := ryw.Get(ctx, key, got); err != nil {
			return fmt.Errorf("cycle %d: crclient get: %w", i, err)
		}
		waits = append(waits, time.Since(begin))
		if stale, err := older(got.ResourceVersion, written); err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		} else if stale {
			rywStale++
		}
	}
	fmt.Printf("crloop: cycles=%d plain-stale=%d crclient-stale=%d fallbacks=%d wait-p50=%s wait-p99=%s\n",
		cycles, plainStale, rywStale, fb.count(), pct(waits, 50), pct(waits, 99))
	cancel()
	wg.Wait()
	if mgrErr != nil && !errors.Is(mgrErr, context.Canceled) {
		return fmt.Errorf("manager: %w", mgrErr)
	}
	return nil
}

// older reports whether read is older than written, compared as KEP-5504
// defines it.
func older(read, written string) (bool, error) {
	c, err := resourceversion.CompareResourceVersion(read, written)
	if err != nil {
		return false, fmt.Errorf("compare resourceVersions %q and %q: %w", read, written, err)
	}
	return c < 0, nil
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(time.Microsecond)
}

// fallbacks counts the reads crclient answered from the server.
type fallbacks struct {
	metrics.Recorder
	mu sync.Mutex
	n  int
}

func (f *fallbacks) ReadFallback(name, reason string) {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
	f.Recorder.ReadFallback(name, reason)
}

func (f *fallbacks) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
