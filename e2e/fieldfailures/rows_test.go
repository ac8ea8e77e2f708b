package fieldfailures_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/compat"

	"github.com/steadywatch/steadywatch/e2e/fieldfailures"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

// row is how one catalogue row is set up. Every hook is optional.
type row struct {
	id string
	// arm sets the fault on a client's proxy before the client starts.
	arm func(ctx context.Context, p *faults.Proxy, ns string)
	// afterSync runs once every steadywatch client synced (or the sync
	// bound passed), before the row's writes.
	afterSync func(ctx context.Context, rr *rowRun)
	// afterWrites runs right after the writes; lastRV is the last write's.
	afterWrites func(ctx context.Context, rr *rowRun, lastRV string)
	// on is the workload; nil = ConfigMaps.
	on *workload
	// server, if set, is the compat Server of steadywatch's clients (shared
	// with other informers on the same host); nil = one Detector per client.
	server func(cfg *rest.Config) compat.Server
}

// workload is what a row's clients watch and how the row writes and reads it.
type workload struct {
	res resource
	// populate creates the objects the clients start on.
	populate func(ctx context.Context, rr *rowRun)
	// writes changes them (one deleted, one updated, three created) and
	// returns the last write's resourceVersion.
	writes func(ctx context.Context, rr *rowRun) string
	// truth is name -> resourceVersion of the collection at lastRV.
	truth func(ctx context.Context, rr *rowRun, lastRV string) map[string]string
}

var configMapWorkload = &workload{
	res: configMaps,
	populate: func(ctx context.Context, rr *rowRun) {
		suite.CreateConfigMaps(ctx, rr.cs, rr.ns, objects, suite.IndexData)
	},
	writes: func(ctx context.Context, rr *rowRun) string { return writes(ctx, rr.cs, rr.ns) },
	truth: func(ctx context.Context, rr *rowRun, lastRV string) map[string]string {
		return exactState(ctx, rr.cs, rr.ns, lastRV)
	},
}

// rowRun is a row in progress.
type rowRun struct {
	c       *harness.Cluster
	cs      kubernetes.Interface // the admin client, straight to apiserver-0
	ns      string
	clients []*client
	notes   []string
}

func (rr *rowRun) proxies() []*faults.Proxy {
	var out []*faults.Proxy
	for _, c := range rr.clients {
		out = append(out, c.proxy)
	}
	return out
}

// currentRV is the resourceVersion of a consistent list of ns.
func (rr *rowRun) currentRV(ctx context.Context) string {
	l, err := rr.cs.CoreV1().ConfigMaps(rr.ns).List(ctx, metav1.ListOptions{Limit: 1})
	Expect(err).NotTo(HaveOccurred())
	return l.ResourceVersion
}

const objects = 20

