// Command operator is a small controller-runtime operator. Its reconciler
// keeps, in one namespace, a status ConfigMap (-status-name, default
// "label-index") whose data maps the name of every other ConfigMap carrying
// the label -label (default "team") to that label's value. It creates the
// status ConfigMap, updates it when a label changes, and drops entries of
// deleted ConfigMaps. Each reconcile that changes something prints one line
// to stdout:
//
//	reconciled demo/label-index: 3 entries (updated)
//
// It exists twice: examples/operator runs every informer of the manager on
// steadywatch, examples/stock/operator is the same program without it. The
// two files differ in exactly one added line (marked "adopts steadywatch")
// and the import of the steadywatch package it names; e2e/examples asserts
// that with diff and runs both against real apiservers:
//
//	 cacheOpts := cache.Options{DefaultNamespaces: map[string]cache.Config{c.namespace: {}}}
//	+cacheOpts.NewInformer = reflector.NewInformerFor(cfg)
//
// reflector.NewInformerFor(cfg) has exactly the signature of the cache's
// NewInformer hook (that of client-go's cache.NewSharedIndexInformer) and
// needs only the manager's rest.Config: each informer is steadywatch's own,
// whose lists and watches are sent by steadywatch's own client built from
// cfg (no retry of client-go's own inside it, a Retry-After capped, lists
// decoded item by item as they arrive), once it has checked that this
// client lists what the ListWatch controller-runtime built lists (its
// namespace, of one or several in DefaultNamespaces); where it cannot (a
// selector in ByObject), that informer lists through controller-runtime's
// ListWatch, logged and counted. Every list runs with the KEP-2523
// fallbacks, and a streaming list is used only where the server really
// streams. client-go v0.37's reflector (inside every controller-runtime
// informer) opens its initial sync as a streaming list by default, which a
// v1.18 apiserver ignores: without the line this operator never starts
// against a v1.18.19 apiserver; with it, it does.
// reflector.NewInformerFor(cfg, lister.Options{Server: ..., Metrics: ...})
// is the same hook with options.
//
//	cd e2e && go run ./cmd/devcluster --server legacy   # prints KUBECONFIG=...
//	cd examples && KUBECONFIG=... go run ./operator -namespace default
//	kubectl create configmap a && kubectl label configmap a team=blue
//	kubectl get configmap label-index -o yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadywatch/steadywatch/reflector"
)

// LabelIndex is the reconciler: it keeps the status ConfigMap StatusName in
// Namespace equal to {name: labels[Label]} over the namespace's other
// ConfigMaps that carry Label.
type LabelIndex struct {
	Client     client.Client // reads from the manager's (steadywatch-fed) cache, writes to the apiserver
	Namespace  string
	Label      string
	StatusName string
	Out        io.Writer

	mu sync.Mutex // serializes Out
}

// Reconcile implements reconcile.Reconciler. Every request in the namespace
// leads to the same level-triggered computation, so the result does not
// depend on which event came first.
func (r *LabelIndex) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace != r.Namespace {
		return reconcile.Result{}, nil
	}
	var list corev1.ConfigMapList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list ConfigMaps: %w", err)
	}
	want := map[string]string{}
	for _, cm := range list.Items {
		if v, ok := cm.Labels[r.Label]; ok && cm.Name != r.StatusName && cm.DeletionTimestamp == nil {
			want[cm.Name] = v
		}
	}

	var status corev1.ConfigMap
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.StatusName}, &status)
	switch {
	case apierrors.IsNotFound(err):
		status = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.StatusName,
				Annotations: map[string]string{"steadywatch.example/indexes-label": r.Label}},
			Data: want,
		}
		if err := r.Client.Create(ctx, &status); err != nil {
			return reconcile.Result{}, fmt.Errorf("create %s: %w", r.StatusName, err)
		}
		r.report(len(want), "created", want)
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("get %s: %w", r.StatusName, err)
	}
	if maps.Equal(status.Data, want) {
		return reconcile.Result{}, nil
	}
	status.Data = want
	if err := r.Client.Update(ctx, &status); err != nil {
		// A conflict means the cache was behind our own last write: requeue.
		return reconcile.Result{}, fmt.Errorf("update %s: %w", r.StatusName, err)
	}
	r.report(len(want), "updated", want)
	return reconcile.Result{}, nil
}

func (r *LabelIndex) report(n int, verb string, data map[string]string) {
	keys := make([]string, 0, len(data))
	for k, v := range data {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.Out, "reconciled %s/%s: %d entries (%s) [%s]\n", r.Namespace, r.StatusName, n, verb, strings.Join(keys, " "))
}

type config struct {
	namespace   string
	label       string
	statusName  string
	metricsAddr string
	syncTimeout time.Duration
}

func main() {
	var c config
	// --kubeconfig is registered by controller-runtime (ctrl.GetConfig reads it, then KUBECONFIG).
	flag.StringVar(&c.namespace, "namespace", "default", "the namespace the operator manages")
	flag.StringVar(&c.label, "label", "team", "the label copied into the status ConfigMap")
	flag.StringVar(&c.statusName, "status-name", "label-index", "name of the status ConfigMap")
	flag.StringVar(&c.metricsAddr, "metrics-addr", "0", "controller-runtime metrics address (\"0\" = off; e.g. 127.0.0.1:8080)")
	flag.DurationVar(&c.syncTimeout, "sync-timeout", time.Minute, "fail if the manager's caches have not synced within this")
	flag.Parse()

	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	ctrl.SetLogger(logger) // controller-runtime's package-level logger (it warns when unset)
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "operator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cacheOpts := cache.Options{DefaultNamespaces: map[string]cache.Config{c.namespace: {}}}
	cacheOpts.NewInformer = reflector.NewInformerFor(cfg) // adopts steadywatch
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := &LabelIndex{Client: mgr.GetClient(), Namespace: c.namespace, Label: c.label, StatusName: c.statusName, Out: out}
	if err := ctrl.NewControllerManagedBy(mgr).Named("label-index").For(&corev1.ConfigMap{}).Complete(r); err != nil {
		return fmt.Errorf("controller: %w", err)
	}

	// Create the ConfigMap informer now, so that WaitForCacheSync below covers it.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		return fmt.Errorf("informer: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()

	syncCtx, syncCancel := context.WithTimeout(ctx, c.syncTimeout)
	defer syncCancel()
	start := time.Now()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		interrupted := ctx.Err() != nil && syncCtx.Err() == nil
		cancel()
		// controller-runtime's Start waits for its caches to report ready
		// before it honours the cancellation; caches that never sync (stock
		// informers on v1.18) make it hang, so bound the wait.
		select {
		case <-errc:
		case <-time.After(10 * time.Second):
			fmt.Fprintln(os.Stderr, "operator: the manager did not stop within 10s of cancellation (its caches never synced); exiting anyway")
		}
		if interrupted {
			return nil
		}
		return fmt.Errorf("caches not synced within %v", c.syncTimeout)
	}
	fmt.Fprintf(out, "caches synced in %v\n", time.Since(start).Round(time.Millisecond))
	if err := <-errc; err != nil {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}
