package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/lister"
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
	// not gzip large list responses (watch streams are never compressed).
	NoGzip   bool   `json:"no_gzip,omitempty"`
	PageSize int64  `json:"page_size,omitempty"`
	Desc     string `json:"desc"`
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
		Desc: "steadywatch as adopted (README, examples/informer): factory.InformerFor over lister.NewListerWatcher with a compat Detector; same clientset defaults"},
	{Name: "sw-reflector", Kind: "sw-reflector", Ours: true,
		Desc: "steadywatch reflector.New into an Indexer, compat Detector (streams the initial list where the server can); same clientset defaults"},
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
}

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

// clientConfig applies the contender's content type to cfg.
func (c contender) clientConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the server is what we measure
	cfg.DisableCompression = c.NoGzip
	if c.JSON {
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
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		s.in.observe(cm.Name)
	}
}

// start starts one cache of the contender's kind over cs/cfg in namespace ns.
func (c contender) start(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, server compat.Server, ns string) (*instance, error) {
	in := &instance{marker: make(chan struct{})}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { in.observe(obj.(*corev1.ConfigMap).Name) },
		UpdateFunc: func(_, obj any) { in.observe(obj.(*corev1.ConfigMap).Name) },
	}
	switch c.Kind {
	case "informer", "sw-informer":
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		if c.Kind == "sw-informer" {
			// The README's one-line adoption (examples/informer).
			f.InformerFor(&corev1.ConfigMap{}, reflector.FactoryInformer(&corev1.ConfigMap{}, reflector.FactoryOptions{Namespace: ns, Lister: lister.Options{Server: server}}))
		}
		inf := f.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		f.Start(ctx.Done())
		in.synced = inf.HasSynced
		in.size = func() int { return len(inf.GetStore().ListKeys()) }
		in.state = func() string { return "informer not synced" }
	case "sw-reflector":
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		cms := cs.CoreV1().ConfigMaps(ns)
		r := reflector.New(lister.FromFuncs(cms.List, cms.Watch), &corev1.ConfigMap{}, markerStore{Indexer: idx, in: in}, reflector.Options{
			Server:               server,
			DisableStreamingList: c.NoStream,
			PageSize:             c.PageSize,
		})
		go r.Run(ctx)
		in.synced = r.HasSynced
		in.size = func() int { return len(idx.ListKeys()) }
		in.state = func() string {
			st := r.State()
			return fmt.Sprintf("reflector phase %v since %s: %s", st.Phase, st.Since.Format(time.RFC3339), st.Reason)
		}
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
	case strings.HasSuffix(r.Path, "/configmaps"):
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
