// Package matrix produces steadywatch's compatibility matrix: for each
// kube-apiserver version and configuration (watch cache on, off, an HA pair,
// and for a pair of versions a mixed-version HA pair as in a rolling upgrade)
// it starts a real control plane with the harness and runs a short scenario
// battery twice, once with steadywatch and once with a stock client-go
// v0.37 informer, and records what each did. Markdown renders the result as
// the table published in docs/compatibility.md; cmd/matrix drives it.
//
// The table is generated, never written by hand: every cell is an outcome
// measured on a real server in this run.
//
// It is not a conformance suite (the Ginkgo suites assert; this records,
// with bounded timeouts, so a client that never syncs is a cell, not a hang).
package matrix

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// Config is one control-plane configuration.
type Config struct {
	Name              string `json:"name"`
	DisableWatchCache bool   `json:"disableWatchCache,omitempty"`
	HA                bool   `json:"ha,omitempty"`
	// Mixed: an HA pair whose members run different releases; the row's
	// server is "old+new" (see Run).
	Mixed bool `json:"mixed,omitempty"`
}

// ConfigMixed names the mixed-version configuration.
const ConfigMixed = "mixed-version HA pair (old+new; alternating LB)"

// Configs are the configurations the matrix covers. The mixed one applies
// to version pairs only, the others to single versions only.
var Configs = []Config{
	{Name: "watch cache on"},
	{Name: "watch cache off", DisableWatchCache: true},
	{Name: "HA pair (alternating LB)", HA: true},
	{Name: ConfigMixed, HA: true, Mixed: true},
}

// IsPair reports whether server names a mixed-version pair ("old+new").
func IsPair(server string) bool { return strings.Contains(server, "+") }

// Clients.
const (
	Ours  = "steadywatch"
	Stock = "client-go v0.37 (stock)"
)

// Scenarios, in table order.
const (
	ScenarioSync      = "initial sync (reflector.New)"
	ScenarioStream    = "initial list path"
	ScenarioDropIn    = "initial sync (drop-in informer; client-go asks for a streaming list)"
	ScenarioFactory   = "initial sync (informer factory)"
	ScenarioInfFor    = "initial sync (controller-runtime's NewInformerFor)"
	ScenarioGoneAll   = "recovery from 410 (informer factory, NewInformerFor)"
	ScenarioExact     = "Exact list at an older RV"
	ScenarioGone      = "recovery from 410 (compaction + watch 410)"
	ScenarioNotOlder  = "NotOlderThan+limit list at a compacted RV"
	initialObjects    = 20 // created before rv0
	laterObjects      = 5  // created after rv0
	notOlderThanLimit = 5  // page size of the NotOlderThan list
)

// Scenarios lists the scenarios in table order.
var Scenarios = []string{ScenarioSync, ScenarioStream, ScenarioDropIn, ScenarioFactory, ScenarioInfFor, ScenarioExact, ScenarioGone, ScenarioGoneAll, ScenarioNotOlder}

// Outcomes of a cell.
const (
	Pass = "pass" // correct result
	Fail = "FAIL" // wrong or no result within the bound
	NA   = "n/a"  // could not be run (an earlier scenario failed)
)

// Cell is one client's result in one scenario.
type Cell struct {
	Scenario string  `json:"scenario"`
	Client   string  `json:"client"`
	Outcome  string  `json:"outcome"`
	Detail   string  `json:"detail"`
	Seconds  float64 `json:"seconds,omitempty"`
}

// Row is one server x config.
type Row struct {
	Server string `json:"server"`
	Config Config `json:"config"`
	Cells  []Cell `json:"cells"`
	Err    string `json:"error,omitempty"` // the row could not be run (e.g. no binary)
	// Run is the 1-based index in Report.Runs of the run that measured the
	// row (0: the report's own run).
	Run int `json:"run,omitempty"`
}

// Cell returns the cell for scenario and client (zero Cell if none).
func (r Row) Cell(scenario, client string) Cell {
	for _, c := range r.Cells {
		if c.Scenario == scenario && c.Client == client {
			return c
		}
	}
	return Cell{Scenario: scenario, Client: client, Outcome: NA}
}

