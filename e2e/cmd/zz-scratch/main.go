package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

func main() {
	ctx := context.Background()
	c, err := harness.Start(ctx, harness.Options{Version: "v1.37.2"})
	if err != nil {
		panic(err)
	}
	defer c.Stop()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	for i := 0; i < 3; i++ {
		cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("c", i)}}, metav1.CreateOptions{})
	}
	p, cfg, _ := c.NewProxy(ctx)
	p.SetStreamFaults(faults.StreamFaults{DropBookmarks: os.Args[1] == "drop"})
	fmt.Println("content type", cfg.ContentType, cfg.AcceptContentTypes)
	pcs := kubernetes.NewForConfigOrDie(cfg)
	t := true
	start := time.Now()
	w, err := pcs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{SendInitialEvents: &t, AllowWatchBookmarks: true, ResourceVersionMatch: "NotOlderThan"})
	fmt.Println("watch returned", time.Since(start), err)
	tm := time.After(8 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			m, _ := ev.Object.(metav1.Object)
			if m != nil {
				fmt.Println(time.Since(start), ev.Type, m.GetName(), m.GetResourceVersion(), m.GetAnnotations())
			} else {
				fmt.Println(time.Since(start), ev.Type, ev.Object)
			}
		case <-tm:
			for _, r := range p.Requests() {
				fmt.Printf("%+v\n", r)
			}
			b, _ := os.ReadFile(c.Dir() + "/proxy-0.log")
			fmt.Println(string(b))
			return
		}
	}
}
