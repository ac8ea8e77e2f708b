package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/reflector"
)

// contender is one way of keeping a ConfigMap cache in sync.
type contender struct {
	Name string `json:"name"`
	Ours bool   `json:"ours"`
	// JSON forces application/json. Otherwise the clientset's default is
	// used, which for built-in types in client-go v0.37.2 is already
	// protobuf (gentype's UseProtobufAsDefaultIfPreferred).
	JSON bool   `json:"json"`
	Kind string `json:"kind"` // informer, sw-informer, sw-reflector
	// Env is added to the child's environment (client-go feature gates).
	Env []string `json:"env,omitempty"`
	// Reflector options for Kind sw-reflector.
	NoStream bool `json:"no_stream,omitempty"`
	// NoGzip sets rest.Config.DisableCompression: the apiserver then does
	// not gzip large list responses, nor (v1.37+, WatchListCompression)
	// streaming lists.
	NoGzip   bool  `json:"no_gzip,omitempty"`
	PageSize int64 `json:"page_size,omitempty"`
	// Paginate and MaxPageSize: reflector.Options.PaginateLists and
	// MaxPageSize for Kind sw-reflector.
	Paginate    bool  `json:"paginate,omitempty"`
	MaxPageSize int64 `json:"max_page_size,omitempty"`
	// CostLever: a lever for the apiserver cost (-cost-contenders), not in the
	// initial sync's default set.
	CostLever bool   `json:"cost_lever,omitempty"`
	Desc      string `json:"desc"`
	// CR: the contender keeps a cache of the bench's custom resources
	// (crGVR, JSON only: CRs have no protobuf) over a dynamic client.
	CR bool `json:"cr,omitempty"`
	// ListGate: the caches of one process share a listgate.Gate of this
	// many slots (0: none).
	ListGate int `json:"list_gate,omitempty"`
	gate     *listgate.Gate
	// NoCount: knobs.Lister.DisableInitialEventsCount (no limit=1 read
	// beside each streaming list) for Kind sw-informer.
	NoCount bool `json:"no_count,omitempty"`
	// Relist: an adoption path run in the relist memory scenario only,
	// not in the initial sync's default set.
	Relist bool `json:"relist,omitempty"`
}

// forProcess returns c with what the caches of one process share: its
// ListGate.
func (c contender) forProcess() contender {
	if c.ListGate > 0 {
		c.gate = listgate.New(c.ListGate)
	}
	return c
}