// Options bound a Run.
type Options struct {
	// SyncTimeout bounds the initial sync and each recovery. Default 30s.
	SyncTimeout time.Duration
	// Progress receives harness progress; nil = discard.
	Progress io.Writer
}

// Run starts a control plane of version with cfg, runs the battery for both
// clients and stops it. With cfg.Mixed, version is a pair "old+new"
// (apiserver-0 runs old, apiserver-1 new). Cluster start failures are
// returned; scenario failures are cells.
func Run(ctx context.Context, version string, cfg Config, o Options) (Row, error) {
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 30 * time.Second
	}
	row := Row{Server: version, Config: cfg}
	ho := harness.Options{Version: version, DisableWatchCache: cfg.DisableWatchCache, HA: cfg.HA, Progress: o.Progress}
	if cfg.Mixed != IsPair(version) {
		return row, fmt.Errorf("configuration %q does not apply to %q (mixed needs \"old+new\", the others one version)", cfg.Name, version)
	}
	if cfg.Mixed {
		ho.Version, ho.Versions = "", strings.Split(version, "+")
	}
	c, err := harness.Start(ctx, ho)
	if err != nil {
		return row, err
	}
	defer c.Stop()
	for _, client := range []string{Ours, Stock} {
		cells, err := runClient(ctx, c, cfg, client, o)
		if err != nil {
			return row, fmt.Errorf("%s: %w", client, err)
		}
		row.Cells = append(row.Cells, cells...)
	}
	return row, nil
}

// informer is what the battery needs from either client.
type informer struct {
	synced func() bool
	has    func(name string) bool
	stop   func()
}

// configMaps is the steadywatch Client of the ConfigMaps in ns.
func configMaps(cs kubernetes.Interface, ns string) lister.Client {
	cms := cs.CoreV1().ConfigMaps(ns)
	return lister.FromFuncs(cms.List, cms.Watch)
}

// startDropIn starts client-go's own SharedIndexInformer over steadywatch's
// ListerWatcher: the one-line adoption the README shows. client-go v0.37
// asks it for a streaming list first; the ListerWatcher decides.
func startDropIn(ctx context.Context, cs kubernetes.Interface, srv compat.Server, ns string) informer {
	ctx, cancel := context.WithCancel(ctx)
	lw := lister.NewListerWatcher(configMaps(cs, ns), lister.Options{Name: "matrix-dropin", Server: srv})
	return running(ctx, cancel, cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}), ns)
}

// startFactory starts the ConfigMap informer of steadywatch's informer
// factory (reflector.NewSharedInformerFactoryWithOptions): a client-go
// factory user's one-line adoption, steadywatch's own informer over a
// reflector that decodes lists item by item.
func startFactory(ctx context.Context, cs kubernetes.Interface, srv compat.Server, ns string) informer {
	ctx, cancel := context.WithCancel(ctx)
	return ofFactory(ctx, cancel, reflector.NewSharedInformerFactoryWithOptions(cs, 0, lister.Options{Name: "matrix-factory", Server: srv}, informers.WithNamespace(ns)), ns)
}

// startInformerFor starts an informer as controller-runtime's cache builds
// one through its NewInformer hook set to reflector.NewInformerFor(cfg): a
// typed ListWatch of the namespace, the example object, the namespace index.
func startInformerFor(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, srv compat.Server, ns string) informer {
	ctx, cancel := context.WithCancel(ctx)
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	return running(ctx, cancel, reflector.NewInformerFor(cfg, lister.Options{Server: srv})(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), ns)
}

// startInformer starts the client's informer of the battery: steadywatch's
// reflector.New, or stock client-go's factory informer.
func startInformer(ctx context.Context, client string, cs kubernetes.Interface, srv compat.Server, ns string) informer {
	ctx, cancel := context.WithCancel(ctx)
	if client == Ours {
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		r := reflector.New(configMaps(cs, ns), &corev1.ConfigMap{}, store, reflector.Options{Lister: lister.Options{Name: "matrix", Server: srv}})
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		return informer{synced: r.HasSynced, has: storeHas(store, ns), stop: func() { cancel(); <-done }}
	}
	return ofFactory(ctx, cancel, informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns)), ns)
}

