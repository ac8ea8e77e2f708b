package fieldfailures_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/fieldfailures"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// transitions counts the reflector's phase changes c saw by "from->to:
// reason" (the start and the stop are left out).
func transitions(c *reasons.Counter) map[string]int {
	out := map[string]int{}
	for _, e := range c.Events() {
		from, to, _ := strings.Cut(e.Label, "->")
		if e.Family == reasons.FamilyTransition && from != "Stopped" && to != "Stopped" {
			out[e.Label+": "+e.Reason]++
		}
	}
	return out
}

// client is one of a row's three clients, running on the ConfigMaps of ns
// through its own proxy.
type client struct {
	name     string
	proxy    *faults.Proxy
	ns       string
	resource string // as the proxy logs it
	start    time.Time

	hasSynced func() bool
	lastRV    func() string
	objects   func() []any
	counts    *reasons.Counter // nil for stock
	stop      func()

	mu          sync.Mutex
	syncedIn    time.Duration // 0 = not synced (yet)
	prevRV      string
	regressions []string
}

func rvLess(a, b string) bool {
	x, e1 := strconv.ParseUint(a, 10, 64)
	y, e2 := strconv.ParseUint(b, 10, 64)
	return e1 == nil && e2 == nil && x < y
}

// checkForward notes an object whose resourceVersion went down.
func (c *client) checkForward(old, cur any) {
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(cur)
	if err1 == nil && err2 == nil && rvLess(n.GetResourceVersion(), o.GetResourceVersion()) {
		c.mu.Lock()
		c.regressions = append(c.regressions, fmt.Sprintf("%s: %s -> %s", n.GetName(), o.GetResourceVersion(), n.GetResourceVersion()))
		c.mu.Unlock()
	}
}

// sample notes the sync and a store resourceVersion that went down.
func (c *client) sample() {
	synced := c.hasSynced()
	rv := c.lastRV()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.syncedIn == 0 && synced {
		c.syncedIn = time.Since(c.start)
	}
	if rvLess(rv, c.prevRV) {
		c.regressions = append(c.regressions, fmt.Sprintf("store %s -> %s", c.prevRV, rv))
	}
	if rv != "" {
		c.prevRV = rv
	}
}

func (c *client) synced() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncedIn, c.syncedIn != 0
}

// state is name -> object resourceVersion of the store.
func (c *client) state() map[string]string {
	out := map[string]string{}
	for _, o := range c.objects() {
		if m, err := meta.Accessor(o); err == nil {
			out[m.GetName()] = m.GetResourceVersion()
		}
	}
	return out
}

// regressionStore is a reflector store that notes objects going back in time.
type regressionStore struct {
	cache.Store
	c *client
}

func (s regressionStore) Update(obj any) error {
	if old, ok, _ := s.Store.Get(obj); ok {
		s.c.checkForward(old, obj)
	}
	return s.Store.Update(obj)
}

func (s regressionStore) Replace(items []any, rv string) error {
	for _, it := range items {
		if old, ok, _ := s.Store.Get(it); ok {
			s.c.checkForward(old, it)
		}
	}
	return s.Store.Replace(items, rv)
}

func detector(cfg *rest.Config) compat.Server {
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return srv
}

// resource is what the clients watch: ConfigMaps through the typed client
// (the rows) or any resource through the dynamic client (the aggregated
// apiserver's flunders).
type resource struct {
	resource string         // as the proxy logs it: "configmaps", "flunders"
	example  runtime.Object // &corev1.ConfigMap{} or &unstructured.Unstructured{}
	// gvr, for dynamic resources, is given to steadywatch as Options.Resource
	// (a typed example object names its own): capability evidence is kept
	// per API group/version, so flunders never decide for ConfigMaps.
	gvr schema.GroupVersionResource
	// stock returns client-go's own informer from its factory, not started.
	stock func(cfg *rest.Config, ns string) (inf cache.SharedIndexInformer, start func(<-chan struct{}), shutdown func())
	// client is the list and watch client steadywatch wraps.
	client func(cfg *rest.Config, ns string) lister.Client
}

var configMaps = resource{
	resource: "configmaps",
	example:  &corev1.ConfigMap{},
	stock: func(cfg *rest.Config, ns string) (cache.SharedIndexInformer, func(<-chan struct{}), func()) {
		f := informers.NewSharedInformerFactoryWithOptions(suite.Clientset(cfg), 0, informers.WithNamespace(ns))
		return f.Core().V1().ConfigMaps().Informer(), f.Start, f.Shutdown
	},
	client: func(cfg *rest.Config, ns string) lister.Client { return suite.ConfigMaps(suite.Clientset(cfg), ns) },
}

func dynamicResource(gvr schema.GroupVersionResource) resource {
	dyn := func(cfg *rest.Config) dynamic.Interface {
		d, err := dynamic.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		return d
	}
	return resource{
		resource: gvr.Resource,
		example:  &unstructured.Unstructured{},
		gvr:      gvr,
		stock: func(cfg *rest.Config, ns string) (cache.SharedIndexInformer, func(<-chan struct{}), func()) {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn(cfg), 0, ns, nil)
			return f.ForResource(gvr).Informer(), f.Start, f.Shutdown
		},
		client: func(cfg *rest.Config, ns string) lister.Client {
			return lister.FromDynamic(dyn(cfg).Resource(gvr).Namespace(ns))
		},
	}
}

