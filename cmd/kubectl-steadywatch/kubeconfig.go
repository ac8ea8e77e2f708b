package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
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

// checkKubeconfig returns a *NoKubeconfigError when nothing names a cluster:
// no --server, no cluster in the kubeconfig files client-go reads, and no
// in-cluster service account. An unreadable or invalid kubeconfig is a usage
// error with clientcmd's reason.
func (a *app) checkKubeconfig() error {
	if s := a.flags.APIServer; s != nil && *s != "" {
		return nil
	}
	loader := a.flags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return usagef("kubeconfig: %w", err)
	}
	icc, inCluster := inClusterState()
	if len(raw.Clusters) > 0 && !inCluster {
		return checkContext(raw, loader.ConfigAccess().GetLoadingPrecedence(), a.flags)
	}
	if inCluster {
		return nil
	}
	var looked []string
	if p := a.flags.KubeConfig; p != nil && *p != "" {
		looked = append(looked, fmt.Sprintf("--kubeconfig %s (%s)", *p, fileState(*p)))
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
func checkContext(raw clientcmdapi.Config, files []string, f *genericclioptions.ConfigFlags) error {
	if f.ClusterName != nil && *f.ClusterName != "" {
		return nil
	}
	name := raw.CurrentContext
	if f.Context != nil && *f.Context != "" {
		name = *f.Context
	}
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	where := strings.Join(files, string(filepath.ListSeparator))
	if p := f.KubeConfig; p != nil && *p != "" {
		where = *p
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
