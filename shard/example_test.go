package shard_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/steadywatch/steadywatch/shard"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// Two replicas of an operator split the ConfigMaps of a namespace. Each
// builds its informer with shard.New, registers its handlers and, in its
// reconcile, checks Owns and calls done when the reconcile ends: nothing
// else is wired. Here both replicas run in one process over an in-memory
// apiserver (steadywatchtest, which ignores the shardSelector as servers
// before v1.36 do: the replicas filter on the client) and a fake
// clientset's Leases.
func Example() {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	for i := range 12 {
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm-" + strconv.Itoa(i)}})
	}
	leases := fake.NewClientset().CoordinationV1()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	replicas := map[string]*shard.Informer{}
	for _, id := range []string{"a", "b"} {
		inf, err := shard.New(srv.InNamespace("default").ListerWatcher(), &corev1.ConfigMap{}, shard.Options{
			Leases: leases, Namespace: "operators", Group: "cm-operator", Identity: id,
			LeaseDuration: 3 * time.Second, // short for the example; default 15s
		})
		if err != nil {
			panic(err)
		}
		queue := workqueue.NewTyped[string]()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { queue.Add(obj.(*corev1.ConfigMap).Name) },
			UpdateFunc: func(_, obj any) { queue.Add(obj.(*corev1.ConfigMap).Name) },
		})
		go func() { // the controller's worker
			for {
				name, quit := queue.Get()
				if quit {
					return
				}
				if obj, ok, _ := inf.GetStore().GetByKey("default/" + name); ok {
					if done, owned := inf.Owns(obj.(*corev1.ConfigMap)); owned {
						// ... reconcile obj ...
						done()
					}
				}
				queue.Done(name)
			}
		}()
		go func() { <-ctx.Done(); queue.ShutDown() }()
		go inf.RunWithContext(ctx)
		replicas[id] = inf
	}

	// Wait until every object is owned by exactly one replica, and each
	// replica's cache holds only what it owns.
	owners := func() (once int) {
		for i := range 12 {
			cm, _ := srv.Get("default", "cm-"+strconv.Itoa(i))
			n := 0
			for _, inf := range replicas {
				if _, held, _ := inf.GetStore().Get(cm); !held {
					continue
				}
				if done, owned := inf.Owns(cm); owned {
					done()
					n++
				}
			}
			if n == 1 {
				once++
			}
		}
		return once
	}
	settled := func(context.Context) (bool, error) {
		for _, inf := range replicas {
			v := inf.View()
			if len(v.Members) != 2 || fmt.Sprint(v.Acting) != fmt.Sprint(v.Desired) {
				return false, nil
			}
		}
		return owners() == 12, nil
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, settled)
	fmt.Println("settled:", err == nil)
	fmt.Println("members:", replicas["a"].View().Members)
	fmt.Println("objects held and owned by exactly one replica:", owners(), "of 12")
	fmt.Println("mode:", replicas["a"].View().Mode)
	// Output:
	// settled: true
	// members: [a b]
	// objects held and owned by exactly one replica: 12 of 12
	// mode: client
}