// The contenders. Stock = what a client-go v0.37.2 user gets; ours = the
// SDK as shipped (the InformerFor adoption path and reflector.New) plus
// variants that show each lever's share without changing the SDK.
var contenders = []contender{
	{Name: "stock", Kind: "informer",
		Desc: "client-go v0.37.2 SharedInformerFactory with its defaults: protobuf for built-in types, WatchListClient on (streaming list)"},
	{Name: "stock-json", Kind: "informer", JSON: true,
		Desc: "the same with the clientset forced to JSON (ContentType and Accept application/json)"},
	{Name: "stock-list", Kind: "informer", Env: []string{"KUBE_FEATURE_WatchListClient=false"},
		Desc: "the same defaults with WatchListClient=false: the classic list at resourceVersion 0 (limit 500, which the watch cache ignores), then watch"},
	{Name: "sw-informer", Kind: "sw-informer", Ours: true,
		Desc: "steadywatch as adopted (README, examples/informer): factory.InformerFor over lister.NewListerWatcher with a compat Detector (lists decoded item by item); same clientset defaults"},
	{Name: "sw-reflector", Kind: "sw-reflector", Ours: true,
		Desc: "steadywatch reflector.New(lister.FromClientset(...)) into an Indexer, compat Detector (streams the initial list where the server can; lists are decoded item by item); same clientset defaults"},
	{Name: "sw-reflector-json", Kind: "sw-reflector", Ours: true, JSON: true,
		Desc: "reflector.New over a clientset forced to JSON (what CRs get: custom resources have no protobuf encoding)"},
	{Name: "sw-reflector-pages", Kind: "sw-reflector", Ours: true, NoStream: true, PageSize: 500,
		Desc: "lever: reflector.New without streaming list: MostRecent list page by page (limit 500, decoded page by page)"},
	{Name: "sw-reflector-unpaged", Kind: "sw-reflector", Ours: true, NoStream: true, PageSize: -1,
		Desc: "lever: reflector.New without streaming list: one unpaginated MostRecent list"},
	{Name: "sw-reflector-pages-nogzip", Kind: "sw-reflector", Ours: true, NoStream: true, PageSize: 500, NoGzip: true,
		Desc: "lever: sw-reflector-pages with DisableCompression (no gzip of list responses)"},
	{Name: "sw-reflector-pages2k-nogzip", Kind: "sw-reflector", Ours: true, NoStream: true, PageSize: 2000, NoGzip: true,
		Desc: "lever: the same with limit 2000"},
	{Name: "sw-reflector-unpaged-nogzip", Kind: "sw-reflector", Ours: true, NoStream: true, PageSize: -1, NoGzip: true,
		Desc: "lever: sw-reflector-unpaged with DisableCompression"},
	// Levers for resources the watch cache does not hold (apiserver cost on
	// v1.37.2/nocache): no streaming list.
	{Name: "sw-informer-nostream", Kind: "sw-informer", Ours: true, NoStream: true, CostLever: true,
		Desc: "lever: sw-informer with lister.Options.DisableStreamingList (client-go's informer lists: resourceVersion 0, limit 500)"},
	{Name: "sw-reflector-nostream-paged", Kind: "sw-reflector", Ours: true, NoStream: true, Paginate: true, CostLever: true,
		Desc: "lever: reflector.New with DisableStreamingList and PaginateLists (pages of 500 growing to MaxPageSize 4000)"},
	{Name: "sw-reflector-nostream-paged500", Kind: "sw-reflector", Ours: true, NoStream: true, Paginate: true, MaxPageSize: -1, CostLever: true,
		Desc: "lever: reflector.New with DisableStreamingList, PaginateLists and MaxPageSize -1 (every page 500)"},
	// Without gzip (rest.Config.DisableCompression): kube-apiserver 1.37
	// gzips streaming lists (the WatchListCompression feature, beta and on)
	// for a client that accepts gzip, which Go's transport does by default.
	{Name: "stock-nogzip", Kind: "informer", NoGzip: true,
		Desc: "lever: stock with rest.Config.DisableCompression (no gzip of lists or streaming lists)"},
	{Name: "sw-informer-nogzip", Kind: "sw-informer", Ours: true, NoGzip: true,
		Desc: "lever: sw-informer with rest.Config.DisableCompression"},
	{Name: "sw-reflector-nogzip", Kind: "sw-reflector", Ours: true, NoGzip: true,
		Desc: "lever: sw-reflector with rest.Config.DisableCompression"},
	{Name: "sw-informer-gate1-nogzip", Kind: "sw-informer", Ours: true, ListGate: 1, NoGzip: true, CostLever: true,
		Desc: "lever: sw-informer-gate1 with rest.Config.DisableCompression"},
	// A process's initial lists queued through one listgate.Gate (apiserver cost on
	// servers where stock lists unpaginated).
	{Name: "sw-informer-nocount", Kind: "sw-informer", Ours: true, NoCount: true, CostLever: true,
		Desc: "lever: sw-informer with the initial-events count read turned off (no limit=1 count read beside each streaming list)"},
	{Name: "sw-informer-gate1", Kind: "sw-informer", Ours: true, ListGate: 1, CostLever: true,
		Desc: "lever: sw-informer with one listgate.Gate of 1 slot shared by the process's informers"},
	{Name: "sw-informer-gate2", Kind: "sw-informer", Ours: true, ListGate: 2, CostLever: true,
		Desc: "lever: sw-informer with one listgate.Gate of 2 slots shared by the process's informers"},
	{Name: "sw-reflector-gate1", Kind: "sw-reflector", Ours: true, ListGate: 1, CostLever: true,
		Desc: "lever: sw-reflector with one listgate.Gate of 1 slot shared by the process's reflectors"},
	{Name: "sw-reflector-gate2", Kind: "sw-reflector", Ours: true, ListGate: 2, CostLever: true,
		Desc: "lever: sw-reflector with one listgate.Gate of 2 slots shared by the process's reflectors"},
	{Name: "sw-reflector-paged-gate1", Kind: "sw-reflector", Ours: true, NoStream: true, Paginate: true, ListGate: 1, CostLever: true,
		Desc: "lever: sw-reflector-gate1 with DisableStreamingList and PaginateLists (one shared MostRecent list, page by page, pages within MaxPageBytes)"},
	// Relist memory: the adoption paths the initial sync does not run
	// (relist.go).
	{Name: "sw-dropin-listwatch", Kind: "sw-dropin", Ours: true, Relist: true,
		Desc: "steadywatch drop-in: reflector.NewSharedIndexInformerWithOptions over a typed cache.ListWatch (cs.CoreV1().ConfigMaps(ns) List/Watch), what controller-runtime's NewInformer hook and lister.Wrap receive; same clientset defaults"},
	{Name: "sw-informerfor", Kind: "sw-informerfor", Ours: true, Relist: true,
		Desc: "steadywatch's controller-runtime line: reflector.NewInformerFor(cfg, ...) as the NewInformer hook, over the same typed cache.ListWatch (lists and watches sent by steadywatch's own client built from the rest.Config, lists decoded item by item, once its scope is checked against the ListWatch's)"},
	{Name: "sw-dropin-decoding", Kind: "sw-informerfor", Ours: true, Relist: true,
		Desc: "the sharding scenario's replica path of the same name: reflector.NewInformerFor(cfg, ...) over shard.Wrap of a typed cache.ListWatch (the wrap filters its own lists, so they go through it)"},
	{Name: "sw-reflector-funcs", Kind: "sw-reflector-funcs", Ours: true, Relist: true,
		Desc: "steadywatch reflector.New(lister.FromFuncs(cms.List, cms.Watch)) into an Indexer, compat Detector (lists decoded whole by the typed client); same clientset defaults"},
	// Custom resources (-kinds cr): JSON over a dynamic client.
	{Name: "stock-cr", Kind: "informer", CR: true,
		Desc: "client-go v0.37.2 dynamicinformer.NewFilteredDynamicSharedInformerFactory for the CR (JSON), WatchListClient on (streaming list)"},
	{Name: "stock-cr-list", Kind: "informer", CR: true, Env: []string{"KUBE_FEATURE_WatchListClient=false"},
		Desc: "the same with WatchListClient=false: the classic list at resourceVersion 0, then watch"},
	{Name: "sw-informer-cr", Kind: "sw-informer", CR: true, Ours: true,
		Desc: "steadywatch drop-in for a dynamic client: cache.NewSharedIndexInformer over lister.NewListerWatcher(lister.FromDynamicConfig(...)) with a compat Detector (lists decoded item by item)"},
	{Name: "sw-reflector-cr", Kind: "sw-reflector", CR: true, Ours: true,
		Desc: "steadywatch reflector.New(lister.FromDynamicConfig(...)) into an Indexer, compat Detector (lists decoded item by item)"},
	{Name: "stock-cr-nogzip", Kind: "informer", CR: true, NoGzip: true,
		Desc: "lever: stock-cr with rest.Config.DisableCompression"},
	{Name: "sw-informer-cr-nogzip", Kind: "sw-informer", CR: true, Ours: true, NoGzip: true,
		Desc: "lever: sw-informer-cr with rest.Config.DisableCompression"},
	{Name: "sw-reflector-cr-nogzip", Kind: "sw-reflector", CR: true, Ours: true, NoGzip: true, CostLever: true,
		Desc: "lever: sw-reflector-cr with rest.Config.DisableCompression"},
}

