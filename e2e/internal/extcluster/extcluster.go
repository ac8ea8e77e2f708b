// Package extcluster chooses where an e2e suite runs: on control planes the
// harness builds and starts itself (the default, with every fault control),
// or on an external cluster named by the E2E_KUBECONFIG environment variable
// (for example kind in a user's CI), where only the Kubernetes API is
// available.
//
// Suites call Start instead of harness.Start. Specs that need fault control
// (apiserver restart, etcd compaction, the fault proxy, a second apiserver)
// call Target.Harness, or RequireFaults to Skip with SkipReason on an
// external cluster; everything else runs unchanged on both.
//
// It is not a cluster provisioner: it never creates or deletes an external
// cluster, and it does not check that the external cluster's version matches
// the harness.Options asked for (Target.Version reports what it runs).
package extcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/e2e/harness"
)

// EnvKubeconfig is the environment variable that selects an external
// cluster: the path of a kubeconfig whose current context is used.
const EnvKubeconfig = "E2E_KUBECONFIG"

// SkipReason is the message specs Skip with when they need fault control on
// an external cluster.
const SkipReason = "needs fault control: restart/compaction/proxy; not available on an external cluster"

// ErrNoFaultControl is matched (errors.Is) by the error Harness returns on an
// external cluster.
var ErrNoFaultControl = errors.New("extcluster: fault controls unavailable on an external cluster")

// ErrKubeconfig is matched by errors loading the external kubeconfig.
var ErrKubeconfig = errors.New("extcluster: cannot load external kubeconfig")

// Target is the cluster a suite runs against.
type Target struct {
	cluster    *harness.Cluster // nil when external
	config     *rest.Config
	kubeconfig string
	version    string
}

// External reports whether the target is an external cluster (E2E_KUBECONFIG).
func (t *Target) External() bool { return t.cluster == nil }

// RESTConfig returns a copy of the config to reach the cluster (the
// harness's admin config, or the external kubeconfig's current context).
func (t *Target) RESTConfig() *rest.Config { return rest.CopyConfig(t.config) }

// KubeconfigPath is the kubeconfig file the target was loaded from or written to.
func (t *Target) KubeconfigPath() string { return t.kubeconfig }

// Version is the apiserver's gitVersion as served by /version (harness: the
// version it started; external: discovered at Start).
func (t *Target) Version() string { return t.version }

// Harness returns the harness cluster with its fault controls, or an error
// matching ErrNoFaultControl on an external cluster.
func (t *Target) Harness() (*harness.Cluster, error) {
	if t.cluster == nil {
		return nil, fmt.Errorf("%w (%s=%s)", ErrNoFaultControl, EnvKubeconfig, t.kubeconfig)
	}
	return t.cluster, nil
}

// Stop stops the harness cluster; on an external cluster it does nothing
// (the cluster belongs to the caller). Safe to call twice.
func (t *Target) Stop() error {
	if t.cluster == nil {
		return nil
	}
	return t.cluster.Stop()
}

// Describe says in one line what the target is, for test output. It never
// contains credentials.
func (t *Target) Describe() string {
	if t.External() {
		return fmt.Sprintf("external cluster %s (%s, kubeconfig %s)", t.config.Host, t.version, t.kubeconfig)
	}
	return fmt.Sprintf("harness cluster %s (%s)", t.config.Host, t.version)
}

// ExternalKubeconfig returns the external kubeconfig path from the
// environment ("" = none: use the harness). A leading "~/" is expanded.
func ExternalKubeconfig() string {
	return expandHome(strings.TrimSpace(os.Getenv(EnvKubeconfig)))
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return home + "/" + rest
		}
	}
	return p
}

// Start returns the target for a suite: with E2E_KUBECONFIG set, the
// external cluster it names (o is ignored, except that o.Progress receives a
// line saying so); otherwise a harness cluster started with o.
func Start(ctx context.Context, o harness.Options) (*Target, error) {
	if path := ExternalKubeconfig(); path != "" {
		t, err := Load(ctx, path)
		if err == nil && o.Progress != nil {
			fmt.Fprintf(o.Progress, "extcluster: using %s; fault-control specs will be skipped\n", t.Describe())
		}
		return t, err
	}
	c, err := harness.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Target{cluster: c, config: c.RESTConfig(), kubeconfig: c.KubeconfigPath(), version: c.Version()}, nil
}

// Load returns the target for the external cluster described by the
// kubeconfig at path (its current context). It checks that the cluster
// answers /version within a bounded time, so a wrong kubeconfig fails the
// suite at once with a clear error rather than in every spec.
func Load(ctx context.Context, path string) (*Target, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKubeconfig, path, err)
	}
	// Tests create and churn objects quickly; client-go's default 5 QPS
	// would make them measure the client's rate limiter.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "steadywatch-e2e"
	}
	// Bound the /version probe on its own copy; cfg keeps no timeout
	// (watches are long-lived).
	probe := rest.CopyConfig(cfg)
	probe.Timeout = versionTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKubeconfig, path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("extcluster: %s (%s) /version: %w", cfg.Host, path, err)
	}
	return &Target{config: cfg, kubeconfig: path, version: info.GitVersion}, nil
}

// versionTimeout bounds the /version probe of an external cluster.
const versionTimeout = 30 * time.Second

// RequireFaults returns the harness cluster, or Skips the current Ginkgo
// spec with SkipReason on an external cluster. Call it inside a spec or a
// setup node.
func (t *Target) RequireFaults() *harness.Cluster {
	c, err := t.Harness()
	if err != nil {
		ginkgo.Skip(SkipReason)
	}
	return c
}
