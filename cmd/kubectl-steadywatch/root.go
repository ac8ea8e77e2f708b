package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
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
	flags  *genericclioptions.ConfigFlags
	out    io.Writer
	errOut io.Writer
}

// run executes the plugin with args and returns the process exit code. Errors
// are printed as one line on errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	cmd := newRootCommand(out, errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(errOut, "kubectl-steadywatch: error: %s\n", oneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsageError recognises the errors cobra and pflag return for unknown
// commands and flags and bad flag values (they carry no type).
func isCobraUsageError(err error) bool {
	var ne *pflag.NotExistError
	var ve *pflag.ValueRequiredError
	var iv *pflag.InvalidValueError
	var is *pflag.InvalidSyntaxError
	if errors.As(err, &ne) || errors.As(err, &ve) || errors.As(err, &iv) || errors.As(err, &is) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument", "accepts ", "requires "} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func newRootCommand(out, errOut io.Writer) *cobra.Command {
	a := &app{flags: genericclioptions.NewConfigFlags(true), out: out, errOut: errOut}
	root := &cobra.Command{
		Use:   "kubectl-steadywatch",
		Short: "Probe and use Kubernetes list/watch resourceVersion semantics (KEP-2523) safely",
		Long: `kubectl steadywatch shows what an apiserver really does with resourceVersion
and lists and watches through the steadywatch SDK.

Exit codes: 0 success, 1 runtime failure (server unreachable, missing right,
list failed, not synced in time, interrupted), 2 usage error (bad flag or
argument, no kubeconfig, a request the server refuses as given).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl steadywatch",
		},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.Version = readBuildVersion().Plugin
	// --version prints what `version` prints.
	root.SetVersionTemplate(readBuildVersion().String())
	// The kubeconfig flags (kubectl's), with a non-zero request timeout.
	timeout := defaultRequestTimeout
	a.flags.Timeout = &timeout
	global := pflag.NewFlagSet("global", pflag.ContinueOnError)
	a.flags.AddFlags(global)
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	// Only the verbosity is useful here; the other klog flags stay at their defaults.
	global.AddGoFlag(gofs.Lookup("v"))
	global.Lookup("request-timeout").Usage = "bound on each request to the server (0 = none); a watch is bounded until its response starts, its stream is not cut"
	root.PersistentFlags().AddFlagSet(global)
	root.SetUsageFunc(func(c *cobra.Command) error { return writeUsage(c.OutOrStderr(), c, global) })
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		cmd.SetContext(klog.NewContext(cmd.Context(), klog.Background()))
	}
	root.AddCommand(newProbeCommand(a), newListCommand(a), newSyncCommand(a), newVersionCommand(out), newOptionsCommand(out, global))
	return root
}

// outputFormat validates -o.
func outputFormat(o string) error {
	switch o {
	case "", "table", "json":
		return nil
	}
	return usagef("unsupported output format %q (want table or json)", o)
}
