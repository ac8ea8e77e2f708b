package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/certs"
)

// Options configures Start. The zero value starts one current kube-apiserver
// (build.Current) with its watch cache on, on an embedded etcd, in a
// temporary directory removed by Stop.
type Options struct {
	// Version is the kube-apiserver release, e.g. "v1.37.2" or "v1.18.19".
	// "" = build.Current. Minors 1.16 and newer are supported. Must be ""
	// when Versions is set.
	Version string
	// Versions gives each apiserver of an HA pair its own release, as in a
	// rolling upgrade: Versions[i] runs as apiserver-i, both on the one etcd
	// behind the balancer (e.g. {build.Legacy, build.Current}: an old and a
	// new member). It needs HA, exactly two entries and an empty Version and
	// Binary (each release comes from build.Ensure); Start fails with
	// ErrInvalidOptions otherwise. Cluster.Version then reports both
	// ("v1.18.19+v1.37.2"), Cluster.Versions each member's. nil = every
	// apiserver runs Version.
	Versions []string
	// DisableWatchCache passes --watch-cache=false to every apiserver, so
	// lists and watches are served from etcd (a compacted RV is 410 at once).
	DisableWatchCache bool
	// DisableWatchCacheOn passes --watch-cache=false only to the apiservers
	// with these indexes (0 = apiserver-0; with HA 0 or 1), the others keep
	// their watch cache. With HA, []int{1} gives a pair where apiserver-0
	// serves from its watch cache and apiserver-1 from etcd. nil = none
	// (unless DisableWatchCache). An index outside the cluster's apiservers
	// makes Start fail with ErrInvalidOptions before anything starts;
	// repeated indexes are harmless. DisableWatchCache, if set, wins: every
	// apiserver is then started without a watch cache.
	DisableWatchCacheOn []int
	// HA starts two apiservers on the same etcd behind a faults.Proxy
	// balancer (Cluster.Balancer) that alternates requests between them
	// (Alternate); the kubeconfig and Cluster.RESTConfig point at it.
	HA bool
	// CompactionInterval is the apiservers' --etcd-compaction-interval.
	// 0 = 1h: long enough that no apiserver compacts on its own during a
	// test (compactions happen only when a test calls Etcd.Compact), yet
	// non-zero so every apiserver version runs its compactor, which is what
	// makes it learn of Etcd.Compact's compaction through compact_rev_key.
	// Negative = "0s": the apiservers' compactor is disabled.
	CompactionInterval time.Duration
	// ExtraArgs are appended to every apiserver's flags (after the
	// harness's, so they win for flags that take the last value).
	ExtraArgs []string
	// Dir is the working directory (etcd data, PKI, logs, kubeconfig).
	// "" = a new temporary directory, removed by Stop. A given Dir is kept
	// after Stop, and an etcd data directory already in it is reopened (its
	// objects survive; the PKI and token are always new).
	Dir string
	// Progress receives human-readable progress lines; nil = discard.
	Progress io.Writer
	// Binary is the kube-apiserver to run; "" = build.Ensure(Version), which
	// reuses the cached build or builds it.
	Binary string
	// ReadyTimeout bounds each apiserver start (until /readyz is 200);
	// 0 = 60s.
	ReadyTimeout time.Duration
}

const (
	defaultCompactionInterval = time.Hour
	defaultReadyTimeout       = 60 * time.Second
	adminUser                 = "admin"
)

// Cluster is a running control plane: one embedded etcd and one or two
// kube-apiserver processes. Stop it when done (it is safe to call twice).
type Cluster struct {
	opts       Options
	dir        string
	removeDir  bool
	ca         *certs.CA
	token      string
	kubeconfig string
	etcd       *Etcd
	apiservers []*APIServer
	progress   func(string, ...any)

	mu      sync.Mutex
	proxies proxies
	stopped bool
	stopErr error
}