// startClientOn starts client name on res in ns through p (cfg points at
// p); steadywatch's clients use server (nil: a new compat Detector's Server
// for cfg). It is stopped by client.stop (also at cleanup).
func startClientOn(res resource, name string, p *faults.Proxy, cfg *rest.Config, ns string, server compat.Server) *client {
	c := &client{name: name, proxy: p, ns: ns, resource: res.resource}
	if server == nil && name != fieldfailures.Stock {
		server = detector(cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	handler := cache.ResourceEventHandlerFuncs{UpdateFunc: c.checkForward}
	c.start = time.Now()
	switch name {
	case fieldfailures.Stock:
		inf, start, shutdown := res.stock(cfg, ns)
		_, err := inf.AddEventHandler(handler)
		Expect(err).NotTo(HaveOccurred())
		c.hasSynced, c.lastRV, c.objects = inf.HasSynced, inf.LastSyncResourceVersion, inf.GetStore().List
		start(ctx.Done())
		wg.Add(1)
		go func() { defer wg.Done(); <-ctx.Done(); shutdown() }()
	case fieldfailures.DropIn:
		c.counts = reasons.New()
		lc := res.client(cfg, ns)
		lw := &cache.ListWatch{ListWithContextFunc: lc.List, WatchFuncWithContext: lc.Watch}
		inf := reflector.NewSharedIndexInformerWithOptions(lw, res.example, cache.SharedIndexInformerOptions{},
			lister.Options{Server: server, Name: name, Metrics: c.counts, Resource: res.gvr})
		_, err := inf.AddEventHandler(handler)
		Expect(err).NotTo(HaveOccurred())
		c.hasSynced, c.lastRV, c.objects = inf.HasSynced, inf.LastSyncResourceVersion, inf.GetStore().List
		wg.Add(1)
		go func() { defer GinkgoRecover(); defer wg.Done(); inf.RunWithContext(ctx) }()
	case fieldfailures.Reflector:
		c.counts = reasons.New()
		store := regressionStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), c: c}
		r := reflector.New(res.client(cfg, ns), res.example, store, reflector.Options{Lister: lister.Options{Server: server, Name: name, Metrics: c.counts, Resource: res.gvr}})
		c.hasSynced, c.lastRV, c.objects = r.HasSynced, r.LastSyncResourceVersion, store.List
		wg.Add(1)
		go func() { defer GinkgoRecover(); defer wg.Done(); r.Run(ctx) }()
	default:
		Fail("unknown client " + name)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			c.sample()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	c.stop = func() {
		once.Do(func() {
			cancel()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			Eventually(done).WithTimeout(30*time.Second).Should(BeClosed(), "client %s did not stop", name)
		})
	}
	DeferCleanup(c.stop)
	return c
}

func isStreamingList(q url.Values) bool { return q.Get("sendInitialEvents") == "true" }

func isWatch(q url.Values) bool {
	w := q.Get("watch")
	return w != "" && w != "0" && w != "false"
}

// requests are c's requests on its resource in its namespace, as its proxy logged them.
func (c *client) requests() []faults.Request {
	var out []faults.Request
	for _, r := range c.proxy.Requests() {
		if r.Resource == c.resource && r.Namespace == c.ns && !r.Time.Before(c.start) {
			out = append(out, r)
		}
	}
	return out
}

// result measures c at the end of its row.
func (c *client) result(syncBound time.Duration, convergedIn time.Duration, converged bool, end time.Time) fieldfailures.ClientResult {
	syncedIn, synced := c.synced()
	res := fieldfailures.ClientResult{Client: c.name, Synced: synced && syncedIn <= syncBound, Converged: converged}
	if synced {
		res.SyncTime = fieldfailures.Duration(syncedIn)
	}
	if converged {
		res.ConvergeTime = fieldfailures.Duration(convergedIn)
	}
	for _, r := range c.requests() {
		q, _ := url.ParseQuery(r.RawQuery)
		res.Requests++
		switch {
		case r.Verb == "list":
			res.Lists++
		case r.Verb == "watch" && isStreamingList(q):
			res.StreamingLists++
		case r.Verb == "watch":
			res.Watches++
		}
	}
	window := end.Sub(c.start)
	res.Window = fieldfailures.Duration(window)
	res.RequestsPerMinute = float64(res.Requests) / window.Minutes()
	c.mu.Lock()
	res.Regressions = append([]string(nil), c.regressions...)
	c.mu.Unlock()
	if c.counts != nil {
		res.Fallbacks, res.Relists = c.counts.Family(reasons.FamilyFallback), c.counts.Family(reasons.FamilyRelist)
		res.WatchRestarts, res.Transitions = c.counts.Family(reasons.FamilyWatchRestart), transitions(c.counts)
	}
	return res
}

// logRequests writes c's request log to GinkgoWriter (for a failing row).
func (c *client) logRequests() {
	fmt.Fprintf(GinkgoWriter, "%s requests through %s:\n", c.name, c.proxy.URL())
	for _, r := range c.requests() {
		fmt.Fprintf(GinkgoWriter, "  #%d %s %s %s?%s -> backend %d status %d fault=%q err=%q dur=%s\n",
			r.Seq, r.Time.Format("15:04:05.000"), r.Verb, r.Path, r.RawQuery, r.Backend, r.Status, r.Fault, r.Err, r.Duration.Round(time.Millisecond))
	}
}
