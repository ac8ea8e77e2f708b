package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Exit codes, documented in README.md.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks an error as the caller's (bad flag or argument): exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// app is what every subcommand shares.
type app struct {
	// kubeconfig is --kubeconfig; overrides are the other kubeconfig flags.
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	// config is the kubeconfig loaded with the flags, built once they are parsed.
	config clientcmd.ClientConfig
	out    io.Writer
	errOut io.Writer
}

// run executes the plugin with args and returns the process exit code. Errors
// are printed as one line on errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	err := newCLI(out, errOut).execute(ctx, args)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(errOut, "kubectl-steadywatch: error: %s\n", oneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// newCLI builds the root command, its subcommands and the global flags:
// kubectl's kubeconfig flags (client-go's clientcmd: --kubeconfig, --context,
// -n/--namespace, --server, --token, --as, TLS...) with a non-zero
// --request-timeout, and klog's -v.
func newCLI(out, errOut io.Writer) *cli {
	a := &app{out: out, errOut: errOut}
	root := &command{
		Use:   "kubectl-steadywatch",
		Short: "Probe and use Kubernetes list/watch resourceVersion semantics (KEP-2523) safely",
		Long: `kubectl steadywatch shows what an apiserver really does with resourceVersion
and lists and watches through the steadywatch SDK.

Exit codes: 0 success, 1 runtime failure (server unreachable, missing right,
list failed, not synced in time, interrupted), 2 usage error (bad flag or
argument, no kubeconfig, a request the server refuses as given).`,
	}
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	global.SortFlags = true
	a.bindFlags(global)
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	// Only the verbosity is useful here; the other klog flags stay at their defaults.
	global.AddGoFlag(gofs.Lookup("v"))
	root.AddCommand(newProbeCommand(a), newListCommand(a), newSyncCommand(a), newVersionCommand(out), newOptionsCommand(out, global))
	// --version prints what `version` prints.
	return &cli{root: root, global: global, out: out, version: readBuildVersion().String()}
}

// outputFormat validates -o.
func outputFormat(o string) error {
	switch o {
	case "", "table", "json":
		return nil
	}
	return usagef("unsupported output format %q (want table or json)", o)
}