// Start starts a cluster: it obtains the kube-apiserver binary (reusing the
// cache), creates the PKI and admin token, starts etcd and the apiserver(s)
// and waits until every apiserver's /readyz is 200. With HA it also starts
// the balancer. On error everything started so far is stopped again, and the
// error (often a *ComponentError with a log tail) says what failed.
func Start(ctx context.Context, o Options) (_ *Cluster, err error) {
	begin := time.Now()
	if o.Version == "" && len(o.Versions) == 0 {
		o.Version = build.Current
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = defaultReadyTimeout
	}
	switch {
	case o.CompactionInterval == 0:
		o.CompactionInterval = defaultCompactionInterval
	case o.CompactionInterval < 0:
		o.CompactionInterval = 0
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	for _, v := range o.memberVersions() {
		if _, err := minorOf(v); err != nil {
			return nil, err
		}
	}
	progressW := o.Progress
	if progressW == nil {
		progressW = io.Discard
	}
	logger := klog.FromContext(ctx).WithName("harness")
	progress := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintf(progressW, "harness: %s\n", msg)
		logger.V(2).Info(msg)
	}

	c := &Cluster{opts: o, progress: progress}
	defer func() {
		if err != nil {
			// Stop what was started; the error already says what failed.
			_ = c.Stop()
		}
	}()
	if o.Dir == "" {
		if c.dir, err = os.MkdirTemp("", "steadywatch-cluster-"); err != nil {
			return nil, err
		}
		c.removeDir = true
	} else {
		if c.dir, err = filepath.Abs(o.Dir); err != nil {
			return nil, err
		}
		if err = os.MkdirAll(c.dir, 0o700); err != nil {
			return nil, err
		}
	}

	binaries := map[string]string{} // version -> kube-apiserver binary
	for _, v := range o.memberVersions() {
		if _, ok := binaries[v]; ok {
			continue
		}
		binary := o.Binary
		if binary == "" {
			if binary, err = build.Ensure(ctx, v, progressW); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBinary, err)
			}
		}
		binaries[v] = binary
		progress("kube-apiserver %s: %s", v, binary)
	}

	if err = c.writePKI(); err != nil {
		return nil, err
	}
	if c.etcd, err = newEtcd(c.dir, progress); err != nil {
		return nil, err
	}
	if err = c.etcd.Start(ctx); err != nil {
		return nil, err
	}

	n := o.apiServerCount()
	for i, v := range o.memberVersions() {
		a, err := c.newAPIServer(i, v, binaries[v])
		if err != nil {
			return nil, err
		}
		c.apiservers = append(c.apiservers, a)
	}
	// Start in parallel: each apiserver spends most of its start waiting.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, a := range c.apiservers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = a.Start(ctx)
		}()
	}
	wg.Wait()
	if err = errors.Join(errs...); err != nil {
		return nil, err
	}

	server := c.apiservers[0].URL()
	if o.HA {
		b, _, err := c.NewProxy(ctx, c.apiservers...)
		if err != nil {
			return nil, fmt.Errorf("harness: balancer: %w", err)
		}
		// Spread requests like a real load balancer, so consecutive
		// requests can see different watch caches; tests Pin as needed.
		b.Alternate()
		c.mu.Lock()
		c.proxies.balancer = b
		c.mu.Unlock()
		server = b.URL()
	}
	if err = c.writeKubeconfig(server); err != nil {
		return nil, err
	}
	progress("cluster ready in %s; kubeconfig %s", time.Since(begin).Round(time.Millisecond), c.kubeconfig)
	return c, nil
}

// apiServerCount is how many apiservers o starts: 2 with HA, else 1.
func (o *Options) apiServerCount() int {
	if o.HA {
		return 2
	}
	return 1
}

// memberVersions returns the release of each apiserver, in index order.
func (o *Options) memberVersions() []string {
	if len(o.Versions) > 0 {
		return append([]string(nil), o.Versions...)
	}
	out := make([]string, o.apiServerCount())
	for i := range out {
		out[i] = o.Version
	}
	return out
}

// validate checks the options Start cannot default; errors match
// ErrInvalidOptions.
func (o *Options) validate() error {
	n := o.apiServerCount()
	if len(o.Versions) > 0 {
		switch {
		case !o.HA:
			return fmt.Errorf("%w: Versions %v needs HA (one version per member of the pair)", ErrInvalidOptions, o.Versions)
		case len(o.Versions) != n:
			return fmt.Errorf("%w: Versions has %d entries, the HA pair has %d apiservers", ErrInvalidOptions, len(o.Versions), n)
		case o.Version != "":
			return fmt.Errorf("%w: Version %q and Versions %v both set", ErrInvalidOptions, o.Version, o.Versions)
		case o.Binary != "":
			return fmt.Errorf("%w: Binary is one file, Versions %v need one per release", ErrInvalidOptions, o.Versions)
		}
	}
	for _, i := range o.DisableWatchCacheOn {
		if i < 0 || i >= n {
			return fmt.Errorf("%w: DisableWatchCacheOn index %d: the cluster has %d apiserver(s) (indexes 0..%d; HA=%v)",
				ErrInvalidOptions, i, n, n-1, o.HA)
		}
	}
	return nil
}

// watchCacheOff reports whether apiserver i runs with --watch-cache=false.
func (o *Options) watchCacheOff(i int) bool {
	return o.DisableWatchCache || slices.Contains(o.DisableWatchCacheOn, i)
}

