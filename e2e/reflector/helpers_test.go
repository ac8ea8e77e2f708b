package reflector_test

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/reflector"
)

// populate creates a namespace (deleted at cleanup) with n ConfigMaps cm-0..cm-<n-1>.
func populate(ctx context.Context, cs kubernetes.Interface, prefix string, n int) string {
	ns := suite.NewNamespace(ctx, cs, prefix)
	suite.CreateConfigMaps(ctx, cs, ns, n, nil)
	return ns
}

// rvLog is a store that records every resourceVersion the reflector reports
// (Replace and UpdateResourceVersion) and every object resourceVersion it
// stores, to check that nothing ever goes back in time.
type rvLog struct {
	cache.Store
	mu       sync.Mutex
	rvs      []string
	backward []string // "key: old -> new" for an object whose RV went down
}

func newRVLog() *rvLog { return &rvLog{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)} }

func (s *rvLog) note(rv string) { s.mu.Lock(); s.rvs = append(s.rvs, rv); s.mu.Unlock() }

func (s *rvLog) UpdateResourceVersion(rv string) { s.note(rv) }

func (s *rvLog) Replace(items []any, rv string) error {
	for _, it := range items {
		s.checkForward(it)
	}
	s.note(rv)
	return s.Store.Replace(items, rv)
}

func (s *rvLog) Update(obj any) error { s.checkForward(obj); return s.Store.Update(obj) }

func (s *rvLog) checkForward(obj any) {
	n := obj.(*corev1.ConfigMap)
	old, ok, _ := s.Store.Get(n)
	if !ok {
		return
	}
	if o := old.(*corev1.ConfigMap); rvLess(n.ResourceVersion, o.ResourceVersion) {
		s.mu.Lock()
		s.backward = append(s.backward, fmt.Sprintf("%s/%s: %s -> %s", n.Namespace, n.Name, o.ResourceVersion, n.ResourceVersion))
		s.mu.Unlock()
	}
}

func (s *rvLog) wentBack() (backward []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	backward = append(backward, s.backward...)
	for i := 1; i < len(s.rvs); i++ {
		if rvLess(s.rvs[i], s.rvs[i-1]) {
			backward = append(backward, fmt.Sprintf("store RV %s -> %s", s.rvs[i-1], s.rvs[i]))
		}
	}
	return backward
}

