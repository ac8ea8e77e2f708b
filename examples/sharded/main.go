// Command sharded is one replica of a sharded operator: run it several times
// (each with its own -identity) and the replicas split the ConfigMaps of a
// namespace among themselves with package shard, through the Kubernetes API
// alone:
//
//   - they find each other through coordination.k8s.io/v1 Leases in
//     -lease-namespace (shard.Membership) and split the uid hash space among
//     the live ones (shard.Assign: every replica computes the same map);
//   - each replica's informer holds only its range (shard.Wrap): the
//     apiserver filters where it applies the shardSelector (KEP-5866, v1.36+
//     with the ShardedListAndWatch gate), the client filters elsewhere, with
//     the same result;
//   - a replica reconciles an object only while it owns it
//     (Membership.Owns): at most one replica at a time, and a new owner lists
//     its new range before it acts; objects leaving its range are not
//     reported to it as deleted (shard.Handler).
//
// Its reconcile is a stand-in for real work: for each ConfigMap whose
// data["gen"] it has not handled, it marks the object as being reconciled by
// itself (annotation shard-example/holder), waits briefly, and records
// data["gen"] in annotation shard-example/done-gen. Finding another live
// replica's holder mark is a violation of "at most one at a time" and is
// counted. With -status it writes its view as JSON to that file twice a
// second (what e2e/shard reads).
//
//	cd e2e && go run ./cmd/devcluster --server current   # prints KUBECONFIG=...
//	cd examples && go run ./sharded -identity a & go run ./sharded -identity b & go run ./sharded -identity c
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/shard"
)

const (
	holderKey  = "shard-example/holder"
	doneGenKey = "shard-example/done-gen"
)

// Status is what -status holds (e2e/shard reads the file with a copy of
// this type that rejects unknown fields: change both together).
type Status struct {
	Identity   string   `json:"identity"`
	Members    []string `json:"members"`
	Desired    string   `json:"desired"`
	Acting     string   `json:"acting"`
	Mode       string   `json:"mode"`
	Cache      []string `json:"cache"`
	Reconciled int64    `json:"reconciled"`
	Violations []string `json:"violations"`
	At         string   `json:"at"`
}