// crGVR is the bench's custom resource (installed by bench.installCRD).
var crGVR = schema.GroupVersionResource{Group: "bench.steadywatch.dev", Version: "v1", Resource: "benchitems"}

// syncDefault are the initial sync's contenders of a kind (cr: custom resources).
func syncDefault(cr bool) []string {
	return contenderNames(func(c contender) bool { return c.CR == cr && !c.CostLever && !c.Relist })
}

// syncCore is the smaller initial-sync set run on every server after the first.
var syncCore = []string{"stock", "stock-json", "stock-list", "sw-informer", "sw-reflector", "sw-reflector-json"}

// scalingContenders run at every scaling size (first server only).
var scalingContenders = []string{"stock", "stock-list", "sw-informer", "sw-reflector"}

// costContenders start -cost-informers caches each in the apiserver cost.
var costContenders = []string{"stock", "stock-list", "sw-informer", "sw-reflector"}

func contenderByName(name string) (contender, error) {
	for _, c := range contenders {
		if c.Name == name {
			return c, nil
		}
	}
	return contender{}, fmt.Errorf("unknown contender %q", name)
}

func contenderNames(filter func(contender) bool) []string {
	var out []string
	for _, c := range contenders {
		if filter == nil || filter(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

const protobuf = "application/vnd.kubernetes.protobuf"

// clientConfig applies the contender's content type to cfg. The client-side
// rate limit is client-go's default (QPS 5 after a burst of 10: what a
// user who does not set rest.Config.QPS gets), unless the bench runs with
// -unthrottled (env BENCH_UNTHROTTLED=1, inherited by the children).
func (c contender) clientConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 0, 0
	if os.Getenv("BENCH_UNTHROTTLED") == "1" {
		cfg.QPS, cfg.Burst = -1, 0
	}
	cfg.DisableCompression = c.NoGzip
	if c.JSON || c.CR {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	return cfg
}

// instance is one running cache of ConfigMaps in one namespace.
type instance struct {
	synced func() bool
	size   func() int
	// state describes where a cache is, for errors ("" if unknown).
	state func() string
	// marker is closed once an object named markerName has been seen.
	marker     chan struct{}
	markerName atomic.Pointer[string]
	markerOnce sync.Once
}

// fromInformer makes in report inf's sync and store.
func (in *instance) fromInformer(inf cache.SharedIndexInformer) {
	in.synced = inf.HasSynced
	in.size = func() int { return len(inf.GetStore().ListKeys()) }
	in.state = func() string { return "informer not synced" }
}

// fromReflector makes in report r's sync and state and the size of its
// store idx.
func (in *instance) fromReflector(r *reflector.Reflector, idx cache.Indexer) {
	in.synced = r.HasSynced
	in.size = func() int { return len(idx.ListKeys()) }
	in.state = reflectorState(r)
}

func (in *instance) setMarker(name string) { in.markerName.Store(&name) }

func (in *instance) observe(name string) {
	if m := in.markerName.Load(); m != nil && *m == name {
		in.markerOnce.Do(func() { close(in.marker) })
	}
}

// markerStore wraps an Indexer to notice the marker in adds, updates and replaces.
type markerStore struct {
	cache.Indexer
	in *instance
}

func (s markerStore) Add(obj any) error {
	s.notice(obj)
	return s.Indexer.Add(obj)
}

func (s markerStore) Update(obj any) error {
	s.notice(obj)
	return s.Indexer.Update(obj)
}

func (s markerStore) Replace(list []any, rv string) error {
	for _, o := range list {
		s.notice(o)
	}
	return s.Indexer.Replace(list, rv)
}

func (s markerStore) notice(obj any) {
	if o, ok := obj.(metav1.Object); ok {
		s.in.observe(o.GetName())
	}
}

func nameOf(obj any) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}

// start starts one cache of the contender's kind over cs/cfg in namespace ns.
func (c contender) start(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, server compat.Server, ns string) (*instance, error) {
	in := &instance{marker: make(chan struct{})}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { in.observe(nameOf(obj)) },
		UpdateFunc: func(_, obj any) { in.observe(nameOf(obj)) },
	}
	if c.CR {
		return c.startCR(ctx, cfg, server, ns, in, handler)
	}
	switch c.Kind {
	case "informer", "sw-informer":
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		if c.Kind == "sw-informer" {
			// The README's one-line adoption (examples/informer).
			f = reflector.NewSharedInformerFactoryWithOptions(cs, 0, knobs.WithLister(lister.Options{Server: server, DisableStreamingList: c.NoStream, ListGate: c.gate}, knobs.Lister{DisableInitialEventsCount: c.NoCount}), informers.WithNamespace(ns))
		}
		inf := f.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		f.Start(ctx.Done())
		in.fromInformer(inf)
	case "sw-reflector":
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		client, err := lister.FromClientset(cs, &corev1.ConfigMap{}, ns)
		if err != nil {
			return nil, err
		}
		o := reflector.Options{
			Lister: knobs.WithLister(lister.Options{
				Server:               server,
				ListGate:             c.gate,
				DisableStreamingList: c.NoStream,
				PageSize:             max(c.PageSize, 0),
			}, knobs.Lister{MaxPageSize: c.MaxPageSize}),
			PaginateLists: c.Paginate,
		}
		knobs.ReflectorOf(&o).Unpaginated = c.PageSize < 0
		r := reflector.New(client, &corev1.ConfigMap{}, markerStore{Indexer: idx, in: in}, o)
		go r.Run(ctx)
		in.fromReflector(r, idx)
	case "sw-informerfor":
		return c.startInformerFor(ctx, cfg, cs, server, ns, in, handler)
	case "sw-dropin", "sw-reflector-funcs":
		return c.startRelistPath(ctx, cs, server, ns, in, handler)
	default:
		return nil, fmt.Errorf("contender %s: unknown kind %q", c.Name, c.Kind)
	}
	return in, nil
}

// startCR starts one cache of the bench's custom resources in ns over a
// dynamic client (JSON).
func (c contender) startCR(ctx context.Context, cfg *rest.Config, server compat.Server, ns string, in *instance, handler cache.ResourceEventHandlerFuncs) (*instance, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// Ours decode list responses item by item (lister.FromDynamicConfig);
	// watches go through a dynamic client as stock's do.
	client, err := lister.FromDynamicConfig(cfg, crGVR, ns)
	if err != nil {
		return nil, err
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	switch c.Kind {
	case "informer", "sw-informer":
		var inf cache.SharedIndexInformer
		if c.Kind == "informer" {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
			inf = f.ForResource(crGVR).Informer()
			defer f.Start(ctx.Done())
		} else {
			// The drop-in for any ListerWatcher over a dynamic client.
			lw := lister.NewListerWatcher(client, lister.Options{Server: server, Resource: crGVR, ListGate: c.gate})
			inf = cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, indexers)
			defer func() { go inf.Run(ctx.Done()) }()
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		in.fromInformer(inf)
	case "sw-reflector":
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
		o := reflector.Options{
			Lister: lister.Options{Server: server, Resource: crGVR, ListGate: c.gate, DisableStreamingList: c.NoStream, PageSize: max(c.PageSize, 0)},
		}
		knobs.ReflectorOf(&o).Unpaginated = c.PageSize < 0
		r := reflector.New(client, &unstructured.Unstructured{}, markerStore{Indexer: idx, in: in}, o)
		go r.Run(ctx)
		in.fromReflector(r, idx)
	default:
		return nil, fmt.Errorf("contender %s: unknown kind %q", c.Name, c.Kind)
	}
	return in, nil
}

// summary of requests by verb-ish class, for the report.
func classifyRequests(reqs []requestRecord) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[requestClass(r)]++
	}
	return out
}

func requestClass(r requestRecord) string {
	q := r.Query
	switch {
	case strings.Contains(q, "watch=true") || strings.Contains(q, "watch=1"):
		if strings.Contains(q, "sendInitialEvents=true") {
			return "watch-list"
		}
		return "watch"
	case strings.HasSuffix(r.Path, "/configmaps") || strings.HasSuffix(r.Path, "/"+crGVR.Resource):
		return "list"
	case r.Path == "/version":
		return "version"
	default:
		return r.Method + " other"
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reflectorState describes where r is, for "not synced" errors.
func reflectorState(r *reflector.Reflector) func() string {
	return func() string {
		st := r.State()
		return fmt.Sprintf("reflector phase %v since %s: %s", st.Phase, st.Since.Format(time.RFC3339), st.Reason)
	}
}