// state is key -> object resourceVersion of every ConfigMap in the store.
func (s *rvLog) state() map[string]string {
	out := map[string]string{}
	for _, o := range s.List() {
		cm := o.(*corev1.ConfigMap)
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out
}

// truth is key -> resourceVersion from a fresh MostRecent (consistent) list.
func truth(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out, nil
}

// expectStoreEqualsTruth waits until the store holds exactly what a fresh
// MostRecent list returns (keys and object resourceVersions). Call it after
// the last write to ns. The list is repeated on every poll: on a real
// cluster controllers may add objects of their own to a new namespace
// (kube-root-ca.crt), and the store must follow those too.
func expectStoreEqualsTruth(ctx context.Context, cs kubernetes.Interface, run *running, ns string) {
	Eventually(func(g Gomega) {
		want, err := truth(ctx, cs, ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(run.store.state()).To(Equal(want))
	}).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(),
		"the store must equal a fresh MostRecent list of %s", ns)
}

func rvLess(a, b string) bool {
	var x, y uint64
	_, e1 := fmt.Sscan(a, &x)
	_, e2 := fmt.Sscan(b, &y)
	return e1 == nil && e2 == nil && x < y
}

func rvAtLeast(a, b string) bool { return a != "" && !rvLess(a, b) }

type running struct {
	r     *reflector.Reflector
	store *rvLog
	stop  func()
}

// detectorServer is what a user would pass: a compat Detector's Server
// for cfg (its /version through cfg, e.g. through a proxy).
func detectorServer(cfg *rest.Config) compat.Server {
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return srv
}

// runReflector starts a ConfigMap reflector on ns through cfg, with a compat
// Detector's Server unless o.Lister.Server is set; it is stopped (and waited for)
// at cleanup.
func runReflector(cfg *rest.Config, ns string, o reflector.Options) *running {
	if o.Lister.Server == nil {
		o.Lister.Server = detectorServer(cfg)
	}
	store := newRVLog()
	r := reflector.New(suite.ConfigMaps(suite.Clientset(cfg), ns), &corev1.ConfigMap{}, store, o)
	stop := testfake.Start(GinkgoTB(), context.Background(), r.Run)
	return &running{r: r, store: store, stop: stop}
}

func waitSynced(r *reflector.Reflector, d time.Duration) {
	Eventually(r.HasSynced).WithTimeout(d).WithPolling(5 * time.Millisecond).Should(BeTrue())
}

func query(req faults.Request) url.Values {
	v, err := url.ParseQuery(req.RawQuery)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// requests returns the proxy's logged requests on configmaps in ns, of verb
// ("" = any), oldest first.
func requests(p *faults.Proxy, verb, ns string) []faults.Request {
	var out []faults.Request
	for _, r := range p.Requests() {
		if (verb == "" || r.Verb == verb) && r.Resource == "configmaps" && r.Namespace == ns {
			out = append(out, r)
		}
	}
	return out
}

func isStreamingList(r faults.Request) bool {
	return r.Verb == "watch" && query(r).Get("sendInitialEvents") == "true"
}

// expectRecovery resets p's request log, ends the reflector's one watch
// with end (p.DropWatches or p.EndWatches), waits until it has relisted and
// watches again past last, and records the time that took as a TIMING line
// named what.
func expectRecovery(p *faults.Proxy, run *running, ns, last string, end func() int, what string) {
	GinkgoHelper()
	p.ResetRequests()
	ended := time.Now()
	Expect(end()).To(Equal(1))
	Eventually(func() bool {
		s := run.r.State()
		return len(relists(p, ns)) > 0 && s.Phase == reflector.PhaseWatching && rvLess(last, s.ResourceVersion)
	}).WithTimeout(60*time.Second).WithPolling(10*time.Millisecond).Should(BeTrue(), "the reflector did not recover")
	suite.Timing(what, time.Since(ended))
}

// relists are the requests that (re)fill a store: lists and streaming lists.
func relists(p *faults.Proxy, ns string) []faults.Request {
	var out []faults.Request
	for _, r := range requests(p, "", ns) {
		if r.Verb == "list" && isCountProbe(r) {
			continue // the streaming-list guard's count, not a fill
		}
		if r.Verb == "list" || isStreamingList(r) {
			out = append(out, r)
		}
	}
	return out
}

// plainWatches are watches without sendInitialEvents.
func plainWatches(p *faults.Proxy, ns string) []faults.Request {
	var out []faults.Request
	for _, r := range requests(p, "watch", ns) {
		if !isStreamingList(r) {
			out = append(out, r)
		}
	}
	return out
}

func logRequests(title string, reqs []faults.Request) {
	fmt.Fprintf(GinkgoWriter, "%s:\n", title)
	for _, r := range reqs {
		fmt.Fprintf(GinkgoWriter, "  #%d %s %s?%s -> backend %d status %d fault=%q err=%q\n",
			r.Seq, r.Verb, r.Path, r.RawQuery, r.Backend, r.Status, r.Fault, r.Err)
	}
}

// goroutines returns the stacks of live goroutines running code of the
// reflector, the lister, or a client-go watch stream decoder.
func goroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "steadywatch/steadywatch/reflector.") ||
			strings.Contains(g, "steadywatch/steadywatch/lister.") ||
			strings.Contains(g, "watch.(*StreamWatcher).receive") {
			out = append(out, g)
		}
	}
	return out
}

// isCountProbe is the streaming-list guard's limit=1 MostRecent list
// (watchpipe.ExpectedInitialEvents), sent beside a streaming list: it counts
// the objects to expect, it does not fill the store.
func isCountProbe(r faults.Request) bool {
	q := query(r)
	return q.Get("limit") == "1" && q.Get("resourceVersion") == "" && q.Get("continue") == ""
}

// withoutCountProbes drops the streaming-list guard's count probes.
func withoutCountProbes(rs []faults.Request) []faults.Request {
	var out []faults.Request
	for _, r := range rs {
		if !(r.Verb == "list" && isCountProbe(r)) {
			out = append(out, r)
		}
	}
	return out
}

// dropWatchAndAnswerResumeGone arms one 410 for the next resumed plain
// watch of ns's ConfigMaps (not a streaming list, not a watch from "" or
// "0"), resets p's request log, drops the one open watch and lifts the
// stall, so the reflector's resumption is answered 410 and it relists.
func dropWatchAndAnswerResumeGone(p *faults.Proxy, ns string) {
	GinkgoHelper()
	// The log is reset first: a resumption the rule answers is always in it.
	p.ResetRequests()
	p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true, Count: 1,
		Match: func(q url.Values) bool {
			return q.Get("sendInitialEvents") != "true" && q.Get("resourceVersion") != "" && q.Get("resourceVersion") != "0"
		}})
	Expect(p.DropWatches()).To(Equal(1))
	p.StallWatches(0)
}
