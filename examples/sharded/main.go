// Command sharded is one replica of a sharded operator: run it several times
// (each with its own -identity) and the replicas split the ConfigMaps of a
// namespace among themselves with package shard, through the Kubernetes API
// alone. One constructor does the wiring:
//
//	inf, err := shard.New(lw, &corev1.ConfigMap{}, shard.Options{Leases: cs.CoordinationV1(), Namespace: ns, Group: group})
//
// The replicas find each other through coordination.k8s.io/v1 Leases and
// split the uid hash space among the live ones; each replica's informer holds
// only its range (the apiserver filters where it applies the shardSelector,
// KEP-5866, v1.36+ with the ShardedListAndWatch gate; the client filters
// elsewhere, with the same result). The code below only registers its
// handlers, checks inf.Owns at the start of each reconcile and calls the done
// function Owns returns when the reconcile ends.
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
	Desired    []int    `json:"desired"`
	Acting     []int    `json:"acting"`
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
		identity   = flag.String("identity", "", "this replica's name, unique in the group (default: the host name)")
		status     = flag.String("status", "", "write this replica's status as JSON to this file")
		leaseDur   = flag.Duration("lease-duration", 15*time.Second, "member Lease duration")
		work       = flag.Duration("work", 100*time.Millisecond, "how long one reconcile holds its object")
	)
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *leaseNS, *group, *identity, *status, *leaseDur, *work); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, ns, leaseNS, group, id, statusFile string, leaseDur, work time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	inf, err := shard.New(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything()), &corev1.ConfigMap{},
		shard.Options{Leases: cs.CoordinationV1(), Namespace: leaseNS, Group: group, Identity: id, LeaseDuration: leaseDur})
	if err != nil {
		return err
	}
	if id == "" {
		id, _ = os.Hostname()
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	go inf.RunWithContext(ctx)
	var (
		reconciled atomic.Int64
		violMu     sync.Mutex
		violations []string
	)
	r := &reconciler{cs: cs, ns: ns, id: id, inf: inf, work: work, violation: func(v string) {
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
		v := inf.View()
		names := []string{}
		for _, o := range inf.GetStore().List() {
			names = append(names, o.(*corev1.ConfigMap).Name)
		}
		slices.Sort(names)
		violMu.Lock()
		st := Status{Identity: id, Members: v.Members, Desired: v.Desired, Acting: v.Acting,
			Mode: v.Mode, Cache: names, Reconciled: reconciled.Load(), Violations: slices.Clone(violations), At: time.Now().Format(time.RFC3339Nano)}
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
	inf       *shard.Informer
	work      time.Duration
	violation func(string)
}

// reconcile handles one ConfigMap if this replica owns it and its
// data["gen"] is not done yet.
func (r *reconciler) reconcile(ctx context.Context, key string) error {
	obj, exists, err := r.inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	cached := obj.(*corev1.ConfigMap)
	done, owned := r.inf.Owns(cached)
	if !owned {
		return nil // another replica reconciles it
	}
	defer done() // the object moves to another replica only after this
	if cached.Data["gen"] == cached.Annotations[doneGenKey] {
		return nil
	}
	cms := r.cs.CoreV1().ConfigMaps(r.ns)
	cur, err := cms.Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if h := cur.Annotations[holderKey]; h != "" && h != r.id && slices.Contains(r.inf.View().Members, h) {
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
