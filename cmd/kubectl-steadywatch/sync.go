package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

type syncOptions struct {
	resource      string
	allNamespaces bool
	selector      string
	timeout       time.Duration
}

// ErrNotSynced is matched by the error sync returns when --timeout passed
// before the informer synced.
var ErrNotSynced = errors.New("informer not synced")

func newSyncCommand(a *app) *command {
	o := &syncOptions{}
	cmd := &command{
		Use:   "sync",
		Short: "Run an SDK-backed informer: one JSON line when synced, then one per event",
		Long: `sync runs a client-go shared informer whose list and watch go through the
steadywatch lister (reflector.NewSharedIndexInformerWithOptions): every list is
run with the KEP-2523 fallbacks and verified, and a streaming list on a server
that ignores sendInitialEvents (v1.18) falls back to a list instead of hanging.

Output (JSON lines on stdout):
  {"synced":true,"items":N,"resourceVersion":"RV","seconds":S}   once, when synced
  {"type":"ADDED|MODIFIED|DELETED","namespace":"NS","name":"NAME","resourceVersion":"RV"}   per event after that

It runs until --timeout (0 = until interrupted). Exit 0 when it synced and then
stopped (timeout or Ctrl-C), 1 when it did not sync in time or failed, 2 on
usage errors.`,
		Example: `  kubectl steadywatch sync --resource configmaps -n default --timeout 30s
  kubectl steadywatch sync --resource deployments.apps -A`,
		Args: noArgs,
		RunE: func(cmd *command, _ []string) error { return a.runSync(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.resource, "resource", "configmaps", "resource to watch: plural, short name or resource.group")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "watch across all namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector")
	f.DurationVar(&o.timeout, "timeout", 0, "stop after this long (0 = run until interrupted); not synced by then is exit code 1")
	return cmd
}

type syncedLine struct {
	Synced          bool    `json:"synced"`
	Items           int     `json:"items"`
	ResourceVersion string  `json:"resourceVersion"`
	Seconds         float64 `json:"seconds"`
}

type eventLine struct {
	Type            watch.EventType `json:"type"`
	Namespace       string          `json:"namespace,omitempty"`
	Name            string          `json:"name"`
	ResourceVersion string          `json:"resourceVersion,omitempty"`
}

func (a *app) runSync(cmd *command, o *syncOptions) error {
	if o.timeout < 0 {
		return usagef("--timeout must be >= 0")
	}
	if err := errors.Join(checkResourceArg(o.resource), checkSelector(o.selector)); err != nil {
		return err
	}
	parent := cmd.Context()
	start := time.Now()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	c, err := a.clients(ctx)
	if err != nil {
		if parent.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w within --timeout %s: %w", ErrNotSynced, o.timeout, err)
		}
		return err
	}
	m, ns, err := a.resolveIn(c, o.resource, o.allNamespaces)
	if err != nil {
		return err
	}
	ri := c.resourceClient(m, ns)
	sel := o.selector
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.LabelSelector = sel
			return ri.List(ctx, lo)
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			lo.LabelSelector = sel
			return ri.Watch(ctx, lo)
		},
	}
	inf := reflector.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{},
		lister.Options{Server: c.server, Name: m.Resource.String()})

	// List and watch errors: before the sync, the last one is part of the
	// command's error (not synced); after it, each distinct one is one
	// warning line. client-go's default handler would log every retry.
	var (
		errMu     sync.Mutex
		lastErr   error
		synced    bool
		warned    = map[string]bool{}
		errLogger = klog.FromContext(parent)
	)
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil {
			return // stopping: --timeout or interrupted
		}
		errLogger.V(1).Info("List or watch failed; the informer retries", "err", err)
		errMu.Lock()
		defer errMu.Unlock()
		lastErr = err
		if msg := oneLine(err.Error()); synced && !warned[msg] {
			warned[msg] = true
			fmt.Fprintf(a.errOut, "kubectl-steadywatch: warning: %s (retrying)\n", msg)
		}
	}); err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	notSynced := func(format string, args ...any) error {
		errMu.Lock()
		defer errMu.Unlock()
		err := fmt.Errorf(format, args...)
		if lastErr != nil {
			return fmt.Errorf("%w; last error: %w", err, lastErr)
		}
		return err
	}

	events := make(chan eventLine, 1024)
	emit := func(t watch.EventType, obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		acc, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		select {
		case events <- eventLine{Type: t, Namespace: acc.GetNamespace(), Name: acc.GetName(), ResourceVersion: acc.GetResourceVersion()}:
		case <-ctx.Done():
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				emit(watch.Added, obj)
			}
		},
		UpdateFunc: func(_, obj any) { emit(watch.Modified, obj) },
		DeleteFunc: func(obj any) { emit(watch.Deleted, obj) },
	}); err != nil {
		return fmt.Errorf("informer: %w", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()

	enc := json.NewEncoder(a.out)
	enc.SetEscapeHTML(false)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		if parent.Err() != nil {
			return notSynced("interrupted before the %s informer synced", resourceName(m))
		}
		return notSynced("%w: %s not synced within --timeout %s", ErrNotSynced, resourceName(m), o.timeout)
	}
	errMu.Lock()
	synced = true
	errMu.Unlock()
	if err := enc.Encode(syncedLine{Synced: true, Items: len(inf.GetStore().ListKeys()), ResourceVersion: inf.LastSyncResourceVersion(), Seconds: roundSeconds(time.Since(start))}); err != nil {
		return err
	}
	for {
		select {
		case ev := <-events:
			if err := enc.Encode(ev); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
