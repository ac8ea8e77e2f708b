package lister_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/lister"
)

// kube-apiserver 1.37 gzips streaming lists for a client that accepts gzip
// (the WatchListCompression feature, beta and on by default:
// kubernetes/kubernetes#139308, KEP-3157), which Go's transport asks for
// unless rest.Config.DisableCompression is set. docs/performance.md and
// docs/benchmarks.md measure what that costs the apiserver; this
// proves, on the real server, what the documented lever changes.
var _ = Describe("compression of streaming lists on a current apiserver (rest.Config.DisableCompression)", Label("conformance", "needs-faults"), Ordered, func() {
	var e *env
	BeforeAll(func(ctx SpecContext) {
		e = startHarness(ctx, harness.Options{Version: build.Current}, "needs the harness's request log (the Content-Encoding of each answer)")
	})

	It("a drop-in informer's streaming list is gzip-compressed by default and plain with DisableCompression; both sync every object from the stream", func(ctx SpecContext) {
		const objects = 20
		e.create(ctx, "gz", objects)
		e.create(ctx, "plain", objects)
		srv := detect(e.pcfg)
		plainCfg := rest.CopyConfig(e.pcfg)
		plainCfg.DisableCompression = true
		e.proxy.ResetRequests()

		for _, c := range []struct {
			set  string
			cfg  *rest.Config
			want string
		}{{"gz", e.pcfg, "gzip"}, {"plain", plainCfg, ""}} {
			sel := "set=" + c.set
			lw := lister.NewListerWatcher(suite.ConfigMaps(kubernetes.NewForConfigOrDie(c.cfg), e.ns), lister.Options{Server: srv, LabelSelector: sel})
			inf := startStockInformer(ctx, lw, &corev1.ConfigMap{})
			Eventually(inf.HasSynced).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(BeTrue(), sel)
			Expect(inf.GetStore().ListKeys()).To(HaveLen(objects), sel)

			streams := e.streamingLists("configmaps", sel)
			Expect(streams).NotTo(BeEmpty(), "%s: the informer streamed its initial list", sel)
			for _, s := range streams {
				Expect(s.Status).To(Equal(200), sel)
				Expect(s.ContentEncoding).To(Equal(c.want), "%s: Content-Encoding of the streaming list", sel)
			}
			for _, r := range e.requests("list") {
				if query(r.RawQuery).Get("labelSelector") == sel {
					Expect(query(r.RawQuery).Get("limit")).To(Equal("1"), "%s: no list besides the guard's count (the stream was read whole): %s", sel, r.RawQuery)
				}
			}
			AddReportEntry("streaming list "+sel, fmt.Sprintf("%d streaming list(s), Content-Encoding %q", len(streams), c.want))
		}
	})
})