func main() {
	var (
		kubeconfig = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
		namespace  = flag.String("namespace", "default", "namespace of the ConfigMaps")
		leaseNS    = flag.String("lease-namespace", "default", "namespace of the member Leases")
		group      = flag.String("group", "sharded-example", "name of the replica group")
		identity   = flag.String("identity", "", "this replica's name (required, unique in the group)")
		status     = flag.String("status", "", "write this replica's status as JSON to this file")
		leaseDur   = flag.Duration("lease-duration", shard.DefaultLeaseDuration, "member Lease duration")
		renew      = flag.Duration("renew-deadline", shard.DefaultRenewDeadline, "member renew deadline")
		retry      = flag.Duration("retry-period", shard.DefaultRetryPeriod, "time between membership rounds")
		work       = flag.Duration("work", 100*time.Millisecond, "how long one reconcile holds its object")
	)
	flag.Parse()
	if *identity == "" {
		fmt.Fprintln(os.Stderr, "sharded: -identity is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *leaseNS, *group, *identity, *status, *leaseDur, *renew, *retry, *work); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, ns, leaseNS, group, id, statusFile string, leaseDur, renew, retry, work time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var (
		lw         *shard.ListerWatcher
		rangeMu    sync.Mutex
		lastRange  string
		busy       = &inflight{}
		requeue    func()
		lastActing int
	)
	m, err := shard.NewMembership(shard.MembershipOptions{
		Leases: cs.CoordinationV1(), Namespace: leaseNS, Group: group, Identity: id,
		LeaseDuration: leaseDur, RenewDeadline: renew, RetryPeriod: retry,
		// List the new range before acting on it.
		WaitReady: func(ctx context.Context, acting shard.Selector) error { return shard.WaitCovers(ctx, lw, acting) },
		// Finish the reconciles still running before the claim goes.
		Release: func(ctx context.Context, _ shard.Selector) error { return busy.wait(ctx) },
		OnChange: func(v shard.View) {
			// Relist only when the range the cache holds changed.
			rangeMu.Lock()
			defer rangeMu.Unlock()
			if r := lw.CacheRange(); r != lastRange {
				lastRange = r
				lw.RangeChanged()
			}
			// Newly owned objects may have no event coming: requeue what
			// the cache holds (only this replica's range).
			if gained := len(v.Acting) > lastActing; gained && requeue != nil {
				requeue()
			}
			lastActing = len(v.Acting)
		},
	})
	if err != nil {
		return err
	}
	lw = shard.Wrap(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything()),
		shard.WrapOptions{Selector: m.CacheSelector, Name: "v1/configmaps"})
	inf := reflector.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	rangeMu.Lock()
	requeue = func() {
		for _, key := range inf.GetStore().ListKeys() {
			queue.Add(key)
		}
	}
	rangeMu.Unlock()
	if _, err := inf.AddEventHandler(shard.Handler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { enqueue(obj) }, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}, m.CacheSelector)); err != nil {
		return err
	}
	go func() { _ = m.Run(ctx) }()
	go inf.RunWithContext(ctx)
	var (
		reconciled atomic.Int64
		violMu     sync.Mutex
		violations []string
	)
	r := &reconciler{cs: cs, ns: ns, id: id, m: m, inf: inf, work: work, busy: busy, violation: func(v string) {
		violMu.Lock()
		defer violMu.Unlock()
		violations = append(violations, v)
		klog.FromContext(ctx).Info("VIOLATION", "detail", v)
	}}
	for range 2 {
		go func() {
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				if err := r.reconcile(ctx, key); err != nil {
					queue.AddRateLimited(key)
				} else {
					queue.Forget(key)
					reconciled.Add(1)
				}
				queue.Done(key)
			}
		}()
	}
	defer queue.ShutDown()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if statusFile == "" {
			continue
		}
		v := m.View()
		names := []string{}
		for _, o := range inf.GetStore().List() {
			names = append(names, o.(*corev1.ConfigMap).Name)
		}
		slices.Sort(names)
		violMu.Lock()
		st := Status{Identity: id, Members: v.Members, Desired: shard.FormatSlices(v.Desired), Acting: shard.FormatSlices(v.Acting),
			Mode: string(lw.Mode()), Cache: names, Reconciled: reconciled.Load(), Violations: slices.Clone(violations), At: time.Now().Format(time.RFC3339Nano)}
		violMu.Unlock()
		b, _ := json.Marshal(st)
		tmp := statusFile + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err == nil {
			_ = os.Rename(tmp, statusFile)
		}
	}
}

type reconciler struct {
	cs        kubernetes.Interface
	ns, id    string
	m         *shard.Membership
	inf       cache.SharedIndexInformer
	work      time.Duration
	busy      *inflight
	violation func(string)
}

// inflight counts running reconciles; wait returns once none runs.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func (f *inflight) add(d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.idle == nil {
		f.idle = make(chan struct{})
		close(f.idle)
	}
	if f.n == 0 && d > 0 {
		f.idle = make(chan struct{})
	}
	if f.n += d; f.n == 0 && d < 0 {
		close(f.idle)
	}
}

func (f *inflight) wait(ctx context.Context) error {
	f.add(0)
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconcile handles one ConfigMap if this replica owns it and its
// data["gen"] is not done yet.
func (r *reconciler) reconcile(ctx context.Context, key string) error {
	obj, exists, err := r.inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	cached := obj.(*corev1.ConfigMap)
	r.busy.add(1) // before Owns: Release then waits for this reconcile
	defer r.busy.add(-1)
	if !r.m.Owns(cached) || cached.Data["gen"] == cached.Annotations[doneGenKey] {
		return nil
	}
	cms := r.cs.CoreV1().ConfigMaps(r.ns)
	cur, err := cms.Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if h := cur.Annotations[holderKey]; h != "" && h != r.id && slices.Contains(r.m.View().Members, h) {
		r.violation(fmt.Sprintf("%s: live replica %s holds it while %s reconciles", cur.Name, h, r.id))
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[holderKey] = r.id
	if cur, err = cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return err // a conflict: try again from the cache
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.work):
	}
	delete(cur.Annotations, holderKey)
	cur.Annotations[doneGenKey] = cur.Data["gen"]
	_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}