// writePKI creates the CA, the service-account key pair and the token file.
func (c *Cluster) writePKI() error {
	pki := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	ca, err := certs.NewCA("steadywatch-e2e-ca")
	if err != nil {
		return fmt.Errorf("harness: CA: %w", err)
	}
	c.ca = ca
	if err := os.WriteFile(filepath.Join(pki, "ca.crt"), ca.CertPEM, 0o600); err != nil {
		return err
	}
	pub, key, err := certs.ServiceAccountKey()
	if err != nil {
		return fmt.Errorf("harness: service-account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(pki, "sa.pub"), pub, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pki, "sa.key"), key, 0o600); err != nil {
		return err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	c.token = hex.EncodeToString(tok)
	line := fmt.Sprintf("%s,%s,%s,system:masters\n", c.token, adminUser, adminUser)
	return os.WriteFile(filepath.Join(pki, "tokens.csv"), []byte(line), 0o600)
}

func (c *Cluster) newAPIServer(i int, version, binary string) (*APIServer, error) {
	name := "apiserver-" + strconv.Itoa(i)
	pki := filepath.Join(c.dir, "pki")
	certDir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	pair, err := c.ca.Serving(name)
	if err != nil {
		return nil, fmt.Errorf("harness: %s serving cert: %w", name, err)
	}
	certFile, keyFile, err := pair.WriteFiles(certDir, "serving")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	args, err := apiServerArgs(version, apiServerFlags{
		etcd:               c.etcd.Endpoint(),
		port:               ports[0],
		certDir:            certDir,
		certFile:           certFile,
		keyFile:            keyFile,
		saPub:              filepath.Join(pki, "sa.pub"),
		saKey:              filepath.Join(pki, "sa.key"),
		tokenFile:          filepath.Join(pki, "tokens.csv"),
		compactionInterval: c.opts.CompactionInterval,
		disableWatchCache:  c.opts.watchCacheOff(i),
		extra:              c.opts.ExtraArgs,
	})
	if err != nil {
		return nil, err
	}
	cfg := c.restConfigFor("https://127.0.0.1:" + strconv.Itoa(ports[0]))
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &APIServer{
		name:         name,
		version:      version,
		binary:       binary,
		args:         args,
		port:         ports[0],
		logPath:      filepath.Join(c.dir, name+".log"),
		workDir:      c.dir,
		readyTimeout: c.opts.ReadyTimeout,
		progress:     c.progress,
		config:       cfg,
		httpClient:   hc,
	}, nil
}

// restConfigFor is the admin config for host: bearer token, cluster CA,
// verification on, and client-side rate limits high enough not to slow
// tests down.
func (c *Cluster) restConfigFor(host string) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.ca.CertPEM...)},
		QPS:             200,
		Burst:           400,
		UserAgent:       "steadywatch-e2e",
	}
}

func (c *Cluster) writeKubeconfig(server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["steadywatch"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.ca.CertPEM}
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{Token: c.token}
	cfg.Contexts["steadywatch"] = &clientcmdapi.Context{Cluster: "steadywatch", AuthInfo: adminUser}
	cfg.CurrentContext = "steadywatch"
	path := filepath.Join(c.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("harness: kubeconfig: %w", err)
	}
	// WriteToFile creates with 0600, but make sure of it for a reused Dir.
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	c.kubeconfig = path
	return nil
}

// Stop stops proxies, apiservers and etcd and removes the temporary
// directory (a caller-given Options.Dir is kept). It is idempotent: later
// calls return the first call's result.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.stopErr
	}
	c.stopped = true
	var errs []error
	errs = append(errs, c.proxies.closeAll())
	for _, a := range c.apiservers {
		errs = append(errs, a.Stop())
	}
	if c.etcd != nil {
		errs = append(errs, c.etcd.Stop())
	}
	if c.removeDir && c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	c.stopErr = errors.Join(errs...)
	if c.stopErr == nil {
		c.progress("cluster stopped")
	}
	return c.stopErr
}

// Dir is the cluster's working directory (logs, PKI, etcd data).
func (c *Cluster) Dir() string { return c.dir }

// Version is the kube-apiserver version the cluster runs; for a
// mixed-version pair (Options.Versions) both, old and new joined by "+"
// in member order, e.g. "v1.18.19+v1.37.2".
func (c *Cluster) Version() string {
	if len(c.opts.Versions) > 0 {
		return strings.Join(c.opts.Versions, "+")
	}
	return c.opts.Version
}

// Versions is the kube-apiserver version of each apiserver, in index order.
func (c *Cluster) Versions() []string { return c.opts.memberVersions() }

// KubeconfigPath is the absolute path of a kubeconfig (mode 0600) for the
// admin user; it points at the balancer when HA, else at the apiserver.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// RESTConfig returns a copy of the admin config the kubeconfig describes
// (balancer when HA, else the apiserver): token of a system:masters user,
// cluster CA data, TLS verification on.
func (c *Cluster) RESTConfig() *rest.Config {
	c.mu.Lock()
	b := c.proxies.balancer
	c.mu.Unlock()
	if b != nil {
		return c.restConfigFor(b.URL())
	}
	return c.apiservers[0].RESTConfig()
}

// APIServers returns the cluster's apiservers (two when HA).
func (c *Cluster) APIServers() []*APIServer { return append([]*APIServer(nil), c.apiservers...) }

// Etcd returns the cluster's etcd.
func (c *Cluster) Etcd() *Etcd { return c.etcd }

// CA returns the cluster CA that signed every serving certificate.
func (c *Cluster) CA() *certs.CA { return c.ca }

// freePorts reserves n distinct free TCP ports on 127.0.0.1. They are
// released before return, so another process may in principle take one.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("harness: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
