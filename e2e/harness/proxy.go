package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

// proxies are the faults.Proxies a cluster started; Stop closes them.
type proxies struct {
	balancer *faults.Proxy // nil unless HA
	all      []*faults.Proxy
	logs     []*os.File
}

func (p *proxies) closeAll() error {
	var errs []error
	for _, x := range p.all {
		if err := x.Close(); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	for _, f := range p.logs {
		errs = append(errs, f.Close())
	}
	p.all, p.logs = nil, nil
	return errors.Join(errs...)
}

// Balancer is the HA balancer in front of both apiservers, nil unless
// Options.HA. Use Pin, Alternate and Failover on it to steer clients.
func (c *Cluster) Balancer() *faults.Proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proxies.balancer
}

// NewProxy starts a faults.Proxy in front of backends (all apiservers if
// none are given; more than one makes it a balancer), serving a certificate
// from the cluster CA and verifying the backends against it. The returned
// config is the admin config pointed at the proxy: that is what clients use
// to go through it. The proxy logs to proxy-N.log in the cluster's Dir.
// Stop closes it; closing it earlier is fine.
func (c *Cluster) NewProxy(ctx context.Context, backends ...*APIServer) (*faults.Proxy, *rest.Config, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if len(backends) == 0 {
		backends = c.apiservers
	}
	urls := make([]*url.URL, 0, len(backends))
	for _, a := range backends {
		u, err := url.Parse(a.URL())
		if err != nil {
			return nil, nil, fmt.Errorf("harness: proxy backend %s: %w", a.Name(), err)
		}
		urls = append(urls, u)
	}
	pair, err := c.ca.Serving("steadywatch-proxy")
	if err != nil {
		return nil, nil, fmt.Errorf("harness: proxy serving cert: %w", err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		return nil, nil, fmt.Errorf("harness: proxy serving cert: %w", err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, nil, ErrStopped
	}
	logPath := filepath.Join(c.dir, "proxy-"+strconv.Itoa(len(c.proxies.logs))+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("harness: proxy log: %w", err)
	}
	p, err := faults.New(faults.Options{
		Backends:    urls,
		BackendTLS:  c.ca.ClientTLS(),
		ServingCert: cert,
		Log:         logf,
	})
	if err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("harness: proxy: %w", err)
	}
	c.proxies.all = append(c.proxies.all, p)
	c.proxies.logs = append(c.proxies.logs, logf)
	c.progress("proxy %s -> %d backend(s), log %s", p.URL(), len(urls), logPath)
	return p, c.restConfigFor(p.URL()), nil
}
