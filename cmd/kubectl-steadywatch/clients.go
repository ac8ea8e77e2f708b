package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
)

// ErrUnreachable is matched by the error returned when /version cannot be read.
var ErrUnreachable = errors.New("apiserver unreachable")

// clients are the clients every subcommand needs, built from the kubeconfig flags.
type clients struct {
	// cfg is the kubeconfig's, with client-go's own retries (the probe's
	// writes use it; its observations set MaxRetries(0) per request).
	cfg  *rest.Config
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	// mapperDisc reads the discovery documents that resolve --resource
	// (kubectl's client-side limits: a server without aggregated discovery
	// answers one request per group/version).
	mapperDisc discovery.DiscoveryInterface
	namespace  string
	// explicitNamespace: -n was given (or the kubeconfig context names one).
	explicitNamespace bool
	version           *version.Info
	server            compat.Server
}

// versionTimeout bounds the first request, so an unreachable server is
// reported promptly.
const versionTimeout = 15 * time.Second

// restConfig is the kubeconfig's, refused when nothing names a cluster, with
// --request-timeout applied per request by requestTimeout (a watch's stream
// is not cut by it).
func (a *app) restConfig() (*rest.Config, error) {
	if err := checkRequestTimeout(a.overrides.Timeout); err != nil {
		return nil, err
	}
	if err := a.checkKubeconfig(); err != nil {
		return nil, err
	}
	cfg, err := a.clientConfig().ClientConfig()
	if err != nil {
		return nil, usagef("kubeconfig: %w", err)
	}
	if d := cfg.Timeout; d > 0 {
		cfg.Timeout = 0
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &requestTimeout{rt: rt, d: d} })
	}
	return cfg, nil
}

func (a *app) clients(ctx context.Context) (*clients, error) {
	cfg, err := a.restConfig()
	if err != nil {
		return nil, err
	}
	ns, explicit, err := a.clientConfig().Namespace()
	if err != nil {
		return nil, usagef("namespace: %w", err)
	}
	// The clients of the SDK's list, watch and /version requests never retry
	// on their own: every request on the wire is one the lister counts and
	// budgets (client-go's REST client would retry each 429/5xx with
	// Retry-After up to 10 times inside one of the lister's attempts).
	owned := fallback.NoHiddenRetries(cfg)
	disc, err := discovery.NewDiscoveryClientForConfig(owned)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	vctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	body, err := disc.RESTClient().Get().AbsPath("/version").Do(vctx).Raw()
	if err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return nil, fmt.Errorf("missing right: get /version (nonResourceURL) at %s: %w", hostOf(cfg), err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped before %s answered /version: %w", hostOf(cfg), ctx.Err())
		}
		if vctx.Err() != nil {
			return nil, fmt.Errorf("%w: GET %s/version: no answer within %s", ErrUnreachable, hostOf(cfg), versionTimeout)
		}
		return nil, fmt.Errorf("%w: GET %s/version: %s", ErrUnreachable, hostOf(cfg), cleanTransportError(err))
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("GET %s/version: unexpected answer: %w", hostOf(cfg), err)
	}
	mcfg := rest.CopyConfig(owned)
	mcfg.QPS, mcfg.Burst = 50, 300
	mapperDisc, err := discovery.NewDiscoveryClientForConfig(mcfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(owned)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	srv, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("capability detector: %w", err)
	}
	return &clients{cfg: cfg, dyn: dyn, disc: disc, mapperDisc: mapperDisc, namespace: ns, explicitNamespace: explicit, version: &info, server: srv}, nil
}

func hostOf(cfg *rest.Config) string {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return cfg.Host
	}
	return u.Scheme + "://" + u.Host
}

// cleanTransportError keeps the useful tail of a transport error without the
// repeated URL client-go puts in front of it.
func cleanTransportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// resolveResource maps a kubectl-style resource argument ("configmaps", "cm",
// "deployments.apps", "deployments.v1.apps") to its REST mapping through
// discovery.
func (c *clients) resolveResource(arg string) (*meta.RESTMapping, error) {
	if strings.TrimSpace(arg) == "" {
		return nil, usagef("--resource is required")
	}
	// kubectl's mapper: discovery cached for the run, short names ("cm")
	// expanded.
	cached := memory.NewMemCacheClient(c.mapperDisc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	fullGVR, gr := schema.ParseResourceArg(strings.ToLower(arg))
	var gvk schema.GroupVersionKind
	var err error
	if fullGVR != nil {
		gvk, _ = mapper.KindFor(*fullGVR)
	}
	if gvk.Empty() {
		gvk, err = mapper.KindFor(gr.WithVersion(""))
		if err != nil {
			if meta.IsNoMatchError(err) {
				return nil, usagef("unknown resource %q: the server does not serve it (%v)", arg, err)
			}
			return nil, fmt.Errorf("resolve resource %q: %w", arg, err)
		}
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("resolve resource %q: %w", arg, err)
	}
	return m, nil
}

// resolveIn resolves a resource argument (resolveResource) and the namespace
// a command reads it in: the context's, or "" (every namespace) with
// --all-namespaces or for a cluster-scoped resource.
func (a *app) resolveIn(c *clients, arg string, allNamespaces bool) (*meta.RESTMapping, string, error) {
	m, err := c.resolveResource(arg)
	if err != nil {
		return nil, "", err
	}
	if allNamespaces || m.Scope.Name() != meta.RESTScopeNameNamespace {
		return m, "", nil
	}
	return m, c.namespace, nil
}

// resourceClient returns the dynamic client for m in ns ("" = all namespaces
// for namespaced resources; ignored for cluster-scoped ones).
func (c *clients) resourceClient(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	ri := c.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace && ns != "" {
		return ri.Namespace(ns)
	}
	return ri
}
