// Command devcluster starts a real local Kubernetes control plane (embedded
// etcd + kube-apiserver built from the Go module proxy) for trying steadywatch
// by hand, and keeps it up until interrupted.
//
//	go run ./cmd/devcluster --server current|previous|legacy|floor|v1.Y.Z [--watch-cache=false] [--ha] [--watch-cache-off-on=1]
//
// Progress and a short how-to go to stderr. When the cluster is ready, exactly
// one line goes to stdout:
//
//	KUBECONFIG=<absolute path>
//
// so `eval "$(go run ./cmd/devcluster ... )"`-style scripting works. SIGINT or
// SIGTERM stops everything, removes the temporary directory and exits 0. Bad
// flags print usage and exit 2.
//
// It is a developer convenience, not a cluster: no controllers, scheduler or
// nodes, 127.0.0.1 only, a throw-away admin token.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
)

// startTimeout bounds the whole start, including a cold kube-apiserver build.
const startTimeout = 30 * time.Minute

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devcluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "current", "which kube-apiserver: current ("+build.Current+"), previous ("+build.Previous+"), legacy ("+build.Legacy+"), floor ("+build.Floor+"), or a release such as v1.17.17 (built on first use)")
	watchCache := fs.Bool("watch-cache", true, "apiserver watch cache; --watch-cache=false serves lists and watches from etcd")
	ha := fs.Bool("ha", false, "two apiservers on one etcd behind a balancer")
	var offOn []int
	fs.Func("watch-cache-off-on", "comma-separated indexes of the apiservers started with --watch-cache=false, the others keep their cache (with --ha, 1 gives a pair where apiserver-1 serves from etcd)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("not an apiserver index: %q", f)
			}
			offOn = append(offOn, i)
		}
		return nil
	})
	dir := fs.String("dir", "", "working directory to keep (logs, etcd data); default a temporary directory removed on exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: devcluster --server current|previous|legacy|floor|v1.Y.Z [--watch-cache=false] [--ha] [--watch-cache-off-on=I[,J]] [--dir DIR]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "devcluster: unexpected arguments: %v\n", fs.Args())
		fs.Usage()
		return 2
	}
	version, ok := serverVersion(*server)
	if !ok {
		fmt.Fprintf(stderr, "devcluster: --server must be current, previous, legacy, floor or a release v1.Y.Z, not %q\n", *server)
		fs.Usage()
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c, err := harness.Start(startCtx, harness.Options{
		Version:             version,
		DisableWatchCache:   !*watchCache,
		DisableWatchCacheOn: offOn,
		HA:                  *ha,
		Dir:                 *dir,
		Progress:            stderr,
	})
	if errors.Is(err, harness.ErrInvalidOptions) {
		fmt.Fprintf(stderr, "devcluster: %v\n", err)
		fs.Usage()
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "devcluster: %v\n", err)
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(stderr, "devcluster: stop: %v\n", err)
		}
	}()

	kc := c.KubeconfigPath()
	fmt.Fprintf(stderr, "\ndevcluster: kube-apiserver %s is up (%d apiserver(s)%s).\n",
		c.Version(), len(c.APIServers()), haNote(c))
	for _, a := range c.APIServers() {
		fmt.Fprintf(stderr, "  %s %s  watch cache %s  log: %s\n", a.Name(), a.URL(), onOff(!slices.Contains(a.Args(), "--watch-cache=false")), a.LogPath())
	}
	fmt.Fprintf(stderr, "  etcd %s\n", c.Etcd().Endpoint())
	fmt.Fprintf(stderr, "Use it:\n  kubectl --kubeconfig %s version\n  kubectl --kubeconfig %s get configmaps -A\n  export KUBECONFIG=%s\nCtrl-C stops it%s.\n\n", kc, kc, kc, removeNote(*dir))
	fmt.Fprintf(stdout, "KUBECONFIG=%s\n", kc)

	<-ctx.Done()
	fmt.Fprintf(stderr, "devcluster: stopping\n")
	return 0
}

// serverVersion maps --server to a kube-apiserver release: a name, or a
// release "v1.Y.Z" as is (the harness refuses what it cannot start).
func serverVersion(server string) (string, bool) {
	switch server {
	case "current":
		return build.Current, true
	case "previous":
		return build.Previous, true
	case "legacy":
		return build.Legacy, true
	case "floor":
		return build.Floor, true
	}
	if strings.HasPrefix(server, "v1.") {
		return server, true
	}
	return "", false
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func haNote(c *harness.Cluster) string {
	if b := c.Balancer(); b != nil {
		return ", balancer " + b.URL()
	}
	return ""
}

func removeNote(dir string) string {
	if dir == "" {
		return " and removes its files"
	}
	return " (" + dir + " is kept)"
}
