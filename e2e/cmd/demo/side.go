package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/metrics"
	"github.com/steadywatch/steadywatch/reflector"
)

// side is one of the two clients of a scene: client-go's stock informer or
// steadywatch's reflector, each behind its own fault proxy so that every
// request it sends is on record.
type side struct {
	who   string
	t     *timeline
	p     *faults.Proxy
	ns    string
	start time.Time

	hasSynced func() bool
	list      func() []any // the store's objects
	syncedIn  atomic.Int64 // nanoseconds; 0 = not synced (yet)
	backward  atomic.Int64 // object or store resourceVersions that went back in time

	mu        sync.Mutex
	decision  string         // ours: how it chose to sync, when that is a fallback
	fallbacks map[string]int // ours: lister fallback reasons (metrics.Recorder.Fallback)
	relists   map[string]int // ours: reflector relist causes (metrics.Recorder.Relist)
	printed   map[int]bool   // proxy request Seq already on the timeline
	exp       expected       // faults the scene causes on purpose
	wg        sync.WaitGroup
}

func newSide(who string, t *timeline, p *faults.Proxy, ns string) *side {
	return &side{who: who, t: t, p: p, ns: ns, start: time.Now(),
		fallbacks: map[string]int{}, relists: map[string]int{}, printed: map[int]bool{}}
}

// requests returns this side's logged requests on configmaps in its namespace.
func (s *side) requests() []faults.Request {
	var out []faults.Request
	for _, r := range s.p.Requests() {
		if r.Resource == "configmaps" && r.Namespace == s.ns {
			out = append(out, r)
		}
	}
	return out
}

// follow prints every request as the proxy answers it (polling; the
// reflector's log lines and the scene's verdict flush it too), and notes the
// sync.
func (s *side) follow(ctx context.Context) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			s.printNew()
			if s.syncedIn.Load() == 0 && s.hasSynced() {
				d := time.Since(s.start)
				s.syncedIn.Store(int64(d))
				s.t.say(s.who, "SYNCED        %d objects in %v", len(s.list()), d.Round(time.Millisecond))
			}
			select {
			case <-ctx.Done():
				s.printNew()
				return
			case <-tick.C:
			}
		}
	}()
}

func (s *side) printNew() {
	for _, r := range s.requests() {
		if r.Status == 0 && !r.Done {
			continue
		}
		s.mu.Lock()
		seen := s.printed[r.Seq]
		s.printed[r.Seq] = true
		s.mu.Unlock()
		if !seen {
			s.t.sayRequest(s.who, r)
		}
	}
}

// synced returns the sync time, or false if the side never synced.
func (s *side) synced() (time.Duration, bool) {
	d := s.syncedIn.Load()
	return time.Duration(d), d != 0
}

// syncs counts the lists and streaming lists the side sent (its first sync
// and every relist), as seen on the wire.
func (s *side) syncs() int {
	n := 0
	for _, r := range s.requests() {
		if isSync(r) {
			n++
		}
	}
	return n
}

// storeRVs returns name -> resourceVersion of the side's store.
func (s *side) storeRVs() map[string]string {
	out := map[string]string{}
	for _, o := range s.list() {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			out[cm.Name] = cm.ResourceVersion
		}
	}
	return out
}

// ---- stock: client-go's SharedInformerFactory, client-go's defaults ----

func startStock(ctx context.Context, t *timeline, p *faults.Proxy, cfg *rest.Config, ns string) (*side, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := newSide("stock", t, p, ns)
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().ConfigMaps().Informer()
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		text, _ := s.exp.label(err.Error())
		t.say("stock", "watch error   %s", text)
	}); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.ConfigMap), cur.(*corev1.ConfigMap)
			if rvLess(n.ResourceVersion, o.ResourceVersion) {
				s.backward.Add(1)
				t.say("stock", "WENT BACK     %s/%s resourceVersion %s -> %s", n.Namespace, n.Name, o.ResourceVersion, n.ResourceVersion)
			}
		},
	}); err != nil {
		return nil, err
	}
	s.hasSynced = inf.HasSynced
	s.list = inf.GetStore().List
	f.Start(ctx.Done())
	s.follow(ctx)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); <-ctx.Done(); f.Shutdown() }()
	return s, nil
}

// ---- ours: steadywatch's reflector ----

// recorder counts what the reflector and its lister report.
type recorder struct {
	metrics.Nop
	s *side
}