// running runs inf until cancel is called.
func running(ctx context.Context, cancel context.CancelFunc, inf cache.SharedIndexInformer, ns string) informer {
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	return informer{synced: inf.HasSynced, has: storeHas(inf.GetStore(), ns), stop: func() { cancel(); <-done }}
}

// ofFactory starts f and returns its ConfigMap informer, shut down with f.
func ofFactory(ctx context.Context, cancel context.CancelFunc, f informers.SharedInformerFactory, ns string) informer {
	inf := f.Core().V1().ConfigMaps().Informer()
	f.Start(ctx.Done())
	return informer{synced: inf.HasSynced, has: storeHas(inf.GetStore(), ns), stop: func() { cancel(); f.Shutdown() }}
}

// storeHas reports whether store holds the ConfigMap name of ns.
func storeHas(store cache.Store, ns string) func(name string) bool {
	return func(name string) bool { _, ok, _ := store.GetByKey(ns + "/" + name); return ok }
}

// timeUntil returns how long cond took to become true (polled every 20ms),
// or false after d or when ctx ends.
func timeUntil(ctx context.Context, d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	err := poll.Within(ctx, d, 20*time.Millisecond, cond)
	return time.Since(start), err == nil
}

func runClient(ctx context.Context, c *harness.Cluster, cfg Config, client string, o Options) ([]Cell, error) {
	p, pcfg, err := c.NewProxy(ctx)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if cfg.HA {
		p.Alternate()
	}
	admin, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return nil, err
	}
	nsObj, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "matrix-"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	ns := nsObj.Name
	var rv0 string
	var created []string // creation RVs of every object (none is deleted)
	for i := 0; i < initialObjects; i++ {
		cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("initial-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		rv0 = cm.ResourceVersion
		created = append(created, cm.ResourceVersion)
	}
	for i := 0; i < laterObjects; i++ { // newer than rv0
		cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("later-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		created = append(created, cm.ResourceVersion)
	}
	cell := func(s, outcome, detail string, d time.Duration) Cell {
		return Cell{Scenario: s, Client: client, Outcome: outcome, Detail: detail, Seconds: d.Seconds()}
	}
	var cells []Cell

	// Exact list at rv0 (before compaction, which comes later).
	cells = append(cells, exactCell(ctx, client, cs, ns, rv0, cell))

	var srv compat.Server
	if client == Ours {
		if srv, err = compat.NewDetector(compat.DetectorOptions{}).ForConfig(pcfg); err != nil {
			return nil, err
		}
		// The drop-in informer first, on its own, so the proxy's log is its own.
		p.ResetRequests()
		d := startDropIn(ctx, cs, srv, ns)
		took, ok := timeUntil(ctx, o.SyncTimeout, d.synced)
		d.stop()
		cells = append(cells, syncCell(ScenarioDropIn, took, ok, o.SyncTimeout, "; "+listPath(p.Requests(), ns, ok), cell))
		adopted, err := adoptionCells(ctx, c, p, admin, ns, &created, o, map[string]func() informer{
			ScenarioFactory: func() informer { return startFactory(ctx, cs, srv, ns) },
			ScenarioInfFor:  func() informer { return startInformerFor(ctx, pcfg, cs, srv, ns) },
		}, cell)
		if err != nil {
			return nil, err
		}
		cells = append(cells, adopted...)
	}
	p.ResetRequests()
	inf := startInformer(ctx, client, cs, srv, ns)
	defer inf.stop()
	took, ok := timeUntil(ctx, o.SyncTimeout, inf.synced)
	cells = append(cells, syncCell(ScenarioSync, took, ok, o.SyncTimeout, "", cell))
	if client == Stock { // the stock informer is the baseline of every sync row
		for _, s := range []string{ScenarioDropIn, ScenarioFactory, ScenarioInfFor} {
			cells = append(cells, syncCell(s, took, ok, o.SyncTimeout, " (the stock informer)", cell))
		}
	}
	// The list path is informative; it is only correct if it led to a sync.
	path := Pass
	if !ok {
		path = Fail
	}
	cells = append(cells, cell(ScenarioStream, path, listPath(p.Requests(), ns, ok), 0))
	if !ok {
		cells = append(cells, cell(ScenarioGone, NA, "not synced", 0))
		if client == Stock {
			cells = append(cells, cell(ScenarioGoneAll, NA, "not synced (the stock informer)", 0))
		}
		if _, err := c.Etcd().Compact(ctx); err != nil {
			return nil, err
		}
		cells = append(cells, notOlderCell(ctx, client, cs, ns, rv0, created, cell))
		return cells, nil
	}

	// 410: compact etcd, then make the next watch get a 410 event, then write.
	if _, err := c.Etcd().Compact(ctx); err != nil {
		return nil, err
	}
	p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true, Count: 1, Query: map[string]string{"resourceVersion": ""}})
	p.EndWatches()
	after, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-410"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	created = append(created, after.ResourceVersion)
	took, ok = timeUntil(ctx, o.SyncTimeout, func() bool { return inf.has("after-410") })
	gone := cell(ScenarioGone, Pass, fmt.Sprintf("caught up in %.2fs", took.Seconds()), took)
	if !ok {
		gone = cell(ScenarioGone, Fail, fmt.Sprintf("object created after the 410 not seen within %s", o.SyncTimeout), 0)
	}
	cells = append(cells, gone)
	if client == Stock { // the stock informer is the baseline of the adoption paths' row
		gone.Scenario, gone.Detail = ScenarioGoneAll, gone.Detail+" (the stock informer)"
		cells = append(cells, gone)
	}
	// rv0 is compacted now: NotOlderThan(rv0)+limit is what a server that
	// ignores resourceVersionMatch serves as legacy Exact, so 410.
	cells = append(cells, notOlderCell(ctx, client, cs, ns, rv0, created, cell))
	return cells, nil
}

