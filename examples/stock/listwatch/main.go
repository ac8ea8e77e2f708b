// Command listwatch is the smallest client-go informer program: a ConfigMap
// informer built with cache.NewSharedIndexInformer over the ListerWatcher
// cache.NewListWatchFromClient makes from the clientset's REST client. It
// prints one line per event and "synced N ConfigMaps in D" once synced, and
// runs until interrupted (or for -for).
//
// It exists twice: examples/listwatch runs on steadywatch,
// examples/stock/listwatch is the same program without it. The two files
// differ in exactly one added line (marked "adopts steadywatch") and the
// import of the steadywatch package it names; e2e/examples asserts that with
// diff and runs both against real apiservers:
//
//	 var lw cache.ListerWatcher = cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", c.namespace, fields.Everything())
//	+lw = lister.Wrap(lw, lister.Options{Resource: corev1.SchemeGroupVersion.WithResource("configmaps")})
//	 inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
//
// lister.Wrap puts steadywatch's lister.ListerWatcher around any
// cache.ListerWatcher (this one, a dynamic or metadata client's, a
// hand-built cache.ListWatch), so every list the informer's reflector sends
// runs with the KEP-2523 fallbacks and a streaming list is used only where
// the server really streams (without the line this program never syncs
// against a v1.18.19 apiserver). Resource scopes what steadywatch learns
// about the server to the API group/version and names its logs.
//
//	cd e2e && go run ./cmd/devcluster --server legacy   # prints KUBECONFIG=...
//	cd examples && KUBECONFIG=... go run ./listwatch -namespace default
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	kubeconfig  string
	namespace   string
	syncTimeout time.Duration
	runFor      time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.StringVar(&c.namespace, "namespace", "", "namespace to watch (\"\" = all)")
	flag.DurationVar(&c.syncTimeout, "sync-timeout", time.Minute, "give up if the informer has not synced within this")
	flag.DurationVar(&c.runFor, "for", 0, "exit after this long once synced (0 = until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "listwatch:", err)
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

	var lw cache.ListerWatcher = cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", c.namespace, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { fmt.Fprintf(out, "event ADD    %s\n", key(o)) },
		UpdateFunc: func(_, o any) { fmt.Fprintf(out, "event UPDATE %s\n", key(o)) },
		DeleteFunc: func(o any) { fmt.Fprintf(out, "event DELETE %s\n", key(o)) },
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()

	start := time.Now()
	syncCtx, syncCancel := context.WithTimeout(ctx, c.syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		if ctx.Err() != nil {
			return nil // interrupted
		}
		return fmt.Errorf("not synced within %v", c.syncTimeout)
	}
	fmt.Fprintf(out, "synced %d ConfigMaps in %v\n", len(inf.GetStore().ListKeys()), time.Since(start).Round(time.Millisecond))

	var deadline <-chan time.Time
	if c.runFor > 0 {
		deadline = time.After(c.runFor)
	}
	select {
	case <-ctx.Done():
	case <-deadline:
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