func (r recorder) Fallback(_, reason string) {
	r.s.mu.Lock()
	r.s.fallbacks[reason]++
	r.s.mu.Unlock()
}

func (r recorder) Relist(_, cause string) {
	r.s.mu.Lock()
	r.s.relists[cause]++
	r.s.mu.Unlock()
}

// rvStore is a cache.Store that counts resourceVersions going back in time.
type rvStore struct {
	cache.Store
	s    *side
	mu   sync.Mutex
	last string
}

func (st *rvStore) note(rv string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.last != "" && rvLess(rv, st.last) {
		st.s.backward.Add(1)
		st.s.t.say(st.s.who, "WENT BACK     store resourceVersion %s -> %s", st.last, rv)
	}
	st.last = rv
}

func (st *rvStore) UpdateResourceVersion(rv string) { st.note(rv) }

func (st *rvStore) Replace(items []any, rv string) error {
	for _, it := range items {
		st.checkObject(it)
	}
	st.note(rv)
	return st.Store.Replace(items, rv)
}

func (st *rvStore) Update(obj any) error { st.checkObject(obj); return st.Store.Update(obj) }

func (st *rvStore) checkObject(obj any) {
	n, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	old, exists, _ := st.Store.Get(n)
	if !exists {
		return
	}
	if o := old.(*corev1.ConfigMap); rvLess(n.ResourceVersion, o.ResourceVersion) {
		st.s.backward.Add(1)
		st.s.t.say(st.s.who, "WENT BACK     %s/%s resourceVersion %s -> %s", n.Namespace, n.Name, o.ResourceVersion, n.ResourceVersion)
	}
}

func startOurs(ctx context.Context, t *timeline, p *faults.Proxy, cfg *rest.Config, ns string) (*side, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := newSide("ours", t, p, ns)
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	if err != nil {
		return nil, err
	}
	caps := srv.Capabilities(ctx)
	t.say("ours", "server        %s", caps)
	if caps.Get(compat.StreamingList) != compat.Yes {
		t.say("ours", "decision      no streaming list (%s): a list from the watch cache instead", caps.Reasons[compat.StreamingList])
		basis, _, _ := strings.Cut(caps.Reasons[compat.StreamingList], ":")
		s.decision = fmt.Sprintf("streaming list unsupported (%s) -> list from the watch cache", basis)
	} else {
		t.say("ours", "decision      streaming list (%s)", caps.Reasons[compat.StreamingList])
	}
	store := &rvStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), s: s}
	client, err := lister.FromClientset(cs, &corev1.ConfigMap{}, ns)
	if err != nil {
		return nil, err
	}
	r := reflector.New(client, &corev1.ConfigMap{}, store, reflector.Options{
		Lister: lister.Options{
			Name:    "ours",
			Server:  srv,
			Metrics: recorder{s: s},
			// Above the apiserver's bookmark interval (about a minute), shorter
			// than the default 3m.
			StallTimeout: 75 * time.Second,
		},
	})
	s.hasSynced = r.HasSynced
	s.list = store.List
	lctx := klog.NewContext(ctx, logr.New(&logSink{t: t, who: "ours", exp: &s.exp, flush: s.printNew}))
	s.wg.Add(1)
	go func() { defer s.wg.Done(); r.Run(lctx) }()
	s.follow(ctx)
	return s, nil
}

// ---- truth ----

// truth is a fresh MostRecent (consistent) list straight from the apiserver.
func truth(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out, l.ResourceVersion, nil
}

// diff describes how got differs from want ("" if equal).
func diff(got, want map[string]string) string {
	var missing, extra, stale []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != v:
			stale = append(stale, fmt.Sprintf("%s@%s(want %s)", k, g, v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	var parts []string
	for _, p := range []struct {
		name string
		keys []string
	}{{"missing", missing}, {"extra", extra}, {"stale", stale}} {
		if len(p.keys) == 0 {
			continue
		}
		sort.Strings(p.keys)
		n, more := len(p.keys), ""
		if n > 4 {
			more = fmt.Sprintf(" +%d more", n-4)
			p.keys = p.keys[:4]
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s%s)", n, p.name, strings.Join(p.keys, ", "), more))
	}
	return strings.Join(parts, "; ")
}

func rvLess(a, b string) bool {
	x, e1 := strconv.ParseUint(a, 10, 64)
	y, e2 := strconv.ParseUint(b, 10, 64)
	return e1 == nil && e2 == nil && x < y
}