// adoptionCells runs each adoption path (scenario: start) in turn on ns:
// its initial sync (a cell of that scenario, with the list path it took),
// then a 410 as in the reflector's recovery scenario: etcd compacted, the
// path's next watch answered with a 410 ERROR event, an object created
// afterwards (its creation resourceVersion appended to created) that must
// reach its store. The recoveries of every path make
// one ScenarioGoneAll cell, correct only if each path relisted (the 410 was
// met) and caught up.
func adoptionCells(ctx context.Context, c *harness.Cluster, p *faults.Proxy, admin kubernetes.Interface, ns string, created *[]string, o Options, paths map[string]func() informer, cell func(string, string, string, time.Duration) Cell) ([]Cell, error) {
	var cells []Cell
	var recovered []string
	outcome, longest := Pass, time.Duration(0)
	for _, scenario := range []string{ScenarioFactory, ScenarioInfFor} {
		start, ok := paths[scenario]
		if !ok {
			continue
		}
		p.ResetRequests()
		inf := start()
		took, synced := timeUntil(ctx, o.SyncTimeout, inf.synced)
		cells = append(cells, syncCell(scenario, took, synced, o.SyncTimeout, "; "+listPath(p.Requests(), ns, synced), cell))
		name := strings.TrimPrefix(strings.TrimSuffix(scenario, ")"), "initial sync (")
		if !synced {
			inf.stop()
			outcome = Fail
			recovered = append(recovered, name+": not synced")
			continue
		}
		if _, err := c.Etcd().Compact(ctx); err != nil {
			inf.stop()
			return nil, err
		}
		p.ResetRequests()
		p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true, Count: 1, Query: map[string]string{"resourceVersion": ""}})
		p.EndWatches()
		obj := "after-410-" + strconv.Itoa(len(recovered))
		cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: obj}}, metav1.CreateOptions{})
		if err != nil {
			inf.stop()
			return nil, err
		}
		*created = append(*created, cm.ResourceVersion)
		took, ok = timeUntil(ctx, o.SyncTimeout, func() bool { return inf.has(obj) })
		inf.stop()
		met, relisted := metGone(p.Requests(), ns)
		switch {
		case !ok:
			outcome = Fail
			recovered = append(recovered, fmt.Sprintf("%s: object created after the 410 not seen within %s", name, o.SyncTimeout))
		case !met || !relisted:
			outcome = Fail
			recovered = append(recovered, fmt.Sprintf("%s: caught up without the 410 (met %t, relisted %t)", name, met, relisted))
		default:
			longest = max(longest, took)
			recovered = append(recovered, fmt.Sprintf("%s caught up in %.2fs", name, took.Seconds()))
		}
	}
	return append(cells, cell(ScenarioGoneAll, outcome, strings.Join(recovered, "; "), longest)), nil
}

