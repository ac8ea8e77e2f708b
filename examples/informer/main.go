// Command informer is an ordinary client-go SharedInformerFactory program:
// a ConfigMap informer limited to one namespace and a label selector (the
// factory's WithNamespace and WithTweakListOptions), with an event handler and
// the factory's typed Lister, and a local Prometheus /metrics endpoint.
//
// It exists twice: examples/informer runs on steadywatch, examples/stock/informer
// is the same program without it. The two files differ in exactly one line
// (marked "adopts steadywatch": the factory's constructor) and the imports
// of the steadywatch packages it names; e2e/examples asserts that with diff
// and runs both against real apiservers:
//
//	-factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(c.namespace), informers.WithTweakListOptions(tweak))
//	+factory := reflector.NewSharedInformerFactoryWithOptions(cs, 0, lister.Options{Metrics: swprom.New(reg, "")}, informers.WithNamespace(c.namespace), informers.WithTweakListOptions(tweak))
//	 configMaps := factory.Core().V1().ConfigMaps() // Informer() and Lister() run on steadywatch
//
// reflector.NewSharedInformerFactoryWithOptions returns a client-go
// SharedInformerFactory whose typed informers are steadywatch's own
// SharedIndexInformer (client-go's handler semantics), filled by
// reflector.New from the clientset's typed client, in the namespace and
// with the selectors the factory's own options give (nothing is repeated),
// so every list runs with the KEP-2523 fallbacks, and a streaming list is used only where the server
// really streams (a stock v0.37 informer never syncs against a v1.18
// apiserver; this one does). What steadywatch did is on /metrics
// (steadywatch_lists_total, steadywatch_fallbacks_total, ...).
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/lister"
	swprom "github.com/steadywatch/steadywatch/metrics/prometheus"
	"github.com/steadywatch/steadywatch/reflector"
)

type config struct {
	kubeconfig  string
	namespace   string
	selector    string
	metricsAddr string
	syncTimeout time.Duration
	runFor      time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.namespace, "namespace", "", "namespace to watch (\"\" = all)")
	flag.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:9464", "listen address of the /metrics endpoint (loopback; port 0 = any free port)")
	flag.StringVar(&c.selector, "selector", "", "label selector of the ConfigMaps to inform about (\"\" = all)")
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
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	// Metrics on a registry of our own, served on loopback.
	reg := prometheus.NewRegistry()
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

	tweak := func(o *metav1.ListOptions) { o.LabelSelector = c.selector }
	factory := reflector.NewSharedInformerFactoryWithOptions(cs, 0, lister.Options{Metrics: swprom.New(reg, "")}, informers.WithNamespace(c.namespace), informers.WithTweakListOptions(tweak)) // adopts steadywatch
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
	// The factory's typed Lister reads the informer's indexer.
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

// key is the namespace/name of a ConfigMap event's object.
func key(o any) string {
	switch o := o.(type) {
	case *corev1.ConfigMap:
		return o.Namespace + "/" + o.Name
	case cache.DeletedFinalStateUnknown:
		return o.Key
	}
	return fmt.Sprintf("%T", o)
}