// writes deletes cm-1, creates new-0..2 and updates cm-0, and returns the
// last write's resourceVersion.
func writes(ctx context.Context, cs kubernetes.Interface, ns string) string {
	cms := cs.CoreV1().ConfigMaps(ns)
	Expect(cms.Delete(ctx, "cm-1", metav1.DeleteOptions{})).To(Succeed())
	for i := 0; i < 3; i++ {
		suite.CreateConfigMap(ctx, cs, ns, fmt.Sprintf("new-%d", i), nil)
	}
	cm, err := cms.Get(ctx, "cm-0", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	cm.Data = map[string]string{"updated": "true"}
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return cm.ResourceVersion
}

// exactState is name -> resourceVersion of an Exact list of ns at rv.
func exactState(ctx context.Context, cs kubernetes.Interface, ns, rv string) map[string]string {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	Expect(err).NotTo(HaveOccurred())
	Expect(l.ResourceVersion).To(Equal(rv), "the Exact list must be served at %s", rv)
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

func equalState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// pollUntil calls cond every 20ms until it returns true or d passes.
func pollUntil(ctx context.Context, d time.Duration, cond func() bool) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func isSteadywatch(name string) bool { return name != fieldfailures.Stock }

// runRow runs one row on c: the three clients through their own proxies in
// front of backends (nil: every apiserver), measured and recorded; then
// steadywatch's outcome is asserted.
func runRow(ctx context.Context, c *harness.Cluster, backends []*harness.APIServer, spec row) {
	catalogued, ok := fieldfailures.RowByID(spec.id)
	Expect(ok).To(BeTrue(), "row %s is not in the catalogue", spec.id)
	fmt.Fprintf(GinkgoWriter, "row %s: %s\nemulation: %s\n", spec.id, catalogued.Failure, catalogued.Emulation)
	on := spec.on
	if on == nil {
		on = configMapWorkload
	}
	rr := &rowRun{c: c, cs: suite.Clientset(c.APIServers()[0].RESTConfig())}
	rr.ns = suite.NewNamespace(ctx, rr.cs, "ff")
	on.populate(ctx, rr)

	for _, name := range fieldfailures.Clients {
		p, cfg, err := c.NewProxy(ctx, backends...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		if spec.arm != nil {
			spec.arm(ctx, p, rr.ns)
		}
		var server compat.Server
		if spec.server != nil && name != fieldfailures.Stock {
			server = spec.server(cfg)
		}
		rr.clients = append(rr.clients, startClientOn(on.res, name, p, cfg, rr.ns, server))
	}
	t0 := time.Now()
	syncBound, convergeBound := time.Duration(bounds.Sync), time.Duration(bounds.Converge)

	synced := func(c *client) bool { _, ok := c.synced(); return ok }
	pollUntil(ctx, syncBound, func() bool {
		for _, c := range rr.clients {
			if !synced(c) {
				return false
			}
		}
		return true
	})
	for _, c := range rr.clients {
		d, ok := c.synced()
		suite.Timing(fmt.Sprintf("%s %s synced=%v", spec.id, c.name, ok), d)
	}
	if spec.afterSync != nil {
		spec.afterSync(ctx, rr)
	}

	lastRV := on.writes(ctx, rr)
	tw := time.Now()
	if spec.afterWrites != nil {
		spec.afterWrites(ctx, rr, lastRV)
	}
	want := on.truth(ctx, rr, lastRV)
	Expect(want).To(HaveLen(objects + 2))
	convergedIn := map[string]time.Duration{}
	pollUntil(ctx, convergeBound-time.Since(tw), func() bool {
		done := true
		for _, c := range rr.clients {
			if _, ok := convergedIn[c.name]; ok {
				continue
			}
			if equalState(c.state(), want) {
				convergedIn[c.name] = time.Since(tw)
				continue
			}
			// Stock client-go that never synced is not waited for.
			if isSteadywatch(c.name) || synced(c) {
				done = false
			}
		}
		return done
	})
	// Observe at least MinWindow, so that request rates mean something.
	if rest := time.Duration(bounds.MinWindow) - time.Since(t0); rest > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(rest):
		}
	}
	end := time.Now()
	result := fieldfailures.RowResult{ID: spec.id, Notes: rr.notes}
	var failures []string
	for _, c := range rr.clients {
		d, converged := convergedIn[c.name]
		if converged && !equalState(c.state(), want) {
			converged = false
			rr.notes = append(rr.notes, fmt.Sprintf("%s converged after %s, then left the Exact list again.", c.name, d.Round(time.Millisecond)))
		}
		c.stop()
		res := c.result(syncBound, d, converged, end)
		result.Clients = append(result.Clients, res)
		fmt.Fprintf(GinkgoWriter, "row %s %s: %s; %d requests (%.0f/min: %d lists, %d streaming lists, %d watches); fallbacks %v relists %v restarts %v\n",
			spec.id, c.name, res.Outcome(bounds), res.Requests, res.RequestsPerMinute, res.Lists, res.StreamingLists, res.Watches,
			res.Fallbacks, res.Relists, res.WatchRestarts)
		if !isSteadywatch(c.name) {
			continue
		}
		var bad []string
		if !res.Synced {
			bad = append(bad, fmt.Sprintf("not synced within %s", syncBound))
		}
		if !res.Converged {
			bad = append(bad, fmt.Sprintf("store not equal to the Exact list at %s within %s (store %v, want %v)", lastRV, convergeBound, c.state(), want))
		}
		if len(res.Regressions) > 0 {
			bad = append(bad, "went back in time: "+strings.Join(res.Regressions, "; "))
		}
		if res.RequestsPerMinute > bounds.MaxRequestsPerMinute {
			bad = append(bad, fmt.Sprintf("%.0f requests/min > %.0f", res.RequestsPerMinute, bounds.MaxRequestsPerMinute))
		}
		if len(bad) > 0 {
			c.logRequests()
			failures = append(failures, c.name+": "+strings.Join(bad, ", "))
		}
	}
	result.Notes = rr.notes
	for _, n := range rr.notes {
		fmt.Fprintf(GinkgoWriter, "row %s note: %s\n", spec.id, n)
	}
	record(result)
	Expect(failures).To(BeEmpty(), "steadywatch in row %s", spec.id)
}

// plainWatch: a watch without sendInitialEvents.
func plainWatch(q url.Values) bool { return isWatch(q) && !isStreamingList(q) }

// Ordered only to share one cluster; ContinueOnFailure runs every row even
// when one fails.
var _ = Describe("Field failures on a current apiserver", Label("field-failures", "needs-faults"), Ordered, ContinueOnFailure, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: serverVersion()},
			"needs the harness's fault proxy in front of "+serverVersion())
	})
	streamFaults := func(f faults.StreamFaults) func(context.Context, *faults.Proxy, string) {
		return func(_ context.Context, p *faults.Proxy, _ string) { p.SetStreamFaults(f) }
	}

	It("survives a proxy that filters BOOKMARK events", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.BookmarksFiltered, arm: streamFaults(faults.StreamFaults{DropBookmarks: true})})
	})

	It("survives bookmarks without the initial-events-end annotation", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.InitialEventsEndMissing, arm: streamFaults(faults.StreamFaults{StripInitialEventsEnd: true})})
	})

	It("survives a streaming list cut right before its end bookmark, every time", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.CutBeforeEndBookmark, arm: streamFaults(faults.StreamFaults{CutBeforeInitialEventsEnd: true})})
	})

	It("survives a watch closed right after the end bookmark whose resourceVersion is then expired", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.ClosedAfterEndBookmark,
			arm: streamFaults(faults.StreamFaults{CloseAfterInitialEventsEnd: true, ExpireInitialEventsEndRV: true})})
	})

	It("survives watches answered 200 with no event instead of 410", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.EmptyWatch,
			afterSync: func(ctx context.Context, rr *rowRun) {
				stale := rr.currentRV(ctx) // every resourceVersion up to here is "compacted"
				for _, p := range rr.proxies() {
					p.Inject(faults.Rule{Resource: "configmaps", Namespace: rr.ns, EmptyWatch: true, Match: func(q url.Values) bool {
						rv := q.Get("resourceVersion")
						return plainWatch(q) && rv != "" && rv != "0" && !rvLess(stale, rv)
					}})
					p.DropWatches()
				}
			}})
	})

	It("survives consistent reads answered 429 while the watch cache lags", func(ctx SpecContext) {
		const lag = 8 * time.Second
		runRow(ctx, c, nil, row{id: fieldfailures.ConsistentRead429, arm: func(_ context.Context, p *faults.Proxy, ns string) {
			consistent := func(q url.Values) bool {
				return q.Get("resourceVersion") == "" && (!isWatch(q) || isStreamingList(q))
			}
			p.Inject(faults.Rule{Resource: "configmaps", Namespace: ns, Status: 429, RetryAfterSeconds: 1, Match: consistent})
			t := time.AfterFunc(lag, p.ClearRules)
			DeferCleanup(func() { t.Stop() })
		}})
	})

	It("survives streaming lists refused with 422 sendInitialEvents is forbidden", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.StreamingList422, arm: func(_ context.Context, p *faults.Proxy, ns string) {
			p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Query: map[string]string{"sendInitialEvents": "true"},
				Status: 422, Message: faults.SendInitialEventsForbiddenMessage})
		}})
	})

	It("survives a too-large resourceVersion error without its cause type (1.17.0-1.18.5)", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.TooLargeWithoutCause,
			afterSync: func(ctx context.Context, rr *rowRun) {
				current := rr.currentRV(ctx)
				for _, p := range rr.proxies() {
					p.Inject(faults.TooLargeResourceVersionLegacy(faults.Rule{Resource: "configmaps", Namespace: rr.ns, Match: func(q url.Values) bool {
						rv := q.Get("resourceVersion")
						return rv != "" && rv != "0" && !plainWatch(q)
					}}, current))
					p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: rr.ns, Status: 410, AsWatchEvent: true, Count: 1, Match: plainWatch})
					p.DropWatches()
				}
			}})
	})

	It("survives a server that ignores sendInitialEvents", func(ctx SpecContext) {
		runRow(ctx, c, nil, row{id: fieldfailures.SendInitialEventsIgnore, arm: func(_ context.Context, p *faults.Proxy, _ string) {
			p.StripParams("sendInitialEvents", "resourceVersionMatch")
			// A current server ends even a plain watch's initial state with
			// the annotated bookmark; one that ignores sendInitialEvents does not.
			p.SetStreamFaults(faults.StreamFaults{StripInitialEventsEnd: true})
		}})
	})
})