// metGone reports whether a watch of ns met the injected 410 and whether
// a list of ns (or a streaming list) followed it.
func metGone(reqs []faults.Request, ns string) (met, relisted bool) {
	for _, r := range reqs {
		if r.Resource != "configmaps" || r.Namespace != ns {
			continue
		}
		if !met {
			met = r.Verb == "watch" && r.Fault != ""
			continue
		}
		q, _ := url.ParseQuery(r.RawQuery)
		if r.Verb == "list" || q.Get("sendInitialEvents") == "true" {
			relisted = true
		}
	}
	return met, relisted
}

// syncCell is the cell of an initial sync that took took (ok) within bound.
func syncCell(scenario string, took time.Duration, ok bool, bound time.Duration, suffix string, cell func(string, string, string, time.Duration) Cell) Cell {
	if !ok {
		return cell(scenario, Fail, fmt.Sprintf("never synced within %s%s", bound, suffix), 0)
	}
	return cell(scenario, Pass, fmt.Sprintf("synced in %.2fs%s", took.Seconds(), suffix), took)
}

// notOlderCell lists NotOlderThan(rv0) in pages of notOlderThanLimit after
// rv0 was compacted: correct is an RV not older than rv0 with exactly the
// objects created at or before it (created: their creation RVs; none was
// deleted); wrong is an error (the guarantee allows a newer answer,
// and a 410 is the legacy Exact a server without resourceVersionMatch
// applies, KEP-2523 rule 1), a list older than rv0 or missing objects.
// Stock client-go pages with its own pager.
func notOlderCell(ctx context.Context, client string, cs kubernetes.Interface, ns, rv0 string, created []string, cell func(string, string, string, time.Duration) Cell) Cell {
	start := time.Now()
	var served string
	var items int
	var err error
	if client == Ours {
		var obj k8sruntime.Object
		var rec *lister.Record
		obj, rec, err = lister.New(configMaps(cs, ns), lister.Options{Name: "matrix"}).List(ctx, lister.NotOlderThan(rv0).WithLimit(notOlderThanLimit))
		if err == nil {
			_, items, err = listMeta(obj)
			served = rec.ServedResourceVersion
		}
	} else {
		var obj k8sruntime.Object
		p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (k8sruntime.Object, error) {
			return cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		}))
		p.PageSize = notOlderThanLimit
		obj, _, err = p.ListWithAlloc(ctx, metav1.ListOptions{ResourceVersion: rv0, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err == nil { // several pages come back as one *metainternalversion.List
			served, items, err = listMeta(obj)
		}
	}
	took := time.Since(start)
	s, errS := strconv.ParseInt(served, 10, 64)
	r0, _ := strconv.ParseInt(rv0, 10, 64)
	want := 0
	for _, rv := range created {
		if n, _ := strconv.ParseInt(rv, 10, 64); n <= s {
			want++
		}
	}
	switch {
	case err != nil:
		return cell(ScenarioNotOlder, Fail, fmt.Sprintf("error for a list the server can answer: %.80s", err.Error()), took)
	case errS != nil || s < r0:
		return cell(ScenarioNotOlder, Fail, fmt.Sprintf("asked not older than %s, served %q", rv0, served), took)
	case items != want:
		return cell(ScenarioNotOlder, Fail, fmt.Sprintf("served at %s with %d items, want %d", served, items, want), took)
	default:
		return cell(ScenarioNotOlder, Pass, fmt.Sprintf("served at %s (%d items, pages of %d)", served, items, notOlderThanLimit), took)
	}
}

