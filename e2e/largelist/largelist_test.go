package largelist_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// Reasons that mean "the streaming list was abandoned" (a fallback).
var abandonReasons = []string{
	"streaming-list-abandoned", // drop-in informer (lister's ListerWatcher)
	"streaming-ignored",        // reflector.New: the guard found no streaming
	"streaming-failed",         // reflector.New: cut or failed stream
}

// abandoned returns the first report of an abandoned streaming list.
func abandoned(rec *reasons.Counter) (reasons.Event, bool) {
	for _, e := range rec.Events() {
		if slices.Contains(abandonReasons, e.Reason) {
			return e, true
		}
	}
	return reasons.Event{}, false
}

// client is a running steadywatch client.
type client struct {
	hasSynced func() bool
	items     func() int
	rec       *reasons.Counter
	stop      func()
}

const (
	dropIn       = "drop-in informer"
	reflectorNew = "reflector.New"
)

// start runs client kind on the ConfigMaps of ns through cfg.
func start(kind string, cfg *rest.Config, ns string) *client {
	rec := reasons.New()
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	lc := suite.ConfigMaps(suite.Clientset(cfg), ns)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c := &client{rec: rec}
	switch kind {
	case dropIn:
		lw := &cache.ListWatch{ListWithContextFunc: lc.List, WatchFuncWithContext: lc.Watch}
		inf := reflector.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{},
			lister.Options{Server: srv, Name: kind, Metrics: rec})
		c.hasSynced, c.items = inf.HasSynced, func() int { return len(inf.GetStore().ListKeys()) }
		go func() { defer GinkgoRecover(); defer close(done); inf.RunWithContext(ctx) }()
	case reflectorNew:
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := reflector.New(lc, &corev1.ConfigMap{}, store, reflector.Options{Lister: lister.Options{Server: srv, Name: kind, Metrics: rec}})
		c.hasSynced, c.items = r.HasSynced, func() int { return len(store.ListKeys()) }
		go func() { defer GinkgoRecover(); defer close(done); r.Run(ctx) }()
	}
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			cancel()
			Eventually(done).WithTimeout(time.Minute).Should(BeClosed(), "%s did not stop", kind)
		})
	}
	DeferCleanup(c.stop)
	return c
}

