// Command readyourwrites is a controller loop that reads a ConfigMap from
// its informer's cache, increments a counter in it and writes it back, as a
// reconcile does, through readyourwrites.Client: every read is at least as
// new as the loop's own last write, so no write is refused with a 409
// Conflict for having been made from an older copy.
//
// Its stock twin, examples/stock/readyourwrites, reads from the informer's
// lister instead: right after its own write the cache often still holds the
// older copy (kubernetes/kubernetes#59848), and the next Update is refused.
// Each program prints how many cycles acted on an older copy:
//
//	cd e2e && go run ./cmd/devcluster --server current   # prints KUBECONFIG=...
//	cd examples && KUBECONFIG=... go run ./readyourwrites -namespace default
//	cd examples && KUBECONFIG=... go run ./stock/readyourwrites -namespace default
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/readyourwrites"
	"github.com/steadywatch/steadywatch/reflector"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := flag.String("namespace", "default", "namespace of the counter ConfigMap")
	cycles := flag.Int("cycles", 200, "read-increment-write cycles")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, *kubeconfig, *namespace, *cycles, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "readyourwrites:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, ns string, cycles int, out io.Writer) error {
	if kubeconfig == "" {
		return errors.New("no kubeconfig: set -kubeconfig or KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := reflector.NewSharedInformerFactory(cs, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().ConfigMaps().Informer()
	c, err := readyourwrites.New(cs.CoreV1().ConfigMaps(ns), ns, informer, readyourwrites.Options{})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return errors.New("informer did not sync")
	}

	const name = "readyourwrites-counter"
	_, err = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	stale := 0
	for range cycles {
		cm, err := c.Get(ctx, name) // never older than this loop's last write
		if apierrors.IsNotFound(err) {
			stale++ // not even the loop's own create
			continue
		} else if err != nil {
			return err
		}
		n, _ := strconv.Atoi(cm.Data["n"])
		next := cm.DeepCopy()
		next.Data = map[string]string{"n": strconv.Itoa(n + 1)}
		if _, err := c.Update(ctx, next, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			stale++ // written from an older copy than the server's
		} else if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d cycles, %d acted on a copy older than the loop's own write (NotFound, or an Update refused with 409 Conflict)\n", cycles, stale)
	return nil
}
