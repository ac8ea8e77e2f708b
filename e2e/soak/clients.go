package soak

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// Tracker records the newest resourceVersion a client applied per object
// and every object it applied older than that. Give See every object an
// informer's handlers or a store receive. It is safe for concurrent use.
type Tracker struct {
	mu       sync.Mutex
	newest   map[string]uint64
	backward []string
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker { return &Tracker{newest: map[string]uint64{}} }

// See notes obj (a ConfigMap, or a cache.DeletedFinalStateUnknown of one).
func (t *Tracker) See(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	n, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.newest[cm.Name]; n < old {
		t.backward = append(t.backward, fmt.Sprintf("%s: %d -> %d", cm.Name, old, n))
	}
	t.newest[cm.Name] = max(n, t.newest[cm.Name])
}

// WentBack lists every object applied older than one applied before it
// ("cm-1: 812 -> 790").
func (t *Tracker) WentBack() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.backward)
}

// seeingStore reports every object reflector.New gives its store.
type seeingStore struct {
	cache.Store
	t *Tracker
}

func (s seeingStore) Add(obj any) error    { s.t.See(obj); return s.Store.Add(obj) }
func (s seeingStore) Update(obj any) error { s.t.See(obj); return s.Store.Update(obj) }
func (s seeingStore) Delete(obj any) error { s.t.See(obj); return s.Store.Delete(obj) }
func (s seeingStore) Replace(items []any, rv string) error {
	for _, it := range items {
		s.t.See(it)
	}
	return s.Store.Replace(items, rv)
}

// userAgent is the User-Agent of the path running in namespace ns.
func userAgent(ns string) string { return "steadywatch-soak/" + ns }

// client is one running path.
type client struct {
	path   string
	ns     string
	store  cache.Store
	synced func() bool
	t      *Tracker
	rec    *reasons.Counter
	cancel context.CancelFunc
	done   chan struct{}
}

// ownTransport returns cfg with a dialer of its own, so the clientset built
// from it gets its own transport and connection (client-go shares one per
// TLS configuration otherwise): a connection reset then hits one path only.
// Its User-Agent names the path's namespace, so the requests a path sends
// for every namespace (NewInformerFor's scope check) count as its own.
func ownTransport(cfg *rest.Config, ns string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.UserAgent = userAgent(ns)
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return c
}

// start runs path on namespace ns through cfg (the proxy's config), built
// the way the README's adoption line builds it, with a clientset made the
// usual way (kubernetes.NewForConfig).
func start(path, ns string, cfg *rest.Config) (*client, error) {
	cfg = ownTransport(cfg, ns)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &client{path: path, ns: ns, t: NewTracker(), rec: reasons.New(), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	handlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.t.See,
		UpdateFunc: func(_, obj any) { c.t.See(obj) },
		DeleteFunc: c.t.See,
	}
	lo := lister.Options{Metrics: c.rec}
	switch path {
	case PathStock, PathDropIn:
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), resource, ns, fields.Everything())
		var inf cache.SharedIndexInformer
		if path == PathStock {
			inf = cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		} else {
			inf = reflector.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{}, lo)
		}
		if _, err := inf.AddEventHandler(handlers); err != nil {
			cancel()
			return nil, err
		}
		c.store, c.synced = inf.GetStore(), inf.HasSynced
		go func() { defer close(c.done); inf.RunWithContext(ctx) }()
	case PathFactory:
		factory := reflector.NewSharedInformerFactoryWithOptions(cs, 0, lo, informers.WithNamespace(ns))
		inf := factory.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(handlers); err != nil {
			cancel()
			return nil, err
		}
		c.store, c.synced = inf.GetStore(), inf.HasSynced
		factory.Start(ctx.Done())
		go func() { defer close(c.done); <-ctx.Done(); factory.Shutdown() }()
	case PathInformerFor:
		// controller-runtime's hook, as its cache calls it: a typed
		// ListWatch of the namespace, the example object, the namespace index.
		lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), resource, ns, fields.Everything())
		inf := reflector.NewInformerFor(cfg, lo)(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if _, err := inf.AddEventHandler(handlers); err != nil {
			cancel()
			return nil, err
		}
		c.store, c.synced = inf.GetStore(), inf.HasSynced
		go func() { defer close(c.done); inf.RunWithContext(ctx) }()
	case PathReflector:
		srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
		if err != nil {
			cancel()
			return nil, err
		}
		lc, err := lister.FromClientset(cs, &corev1.ConfigMap{}, ns)
		if err != nil {
			cancel()
			return nil, err
		}
		store := seeingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), t: c.t}
		lo.Server = srv
		r := reflector.New(lc, &corev1.ConfigMap{}, store, reflector.Options{Lister: lo})
		c.store, c.synced = store, r.HasSynced
		go func() { defer close(c.done); r.Run(ctx) }()
	default:
		cancel()
		return nil, fmt.Errorf("soak: unknown path %q", path)
	}
	return c, nil
}

// stop stops the path and reports whether it returned within d.
func (c *client) stop(d time.Duration) bool {
	c.cancel()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
		return false
	}
}

// holds returns the path's store as name -> resourceVersion.
func (c *client) holds() map[string]string {
	out := map[string]string{}
	for _, obj := range c.store.List() {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			out[cm.Name] = cm.ResourceVersion
		}
	}
	return out
}