var _ = Describe("Field failures on an HA pair", Label("field-failures", "needs-faults", "ha"), Ordered, func() {
	It("survives an HA member whose watch cache is far behind", func(ctx SpecContext) {
		c := suite.StartHarness(ctx, harness.Options{Version: serverVersion(), HA: true},
			"needs the harness's HA pair of "+serverVersion()+" (pausing one apiserver)")
		a1 := c.APIServers()[1]
		runRow(ctx, c, nil, row{id: fieldfailures.HALaggingWatchCache,
			arm: func(_ context.Context, p *faults.Proxy, _ string) { p.Pin(0) },
			afterSync: func(_ context.Context, rr *rowRun) {
				// Freeze apiserver-1: its watch cache stops following etcd
				// while the row's writes go to apiserver-0.
				Expect(a1.Pause()).To(Succeed())
				DeferCleanup(a1.Resume)
			},
			afterWrites: func(ctx context.Context, rr *rowRun, lastRV string) {
				for _, p := range rr.proxies() {
					p.Pin(1)
					p.DropWatches()
				}
				// Every client's next request is waiting on the frozen apiserver-1.
				for _, cl := range rr.clients {
					Eventually(func() bool {
						for _, r := range cl.requests() {
							if len(r.Tried) > 0 && r.Tried[0] == 1 {
								return true
							}
						}
						return false
					}).WithTimeout(30*time.Second).Should(BeTrue(), "%s sent nothing to apiserver-1", cl.name)
				}
				// What a client starting now would get from apiserver-1.
				probe := make(chan string, 1)
				go func() {
					defer GinkgoRecover()
					l, err := suite.Clientset(a1.RESTConfig()).CoreV1().ConfigMaps(rr.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
					if err != nil {
						probe <- "error: " + err.Error()
						return
					}
					probe <- l.ResourceVersion
				}()
				Expect(a1.Resume()).To(Succeed())
				var probeRV string
				Eventually(probe).WithTimeout(30 * time.Second).Should(Receive(&probeRV))
				rr.notes = append(rr.notes, fmt.Sprintf("Right after apiserver-1 resumed, a resourceVersion=0 list from it was served at %s; the last write was %s (lag reproduced: %v).",
					probeRV, lastRV, rvLess(probeRV, lastRV)))
			}})
	})
})