// createConcurrently creates n small ConfigMaps in ns with workers creators.
func createConcurrently(ctx context.Context, cs kubernetes.Interface, ns string, n, workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", cm.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}

func isStreamingList(q url.Values) bool { return q.Get("sendInitialEvents") == "true" }

// requests splits the proxy's requests on ns's ConfigMaps.
func requests(p *faults.Proxy, ns string) (streaming []faults.Request, countLists, fullLists int) {
	for _, r := range p.Requests() {
		if r.Resource != "configmaps" || r.Namespace != ns {
			continue
		}
		q, _ := url.ParseQuery(r.RawQuery)
		switch {
		case r.Verb == "watch" && isStreamingList(q):
			streaming = append(streaming, r)
		case r.Verb == "list" && q.Get("limit") == "1":
			countLists++
		case r.Verb == "list":
			fullLists++
		}
	}
	return streaming, countLists, fullLists
}

func logRequests(p *faults.Proxy, ns string) {
	for _, r := range p.Requests() {
		if r.Namespace == ns {
			fmt.Fprintf(GinkgoWriter, "  #%d %s %s ?%s status %d events %d fault=%q dur=%s\n", r.Seq, r.Time.Format("15:04:05.000"), r.Verb,
				r.RawQuery, r.Status, r.Events, r.Fault, r.Duration.Round(time.Millisecond))
		}
	}
}

var _ = Describe("Streaming lists of a large collection on "+build.Current, Label("slow", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	var ns string
	n := 0
	BeforeAll(func(ctx SpecContext) {
		if !strings.Contains(GinkgoLabelFilter(), "slow") {
			Skip("SKIPPED: creates tens of thousands of objects; run `make e2e-slow` (-ginkgo.label-filter=slow)")
		}
		n = *flagObjects
		c = suite.StartHarness(ctx, harness.Options{Version: build.Current}, "needs the harness's fault proxy in front of "+build.Current)
		cfg := c.APIServers()[0].RESTConfig()
		cfg.QPS, cfg.Burst = -1, 0
		cs := suite.Clientset(cfg)
		ns = suite.NewNamespace(ctx, cs, "large")
		begin := time.Now()
		createConcurrently(ctx, cs, ns, n, *flagWorkers)
		suite.Timing(fmt.Sprintf("create %d ConfigMaps (%d workers)", n, *flagWorkers), time.Since(begin))
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(l.RemainingItemCount).NotTo(BeNil(), "the count the guard relies on")
		Expect(int(*l.RemainingItemCount) + len(l.Items)).To(Equal(n))
	}, NodeTimeout(20*time.Minute))

	for _, kind := range []string{dropIn, reflectorNew} {
		It(kind+": a server pausing mid-stream is waited for: one streaming list, no fallback, synced", func(ctx SpecContext) {
			p, pcfg, err := c.NewProxy(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			pause := *flagPause
			p.SetStreamFaults(faults.StreamFaults{PauseAfterEvents: n / 2, PauseFor: pause})
			begin := time.Now()
			cl := start(kind, pcfg, ns)
			Eventually(cl.hasSynced).WithTimeout(5*time.Minute).WithPolling(50*time.Millisecond).Should(BeTrue(), "%s synced", kind)
			synced := time.Since(begin)
			suite.Timing(fmt.Sprintf("%s: sync of %d objects with a %s pause mid-stream", kind, n, pause), synced)
			cl.stop()
			streaming, countLists, fullLists := requests(p, ns)
			if len(streaming) != 1 || fullLists != 0 {
				logRequests(p, ns)
			}
			ab, abandoned := abandoned(cl.rec)
			Expect(abandoned).To(BeFalse(), "%s abandoned the streaming list: %+v (all: %+v)", kind, ab, cl.rec.Events())
			Expect(streaming).To(HaveLen(1), "one streaming list")
			Expect(streaming[0].Fault).To(ContainSubstring(fmt.Sprintf("paused %s after %d events", pause, n/2)), "the pause happened")
			Expect(streaming[0].InitialEventsEnd.IsZero()).To(BeFalse(), "the end bookmark reached the proxy")
			Expect(fullLists).To(Equal(0), "no fallback list (count lists: %d)", countLists)
			Expect(cl.items()).To(Equal(n))
			Expect(synced).To(BeNumerically(">", pause), "the pause was sat through")
		}, NodeTimeout(10*time.Minute))

		It(kind+": with bookmarks dropped, the fallback is decided within 2s of the last initial event", func(ctx SpecContext) {
			p, pcfg, err := c.NewProxy(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			p.SetStreamFaults(faults.StreamFaults{DropBookmarks: true})
			begin := time.Now()
			cl := start(kind, pcfg, ns)
			var ab reasons.Event
			Eventually(func() bool {
				var ok bool
				ab, ok = abandoned(cl.rec)
				return ok
			}).WithTimeout(5*time.Minute).WithPolling(20*time.Millisecond).Should(BeTrue(), "%s abandons the streaming list", kind)
			Eventually(cl.hasSynced).WithTimeout(5*time.Minute).WithPolling(50*time.Millisecond).Should(BeTrue(), "%s synced by listing", kind)
			suite.Timing(fmt.Sprintf("%s: sync of %d objects with bookmarks dropped", kind, n), time.Since(begin))
			cl.stop()
			streaming, _, fullLists := requests(p, ns)
			Expect(streaming).NotTo(BeEmpty())
			first := streaming[0]
			Expect(first.InitialEventsEnd.IsZero()).To(BeFalse(), "the proxy saw (and dropped) the end bookmark")
			Expect(first.Events).To(Equal(n), "every initial event was forwarded")
			detection := ab.At.Sub(first.InitialEventsEnd)
			suite.Timing(fmt.Sprintf("%s: fallback decided after the last initial event at the proxy (bookmarks dropped, %d objects)", kind, n), detection)
			// The guard waits 1.5s of quiet once the counted initial events
			// arrived (10s while the count is unknown); what the client adds
			// is delivery of the last events through the proxy.
			Expect(detection).To(BeNumerically(">=", 1400*time.Millisecond), "not before the 1.5s after-count bound")
			Expect(detection).To(BeNumerically("<", 2*time.Second), "decided within 2s of the last initial event (1.5s after-count bound plus delivery), not the 10s quiet bound")
			Expect(fullLists).To(BeNumerically(">=", 1), "it listed instead")
			Expect(cl.items()).To(Equal(n))
		}, NodeTimeout(10*time.Minute))
	}
})
