package fieldfailures_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/fieldfailures"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

func flunder(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": map[string]any{"name": name}}}
}

// flunderWorkload is the row workload on the sample apiserver's flunders,
// written through the aggregator.
func flunderWorkload(dyn dynamic.Interface) *workload {
	fl := func(rr *rowRun) dynamic.ResourceInterface { return dyn.Resource(harness.FlundersGVR).Namespace(rr.ns) }
	create := func(ctx context.Context, rr *rowRun, name string) string {
		f, err := fl(rr).Create(ctx, flunder(name), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return f.GetResourceVersion()
	}
	return &workload{
		res: dynamicResource(harness.FlundersGVR),
		populate: func(ctx context.Context, rr *rowRun) {
			for i := 0; i < objects; i++ {
				create(ctx, rr, fmt.Sprintf("f-%d", i))
			}
		},
		writes: func(ctx context.Context, rr *rowRun) string {
			Expect(fl(rr).Delete(ctx, "f-1", metav1.DeleteOptions{})).To(Succeed())
			for i := 0; i < 3; i++ {
				create(ctx, rr, fmt.Sprintf("new-%d", i))
			}
			f, err := fl(rr).Get(ctx, "f-0", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			f.SetLabels(map[string]string{"updated": "true"})
			f, err = fl(rr).Update(ctx, f, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return f.GetResourceVersion()
		},
		// A v0.18 server ignores resourceVersionMatch=Exact without a limit:
		// the truth is a consistent list (nothing is written after lastRV).
		truth: func(ctx context.Context, rr *rowRun, lastRV string) map[string]string {
			l, err := fl(rr).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(rvLess(l.GetResourceVersion(), lastRV)).To(BeFalse(), "list at %s, older than the last write %s", l.GetResourceVersion(), lastRV)
			out := map[string]string{}
			for _, it := range l.Items {
				out[it.GetName()] = it.GetResourceVersion()
			}
			return out
		},
	}
}

var _ = Describe("Field failures on a real aggregated apiserver", Label("field-failures", "needs-faults", "aggregated"), func() {
	It("syncs flunders of a k8s.io/sample-apiserver v0.18 behind the aggregator, and core informers on the host keep streaming", func(ctx SpecContext) {
		suite.SkipIfExternal("needs the harness's own apiserver with front-proxy flags and a sample-apiserver on its etcd")
		bin, err := build.EnsureSampleAPIServer(ctx, build.SampleAPIServer, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		args, err := harness.AggregationArgs(GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		c := suite.StartHarness(ctx, harness.Options{Version: serverVersion(), ExtraArgs: args},
			"needs the harness's own apiserver with front-proxy flags")
		agg, err := c.StartSampleAPIServer(ctx, bin)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(agg.Stop)
		dyn, err := dynamic.NewForConfig(c.RESTConfig())
		Expect(err).NotTo(HaveOccurred())

		// One compat Server per client's proxy (one host), kept to start a
		// ConfigMap informer on the same host afterwards.
		var mu sync.Mutex
		servers := map[string]compat.Server{}
		runRow(ctx, c, nil, row{id: fieldfailures.OldAggregatedAPIServer, on: flunderWorkload(dyn),
			server: func(cfg *rest.Config) compat.Server {
				srv := detector(cfg)
				mu.Lock()
				servers[cfg.Host] = srv
				mu.Unlock()
				return srv
			}})

		// The same host still streams lists for its own resources: a drop-in
		// informer on ConfigMaps, through the drop-in's proxy with its Server.
		p, cfg, err := c.NewProxy(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		mu.Lock()
		var shared compat.Server
		for _, s := range servers {
			shared = s // any steadywatch client's: each learnt about flunders on its host
			break
		}
		mu.Unlock()
		Expect(shared).NotTo(BeNil())
		ns := suite.NewNamespace(ctx, suite.Clientset(c.RESTConfig()), "ff-core")
		suite.CreateConfigMaps(ctx, suite.Clientset(c.RESTConfig()), ns, 5, nil)
		core := startClientOn(configMaps, fieldfailures.DropIn, p, cfg, ns, shared)
		Eventually(core.hasSynced).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())
		core.stop()
		var streamed, listed int
		for _, r := range core.requests() {
			q, _ := url.ParseQuery(r.RawQuery)
			switch {
			case r.Verb == "watch" && isStreamingList(q) && r.Status == 200:
				streamed++
			case r.Verb == "list" && q.Get("limit") == "1" && q.Get("resourceVersion") == "":
				// the streaming-list guard's count of the objects to expect, not a fallback
			case r.Verb == "list":
				listed++
			}
		}
		d, _ := core.synced()
		note := fmt.Sprintf("A drop-in informer on ConfigMaps of the same host, sharing a compat Server that had just seen flunders ignore sendInitialEvents, synced in %s with %d streaming list(s) and %d list(s) besides the guard's limit=1 count.", d.Round(time.Millisecond), streamed, listed)
		fmt.Fprintln(GinkgoWriter, note)
		addNote(fieldfailures.OldAggregatedAPIServer, note)
		Expect(streamed).To(Equal(1), "core informers on the host must keep streaming lists")
		Expect(listed).To(BeZero(), "core informers on the host must not fall back to lists")
	})
})
