// Command informer is an ordinary client-go SharedInformerFactory program
// (a ConfigMap informer with an event handler and the typed Lister) that
// adopts steadywatch with one added line: before asking the factory for its
// ConfigMap informer, register steadywatch's with InformerFor. Everything else
// — the factory, Start, WaitForCacheSync, event handlers, the typed Lister,
// transforms — is client-go's own and unchanged:
//
//	 factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
//	+factory.InformerFor(&corev1.ConfigMap{}, steadywatchConfigMaps(ns, lister.Options{Server: server, Metrics: recorder}))
//	 configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() now use steadywatch
//
// steadywatchConfigMaps (below, ten lines) builds client-go's own
// SharedIndexInformer over lister.NewListerWatcher, so every list the
// informer's reflector sends runs with the KEP-2523 fallbacks, and a streaming
// list is used only where the server really streams (a stock v0.37 informer
// never syncs against a v1.18 apiserver; this one does). What steadywatch did
// is exported on a local Prometheus /metrics endpoint
// (steadywatch_lists_total, steadywatch_fallbacks_total, ...).
//
// Run it against any cluster; -stock runs the same program without the added
// line, for comparison:
//
//	cd e2e && go run ./cmd/devcluster --server legacy   # prints KUBECONFIG=...
//	cd examples && KUBECONFIG=... go run ./informer -namespace default
//	curl -s http://127.0.0.1:9464/metrics | grep steadywatch_
//
// It prints one line per event, "synced N ConfigMaps in D" once synced, and
// runs until interrupted (or for -for).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
	swprom "github.com/steadywatch/steadywatch/metrics/prometheus"
)

// steadywatchConfigMaps is a NewInformerFunc for a SharedInformerFactory:
// client-go's own ConfigMap informer (with the namespace index the factory's
// typed Lister needs) over steadywatch's ListerWatcher.
func steadywatchConfigMaps(ns string, o lister.Options) func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
	return func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		cms := cs.CoreV1().ConfigMaps(ns)
		lw := lister.NewListerWatcher(lister.FromFuncs(cms.List, cms.Watch), o)
		return cache.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		})
	}
}

type config struct {
	kubeconfig  string
	namespace   string
	metricsAddr string
	stock       bool
	syncTimeout time.Duration
	runFor      time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.namespace, "namespace", "", "namespace to watch (\"\" = all)")
	flag.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:9464", "listen address of the /metrics endpoint (loopback; port 0 = any free port)")
	flag.BoolVar(&c.stock, "stock", false, "use the factory's stock ConfigMap informer (the program without steadywatch's line)")
	flag.DurationVar(&c.syncTimeout, "sync-timeout", time.Minute, "give up if the informer has not synced within this")
	flag.DurationVar(&c.runFor, "for", 0, "exit after this long once synced (0 = until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) error {
	if c.kubeconfig == "" {
		return errors.New("no kubeconfig: set -kubeconfig or KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	// No hidden retries: every list and watch on the wire is one steadywatch
	// counts, waits for and budgets (client-go's REST client would retry each
	// 429/5xx with Retry-After up to 10 times inside one call).
	cs, err := kubernetes.NewForConfig(fallback.NoHiddenRetries(cfg))
	if err != nil {
		return err
	}

	// Metrics: steadywatch's collectors on a registry of our own, served on loopback.
	reg := prometheus.NewRegistry()
	recorder := swprom.New(reg, "")
	ln, err := net.Listen("tcp", c.metricsAddr)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(out, "metrics: http://%s/metrics\n", ln.Addr())

	// What steadywatch knows about this server (from /version, then from behaviour).
	server, err := compat.NewDetector(compat.DetectorOptions{Metrics: recorder}).ForConfig(cfg)
	if err != nil {
		return err
	}

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(c.namespace))
	if !c.stock {
		// The one line that adopts steadywatch.
		factory.InformerFor(&corev1.ConfigMap{}, steadywatchConfigMaps(c.namespace, lister.Options{Server: server, Metrics: recorder, Name: "v1/configmaps"}))
		fmt.Fprintf(out, "informer: steadywatch (server: %s)\n", server.Capabilities(ctx))
	} else {
		fmt.Fprintln(out, "informer: stock client-go")
	}
	configMaps := factory.Core().V1().ConfigMaps()
	inf := configMaps.Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { fmt.Fprintf(out, "event ADD    %s\n", key(o)) },
		UpdateFunc: func(old, o any) {
			fmt.Fprintf(out, "event UPDATE %s\n", key(o))
		},
		DeleteFunc: func(o any) { fmt.Fprintf(out, "event DELETE %s\n", key(o)) },
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown() // waits for the informers' goroutines after cancel
	defer cancel()

	start := time.Now()
	syncCtx, syncCancel := context.WithTimeout(ctx, c.syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		if ctx.Err() != nil {
			return nil // interrupted
		}
		return fmt.Errorf("not synced within %v", c.syncTimeout)
	}
	// The factory's typed Lister reads the same (steadywatch-filled) indexer.
	cms, err := configMaps.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "synced %d ConfigMaps in %v\n", len(cms), time.Since(start).Round(time.Millisecond))

	var done <-chan time.Time
	if c.runFor > 0 {
		done = time.After(c.runFor)
	}
	select {
	case <-ctx.Done():
	case <-done:
	}
	fmt.Fprintln(out, "stopping")
	return nil
}

func key(o any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o)
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	return k
}
