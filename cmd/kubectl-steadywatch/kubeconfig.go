package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNoKubeconfig is matched (errors.Is) by the error a command returns when
// no kubeconfig names a cluster and the plugin does not run in a pod: it
// connects nowhere then, instead of trying client-go's last resort
// http://localhost:8080.
var ErrNoKubeconfig = errors.New("no kubeconfig found")

// inClusterTokenFile is where a pod's service account token is mounted;
// client-go's in-cluster configuration needs it and the
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT variables.
const inClusterTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// NoKubeconfigError says where the plugin looked for a cluster to talk to.
type NoKubeconfigError struct {
	// Looked lists each place and what was found there, in the order
	// client-go reads them.
	Looked []string
}

func (e *NoKubeconfigError) Error() string {
	return fmt.Sprintf("%s: looked at %s; pass --kubeconfig FILE (or --server URL), set KUBECONFIG, or run in a pod",
		ErrNoKubeconfig, strings.Join(e.Looked, ", "))
}

func (e *NoKubeconfigError) Is(target error) bool { return target == ErrNoKubeconfig }

// bindFlags adds kubectl's kubeconfig flags to fs, bound to a.kubeconfig and
// a.overrides: --kubeconfig, then client-go's recommended override flags
// (clientcmd.RecommendedConfigOverrideFlags) without the deprecated
// --username and --password, with --request-timeout defaulting to
// defaultRequestTimeout.
func (a *app) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.AuthOverrideFlags.Username.LongName = ""
	names.AuthOverrideFlags.Password.LongName = ""
	names.Timeout.Default = defaultRequestTimeout
	names.Timeout.Description = "bound on each request to the server (0 = none); a watch is bounded until its response starts, its stream is not cut"
	clientcmd.BindOverrideFlags(&a.overrides, fs, names)
}

// clientConfig is the kubeconfig as client-go loads it (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config; in a pod, its service account) with the
// flags' overrides applied.
func (a *app) clientConfig() clientcmd.ClientConfig {
	if a.config == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = a.kubeconfig
		a.config = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &a.overrides)
	}
	return a.config
}

// checkKubeconfig returns a *NoKubeconfigError when nothing names a cluster:
// no --server, no cluster in the kubeconfig files client-go reads, and no
// in-cluster service account. An unreadable or invalid kubeconfig is a usage
// error with clientcmd's reason.
func (a *app) checkKubeconfig() error {
	if a.overrides.ClusterInfo.Server != "" {
		return nil
	}
	loader := a.clientConfig()
	raw, err := loader.RawConfig()
	if err != nil {
		return usagef("kubeconfig: %w", err)
	}
	icc, inCluster := inClusterState()
	if len(raw.Clusters) > 0 && !inCluster {
		return checkContext(raw, loader.ConfigAccess().GetLoadingPrecedence(), a.kubeconfig, &a.overrides)
	}
	if inCluster {
		return nil
	}
	var looked []string
	if p := a.kubeconfig; p != "" {
		looked = append(looked, fmt.Sprintf("--kubeconfig %s (%s)", p, fileState(p)))
	} else {
		env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
		home := clientcmd.RecommendedHomeFile
		if env == "" {
			looked = append(looked, "$KUBECONFIG (not set)", fmt.Sprintf("%s (%s)", home, fileState(home)))
		} else {
			var states []string
			for _, p := range filepath.SplitList(env) {
				if p != "" {
					states = append(states, fmt.Sprintf("%s: %s", p, fileState(p)))
				}
			}
			looked = append(looked, fmt.Sprintf("$KUBECONFIG (%s)", strings.Join(states, "; ")),
				fmt.Sprintf("%s (not read: $KUBECONFIG is set)", home))
		}
	}
	looked = append(looked, "in-cluster ("+icc+")")
	return &usageError{&NoKubeconfigError{Looked: looked}}
}

// checkContext refuses a kubeconfig whose context names nothing: outside a
// pod client-go would fall back to http://localhost:8080 for it.
func checkContext(raw clientcmdapi.Config, files []string, kubeconfig string, o *clientcmd.ConfigOverrides) error {
	if o.Context.Cluster != "" {
		return nil
	}
	name := raw.CurrentContext
	if o.CurrentContext != "" {
		name = o.CurrentContext
	}
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	where := strings.Join(files, string(filepath.ListSeparator))
	if kubeconfig != "" {
		where = kubeconfig
	}
	switch {
	case name == "":
		return usagef("kubeconfig %s: no current-context; pass --context NAME (contexts: %s)", where, strings.Join(names, ", "))
	case raw.Contexts[name] == nil:
		return usagef("kubeconfig %s: no context %q (contexts: %s)", where, name, strings.Join(names, ", "))
	}
	return nil
}

// fileState describes a kubeconfig file that named no cluster.
func fileState(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no such file"
	case err != nil:
		return err.Error()
	case fi.IsDir():
		return "a directory"
	}
	return "no cluster in it"
}

// inClusterState reports whether client-go's in-cluster configuration is
// possible, and if not, why.
func inClusterState() (string, bool) {
	var missing []string
	for _, v := range []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} {
		if os.Getenv(v) == "" {
			missing = append(missing, "$"+v)
		}
	}
	if len(missing) > 0 {
		return strings.Join(missing, " and ") + " not set", false
	}
	if _, err := os.Stat(inClusterTokenFile); err != nil {
		return "no service account token at " + inClusterTokenFile, false
	}
	return "", true
}
