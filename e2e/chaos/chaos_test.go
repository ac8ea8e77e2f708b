package chaos_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/chaos"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/internal/storediff"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// ---- the writer ----

// writer churns ConfigMaps in one namespace at a bounded rate. Names are
// never reused, so a key's resourceVersions only grow and a deleted key
// stays deleted. Every operation is retried until its outcome is known
// (create: AlreadyExists after a lost answer means done; update: a merge
// patch is idempotent; delete: NotFound means done), so the model is the
// known final state.
type writer struct {
	cs  kubernetes.Interface
	ns  string
	rng *rand.Rand

	live    []string
	data    map[string]int // live name -> data version written
	deleted []string
	next    int
	ops     map[string]int
	unknown map[string]bool // outcome never confirmed (excluded from the model check)
}

func newWriter(cs kubernetes.Interface, ns string, replay int64) *writer {
	return &writer{cs: cs, ns: ns, rng: rand.New(rand.NewSource(replay)), data: map[string]int{}, ops: map[string]int{}, unknown: map[string]bool{}}
}

// run works until ctx ends, at most rate operations per second, keeping
// about target objects alive.
func (w *writer) run(ctx context.Context, rate float64, target int) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := w.rng.Float64()
		switch {
		case len(w.live) < target/2 || (len(w.live) < target && p < 0.45):
			w.create()
		case p < 0.75:
			w.update()
		default:
			w.delete()
		}
	}
}

// attempt retries op (each try bounded by 10s) up to 40 times over about
// 20s; it reports whether op confirmed its outcome. It deliberately does not
// use the run's context: an operation started is finished.
func attempt(op func(ctx context.Context) (done bool, err error)) bool {
	for i := 0; i < 40; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done, _ := op(ctx)
		cancel()
		if done {
			return true
		}
		time.Sleep(500 * time.Millisecond) // backoff between retries of a failed write, not synchronisation
	}
	return false
}