// listPath says how the initial list was obtained, from the proxy's log.
func listPath(reqs []faults.Request, ns string, synced bool) string {
	var streamed, listed, probes int
	for _, r := range reqs {
		if r.Resource != "configmaps" || r.Namespace != ns {
			continue
		}
		q, _ := url.ParseQuery(r.RawQuery)
		switch {
		case r.Verb == "watch" && q.Get("sendInitialEvents") == "true":
			streamed++
		case r.Verb == "list" && isCountProbe(q):
			probes++
		case r.Verb == "list":
			listed++
		}
	}
	if streamed == 0 { // a limit=1 list without a streaming list is a list
		listed, probes = listed+probes, 0
	}
	var parts []string
	if streamed > 0 {
		s := fmt.Sprintf("streaming list x%d", streamed)
		if probes > 0 {
			s += fmt.Sprintf(" (+ limit=1 read x%d)", probes)
		}
		parts = append(parts, s)
	}
	if listed > 0 {
		parts = append(parts, fmt.Sprintf("list x%d", listed))
	}
	if len(parts) == 0 {
		return "no list request"
	}
	s := strings.Join(parts, ", then ")
	if streamed > 0 && listed > 0 {
		s += " (fell back)"
	}
	if !synced {
		s += "; no sync"
	}
	return s
}

// isCountProbe: steadywatch's streaming-list guard sends one list with
// limit=1 and nothing else beside a streaming list, to learn how many
// initial events to expect (watchpipe.ExpectedInitialEvents), and
// NewInformerFor's scope check limit=1 lists, one of them at a
// resourceVersion; none is a fallback list.
func isCountProbe(q url.Values) bool {
	return q.Get("limit") == "1" && (len(q) == 1 || len(q) == 2 && q.Has("resourceVersion"))
}

// exactCell lists at Exact(rv0): correct is either the state at rv0
// (initialObjects items, ListMeta rv0) or an explicit error; wrong is
// another state presented as the answer.
func exactCell(ctx context.Context, client string, cs kubernetes.Interface, ns, rv0 string, cell func(string, string, string, time.Duration) Cell) Cell {
	start := time.Now()
	var served string
	var items int
	var err error
	if client == Ours {
		var obj k8sruntime.Object
		var rec *lister.Record
		obj, rec, err = lister.New(configMaps(cs, ns), lister.Options{Name: "matrix"}).List(ctx, lister.Exact(rv0))
		if err == nil {
			served, items = rec.ServedResourceVersion, len(obj.(*corev1.ConfigMapList).Items)
		}
	} else {
		var l *corev1.ConfigMapList
		l, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv0, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err == nil {
			served, items = l.ResourceVersion, len(l.Items)
		}
	}
	took := time.Since(start)
	switch {
	case err != nil:
		return cell(ScenarioExact, Pass, fmt.Sprintf("explicit error: %.80s", err.Error()), took)
	case served == rv0 && items == initialObjects:
		return cell(ScenarioExact, Pass, fmt.Sprintf("served at %s (%d items)", served, items), took)
	default:
		return cell(ScenarioExact, Fail, fmt.Sprintf("asked %s, silently served %s (%d items, want %d)", rv0, served, items, initialObjects), took)
	}
}

// listMeta returns a list object's resourceVersion and item count, whatever
// its Go type.
func listMeta(obj k8sruntime.Object) (rv string, items int, err error) {
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return "", 0, err
	}
	n, err := meta.ExtractList(obj)
	if err != nil {
		return "", 0, err
	}
	return lm.GetResourceVersion(), len(n), nil
}