func (w *writer) create() {
	name := fmt.Sprintf("obj-%06d", w.next)
	w.next++
	ok := attempt(func(ctx context.Context) (bool, error) {
		_, err := w.cs.CoreV1().ConfigMaps(w.ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
	w.ops["create"]++
	if !ok {
		w.unknown[name] = true
		return
	}
	w.live = append(w.live, name)
	w.data[name] = 0
}

func (w *writer) update() {
	if len(w.live) == 0 {
		return
	}
	name := w.live[w.rng.Intn(len(w.live))]
	v := w.data[name] + 1
	patch := []byte(fmt.Sprintf(`{"data":{"v":"%d"}}`, v))
	ok := attempt(func(ctx context.Context) (bool, error) {
		_, err := w.cs.CoreV1().ConfigMaps(w.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err == nil, err
	})
	w.ops["update"]++
	if !ok {
		w.unknown[name] = true
	}
	w.data[name] = v
}

func (w *writer) delete() {
	if len(w.live) == 0 {
		return
	}
	i := w.rng.Intn(len(w.live))
	name := w.live[i]
	ok := attempt(func(ctx context.Context) (bool, error) {
		err := w.cs.CoreV1().ConfigMaps(w.ns).Delete(ctx, name, metav1.DeleteOptions{})
		return err == nil || apierrors.IsNotFound(err), err
	})
	w.ops["delete"]++
	if !ok {
		w.unknown[name] = true
		return
	}
	w.live[i] = w.live[len(w.live)-1]
	w.live = w.live[:len(w.live)-1]
	delete(w.data, name)
	w.deleted = append(w.deleted, w.ns+"/"+name)
}

// ---- faults ----

// faulter applies a schedule to the cluster and to every client proxy at once.
type faulter struct {
	c       *harness.Cluster
	proxies []*faults.Proxy
	ns      string
	byKind  map[string]int
	log     []string
}

func (f *faulter) rule(r faults.Rule) {
	r.Resource, r.Namespace = "configmaps", f.ns
	for _, p := range f.proxies {
		p.Inject(r)
	}
}

func (f *faulter) endWatches() int {
	n := 0
	for _, p := range f.proxies {
		n += p.EndWatches()
	}
	return n
}

// rvSet matches requests that carry a resourceVersion: a real server only
// answers those with 410 or "too large".
var rvSet = map[string]string{"resourceVersion": ""}

func (f *faulter) apply(ctx context.Context, ft chaos.Fault) (string, error) {
	switch ft.Kind {
	case chaos.RestartAPIServer:
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return "", f.c.APIServers()[ft.Server].Restart(rctx)
	case chaos.CompactEtcd:
		rev, err := f.c.Etcd().Compact(ctx)
		return fmt.Sprintf("at revision %d", rev), err
	case chaos.DropWatches:
		n := 0
		for _, p := range f.proxies {
			n += p.DropWatches()
		}
		return fmt.Sprintf("%d streams reset", n), nil
	case chaos.EndWatches:
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.StallWatches:
		for _, p := range f.proxies {
			p.StallWatches(ft.Duration)
		}
		return "", nil
	case chaos.Gone410Watch:
		f.rule(faults.Rule{Verb: "watch", Status: 410, AsWatchEvent: true, Count: 1, Query: rvSet})
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.Gone410List:
		f.rule(faults.Rule{Verb: "list", Status: 410, Count: ft.Count, Query: rvSet})
		f.rule(faults.Rule{Verb: "watch", Status: 410, AsWatchEvent: true, Count: 1, Query: rvSet})
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.Throttle429:
		f.rule(faults.Rule{Status: 429, RetryAfterSeconds: 1, Count: ft.Count})
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.Internal500:
		f.rule(faults.Rule{Status: 500, Count: ft.Count})
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.TooLarge504:
		f.rule(faults.Rule{Status: 504, RetryAfterSeconds: 1, Count: ft.Count, Query: rvSet,
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}})
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.FailoverLagging:
		for _, p := range f.proxies {
			p.Pin(ft.Server)
		}
		return fmt.Sprintf("%d streams ended", f.endWatches()), nil
	case chaos.FailoverBack:
		for _, p := range f.proxies {
			p.Failover(0)
		}
		return "", nil
	}
	return "", fmt.Errorf("unknown fault kind %q", ft.Kind)
}

// run fires the schedule relative to start and returns when the last fault
// has been applied (a restart returns once the apiserver is ready again).
func (f *faulter) run(ctx context.Context, start time.Time, schedule []chaos.Fault) error {
	for _, ft := range schedule {
		t := time.NewTimer(time.Until(start.Add(ft.At)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		began := time.Since(start)
		detail, err := f.apply(ctx, ft)
		line := fmt.Sprintf("%s (fired +%.2fs, took %s) %s", ft, began.Seconds(), (time.Since(start) - began).Round(time.Millisecond), detail)
		if err != nil {
			line += " ERROR: " + err.Error()
		}
		f.log = append(f.log, line)
		fmt.Fprintln(GinkgoWriter, "chaos fault:", line)
		f.byKind[string(ft.Kind)]++
		if err != nil {
			return fmt.Errorf("fault %s: %w", ft, err)
		}
	}
	return nil
}

// quiesce lifts every fault: rules cleared, stalls lifted, clients back on
// apiserver 0 with failover.
func (f *faulter) quiesce() {
	for _, p := range f.proxies {
		p.ClearRules()
		p.StallWatches(0)
		p.Failover(0)
	}
}

// ---- observation ----

// snapshot returns key -> resourceVersion of objs.
func snapshot(objs []any) map[string]string {
	out := make(map[string]string, len(objs))
	for _, o := range objs {
		cm := o.(*corev1.ConfigMap)
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out
}

// diff describes how got differs from want, briefly ("" = equal).
func diff(want, got map[string]string) string {
	d := storediff.Compare(want, got)
	if d.Empty() {
		return ""
	}
	differ := make([]string, len(d.Differ))
	for i, k := range d.Differ {
		differ[i] = fmt.Sprintf("%s(%s!=%s)", k, got[k], want[k])
	}
	short := func(s []string) string {
		if len(s) > 5 {
			return strings.Join(s[:5], ",") + fmt.Sprintf(",... (%d)", len(s))
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("missing=[%s] extra=[%s] differ=[%s]", short(d.Missing), short(d.Extra), short(differ))
}

// informerGoroutines counts live goroutines running reflector, lister or
// client-go informer code.
func informerGoroutines() int {
	buf := make([]byte, 1<<24)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "steadywatch/steadywatch/reflector.") ||
			strings.Contains(g, "steadywatch/steadywatch/lister.") ||
			strings.Contains(g, "k8s.io/client-go/tools/cache.") {
			n++
		}
	}
	return n
}

// requestCounts counts a proxy's requests for configmaps in ns by verb; a
// watch with sendInitialEvents=true counts as "streaming-list".
func requestCounts(p *faults.Proxy, ns string) map[string]int {
	out := map[string]int{}
	for _, r := range p.Requests() {
		if r.Resource != "configmaps" || r.Namespace != ns {
			continue
		}
		v := r.Verb
		if q, err := url.ParseQuery(r.RawQuery); err == nil && v == "watch" && q.Get("sendInitialEvents") == "true" {
			v = "streaming-list"
		}
		out[v]++
		if r.Fault != "" {
			out["faulted"]++
		}
	}
	return out
}

// ---- the spec ----

// chaosConfig is one control plane the chaos run can target (-chaos.config).
type chaosConfig struct {
	name, desc string
	opts       harness.Options
}

// chaosConfigs are the selectable control planes. Only "ha" runs in the
// default test run (make test); the others are for `make chaos
// CHAOS_CONFIG=...` and the compatibility page.
var chaosConfigs = []chaosConfig{
	{"ha", "HA pair, watch cache on", harness.Options{HA: true}},
	{"floor", "legacy floor " + build.Floor + ", watch cache on", harness.Options{Version: build.Floor}},
	{"legacy", build.Legacy + ", watch cache on", harness.Options{Version: build.Legacy}},
	{"cache-off", build.Current + ", watch cache off", harness.Options{Version: build.Current, DisableWatchCache: true}},
	{"mixed-ha", "mixed-version HA pair " + build.Legacy + "+" + build.Current + " (rolling upgrade)", harness.Options{HA: true, Versions: []string{build.Legacy, build.Current}}},
	{"ha-cache-off-member", "HA pair, watch cache off on apiserver-1 (its answers lag or lead the cached member's)", harness.Options{HA: true, DisableWatchCacheOn: []int{1}}},
}

func configNames() []string {
	var out []string
	for _, c := range chaosConfigs {
		out = append(out, c.name)
	}
	return out
}

func selectedConfig() chaosConfig {
	for _, c := range chaosConfigs {
		if c.name == *flagConfig {
			return c
		}
	}
	Fail(fmt.Sprintf("-chaos.config=%q: want one of %s", *flagConfig, strings.Join(configNames(), ", ")))
	return chaosConfig{}
}

var _ = Describe("chaos: writer churning, replayable fault schedule (-chaos.config, default HA pair with the watch cache on)", Label("chaos", "ha", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	var cc chaosConfig

	BeforeAll(func(ctx SpecContext) {
		cc = selectedConfig()
		c = suite.StartHarness(ctx, cc.opts,
			"needs the harness's servers ("+cc.desc+"), its fault proxies and apiserver restarts")
	})

	It("keeps the informer store equal to an Exact list, never goes back, observes every delete, leaks nothing", func() {
		replay := *flagSchedule
		if replay == 0 {
			replay = time.Now().UnixNano()
		}
		duration := *flagDuration
		schedule := chaos.Schedule(replay, chaos.ScheduleOptions{Duration: duration, Servers: len(c.APIServers())})
		header := fmt.Sprintf("chaos config=%s schedule=%d duration=%s objects=%d rate=%.0f/s server=%s (replay: go test ./chaos -chaos.config=%s -chaos.schedule=%d -chaos.duration=%s)",
			cc.name, replay, duration, *flagObjects, *flagRate, c.Version(), cc.name, replay, duration)
		fmt.Fprintln(GinkgoWriter, header)
		fmt.Fprint(GinkgoWriter, chaos.Format(schedule))
		AddReportEntry("chaos schedule", header, ReportEntryVisibilityAlways)

		ctx, cancel := context.WithTimeout(context.Background(), duration+10*time.Minute)
		defer cancel()
		baseline := informerGoroutines()

		admin := suite.Clientset(c.RESTConfig())
		nsObj, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ns := nsObj.Name

		// One proxy per client, each in front of both apiservers, in failover
		// mode on apiserver 0: when it restarts, clients go to apiserver 1,
		// whose watch cache lags. The writer has its own unfaulted proxy.
		newProxy := func() (*faults.Proxy, *rest.Config) {
			p, cfg, err := c.NewProxy(ctx)
			Expect(err).NotTo(HaveOccurred())
			p.Failover(0)
			return p, cfg
		}
		_, cfgWriter := newProxy()
		pOurs, cfgOurs := newProxy()
		pStock, cfgStock := newProxy()

		// Ours: steadywatch's reflector over the lister, with a compat Detector.
		oursT := chaos.NewTracker()
		oursStore := chaos.NewTrackingStore(oursT)
		counters := reasons.New()
		srv, err := compat.NewDetector(compat.DetectorOptions{Metrics: counters}).ForConfig(cfgOurs)
		Expect(err).NotTo(HaveOccurred())
		r := reflector.New(suite.ConfigMaps(suite.Clientset(cfgOurs), ns), &corev1.ConfigMap{}, oursStore, reflector.Options{
			Lister: lister.Options{Name: "chaos-ours", Server: srv, Metrics: counters,
				// Stalls last 1-12 s: some outlast this, so stall detection is exercised.
				StallTimeout: 10 * time.Second},
		})
		oursCtx, oursCancel := context.WithCancel(ctx)
		oursDone := make(chan struct{})
		go func() { defer GinkgoRecover(); defer close(oursDone); r.Run(oursCtx) }()

		// Stock: client-go's SharedInformerFactory with its defaults.
		stockT := chaos.NewTracker()
		factory := informers.NewSharedInformerFactoryWithOptions(suite.Clientset(cfgStock), 0, informers.WithNamespace(ns))
		stockInf := factory.Core().V1().ConfigMaps().Informer()
		_, err = stockInf.AddEventHandler(chaos.Handler(stockT))
		Expect(err).NotTo(HaveOccurred())
		stockCtx, stockCancel := context.WithCancel(ctx)
		factory.Start(stockCtx.Done())
		stopAll := sync.OnceFunc(func() {
			oursCancel()
			stockCancel()
			factory.Shutdown()
			Eventually(oursDone).WithTimeout(30 * time.Second).Should(BeClosed())
		})
		DeferCleanup(stopAll)

		Eventually(r.HasSynced).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
		syncCtx, syncCancel := context.WithTimeout(stockCtx, 60*time.Second)
		stockSynced := cache.WaitForCacheSync(syncCtx.Done(), stockInf.HasSynced)
		syncCancel()
		fmt.Fprintf(GinkgoWriter, "synced: ours=true stock=%v\n", stockSynced)

		// Time spent per reflector phase, sampled (introspection only).
		phases := map[string]float64{}
		sampleCtx, sampleCancel := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-sampleCtx.Done():
					return
				case <-t.C:
					phases[string(r.State().Phase)] += 0.1
				}
			}
		}()

		// Churn and faults, both bounded by duration.
		w := newWriter(suite.Clientset(cfgWriter), ns, replay)
		f := &faulter{c: c, proxies: []*faults.Proxy{pOurs, pStock}, ns: ns, byKind: map[string]int{}}
		start := time.Now()
		runCtx, runCancel := context.WithDeadline(ctx, start.Add(duration))
		defer runCancel()
		writerDone := make(chan struct{})
		go func() { defer GinkgoRecover(); defer close(writerDone); w.run(runCtx, *flagRate, *flagObjects) }()
		faultErr := f.run(ctx, start, schedule)
		lastFault := time.Now()
		f.quiesce()
		sampleCancel()
		<-sampled
		Eventually(writerDone).WithTimeout(duration + 2*time.Minute).Should(BeClosed())
		Expect(faultErr).NotTo(HaveOccurred(), "faults log:\n%s", strings.Join(f.log, "\n"))
		for _, a := range c.APIServers() {
			Expect(a.Running()).To(BeTrue(), "%s not running after the schedule", a.Name())
		}

		// The truth: an Exact list at a fresh resourceVersion, straight from
		// apiserver 0 (no proxy), through the steadywatch lister.
		direct := lister.New(suite.ConfigMaps(suite.Clientset(c.APIServers()[0].RESTConfig()), ns), lister.Options{Name: "chaos-truth"})
		_, fresh, err := direct.List(ctx, lister.MostRecent().WithLimit(500))
		Expect(err).NotTo(HaveOccurred())
		truthObj, rec, err := direct.List(ctx, lister.Exact(fresh.ServedResourceVersion).WithLimit(500))
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.ServedResourceVersion).To(Equal(fresh.ServedResourceVersion), "Exact list not served at the fresh RV")
		truthList := truthObj.(*corev1.ConfigMapList)
		want := map[string]string{}
		for _, cm := range truthList.Items {
			want[ns+"/"+cm.Name] = cm.ResourceVersion
		}

		// Convergence of both, measured from the last fault.
		bound := *flagConverge
		var oursAt, stockAt time.Duration = -1, -1
		var oursDiff, stockDiff string
		deadline := time.Now().Add(bound)
		for time.Now().Before(deadline) && (oursAt < 0 || stockAt < 0) {
			if oursAt < 0 {
				if oursDiff = diff(want, snapshot(oursStore.List())); oursDiff == "" {
					oursAt = time.Since(lastFault)
				}
			}
			if stockAt < 0 {
				if stockDiff = diff(want, snapshot(stockInf.GetStore().List())); stockDiff == "" {
					stockAt = time.Since(lastFault)
				}
			}
			time.Sleep(100 * time.Millisecond) // poll interval of a deadline-bounded poll
		}

		// The writer's model is the known final state.
		modelDiff := ""
		for _, cm := range truthList.Items {
			if w.unknown[cm.Name] {
				continue
			}
			v, ok := w.data[cm.Name]
			if !ok || cm.Data["v"] != fmt.Sprint(v) {
				modelDiff += fmt.Sprintf(" %s(server v=%s, writer v=%d live=%v)", cm.Name, cm.Data["v"], v, ok)
			}
		}
		if n := len(truthList.Items) - len(w.unknown); n > len(w.live) {
			modelDiff += fmt.Sprintf(" server has %d objects, writer %d live", len(truthList.Items), len(w.live))
		}

		stopAll()
		var left int
		Eventually(func() int { left = informerGoroutines() - baseline; return left }).
			WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeNumerically("<=", 0), "informer goroutines left after stop")

		// Report.
		oursDel, stockDel := oursT.CheckDeletes(w.deleted), stockT.CheckDeletes(w.deleted)
		secs := func(d time.Duration) float64 {
			if d < 0 {
				return -1
			}
			return d.Seconds()
		}
		res := chaos.Result{
			Replay: replay, Server: c.Version(), Config: cc.desc, DurationSeconds: duration.Seconds(),
			Schedule: f.log, FaultsByKind: f.byKind, WriterOps: w.ops, Objects: w.next, Deleted: len(w.deleted),
			Informers: []chaos.InformerRun{{
				Name: "steadywatch", Converged: oursAt >= 0, ConvergenceSeconds: secs(oursAt), StoreDiff: oursDiff,
				Regressions: len(oursT.Regressions()), DeletesObserved: oursDel.Observed, DeletesNeverSeen: oursDel.NeverSeen,
				DeletesMissed: len(oursDel.Missed), Events: oursT.Events(), Relists: counters.Family(reasons.FamilyRelist),
				Fallbacks: counters.Family(reasons.FamilyFallback), WatchRestarts: counters.Family(reasons.FamilyWatchRestart),
				Requests: requestCounts(pOurs, ns), GoroutinesLeft: left, PhaseSeconds: phases,
			}, {
				Name: "client-go", Converged: stockAt >= 0, ConvergenceSeconds: secs(stockAt), StoreDiff: stockDiff,
				Regressions: len(stockT.Regressions()), DeletesObserved: stockDel.Observed, DeletesNeverSeen: stockDel.NeverSeen,
				DeletesMissed: len(stockDel.Missed), Events: stockT.Events(),
				Relists:  map[string]int{"list-or-streaming-list": requestCounts(pStock, ns)["list"] + requestCounts(pStock, ns)["streaming-list"]},
				Requests: requestCounts(pStock, ns), GoroutinesLeft: left,
			}},
		}
		var sum strings.Builder
		fmt.Fprintf(&sum, "%s\nfaults by kind: %s\nwriter ops: %s (objects created %d, deleted %d, live %d, unconfirmed %d)\n",
			header, reasons.FormatCounts(f.byKind), reasons.FormatCounts(w.ops), w.next, len(w.deleted), len(w.live), len(w.unknown))
		fmt.Fprintf(&sum, "steadywatch reflector phases during the run (s, sampled): %v\ntransitions: %s\n", phases, reasons.FormatCounts(counters.Family(reasons.FamilyTransition)))
		for _, ir := range res.Informers {
			fmt.Fprintf(&sum, "[%s] converged=%v in %.1fs after the last fault; rv regressions=%d; deletes observed=%d never-seen=%d missed=%d\n  events: %s\n  relists: %s\n  fallbacks: %s\n  watch restarts: %s\n  requests: %s\n",
				ir.Name, ir.Converged, ir.ConvergenceSeconds, ir.Regressions, ir.DeletesObserved, ir.DeletesNeverSeen, ir.DeletesMissed,
				reasons.FormatCounts(ir.Events), reasons.FormatCounts(ir.Relists), reasons.FormatCounts(ir.Fallbacks), reasons.FormatCounts(ir.WatchRestarts), reasons.FormatCounts(ir.Requests))
			if ir.StoreDiff != "" {
				fmt.Fprintf(&sum, "  store diff: %s\n", ir.StoreDiff)
			}
		}
		fmt.Fprint(GinkgoWriter, sum.String())
		AddReportEntry("chaos summary", sum.String(), ReportEntryVisibilityAlways)
		if *flagReport != "" {
			Expect(res.Write(*flagReport)).To(Succeed())
		}

		// Assertions on ours (stock is report-only: it is the anchor).
		Expect(oursAt).To(BeNumerically(">=", 0), "steadywatch did not converge within %s of the last fault: %s", bound, oursDiff)
		Expect(oursT.Regressions()).To(BeEmpty(), "steadywatch showed an object older than it had shown")
		Expect(oursDel.Missed).To(BeEmpty(), "steadywatch missed deletes")
		Expect(modelDiff).To(BeEmpty(), "the server's final state differs from the writer's known state")
		Expect(w.next).To(BeNumerically(">=", 100), "the writer did too little to mean anything")
		Expect(f.byKind).NotTo(BeEmpty())
	})
})
