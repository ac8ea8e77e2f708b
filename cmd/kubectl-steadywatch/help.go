package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// connectionFlags are the global flags a command's help shows under its own
// flags; `kubectl steadywatch options` lists all of them (kubectl's kubeconfig,
// authentication, impersonation and TLS flags, and -v).
var connectionFlags = []string{"namespace", "kubeconfig", "context", "request-timeout", "v"}

// writeUsage is every command's usage: its own flags first, then the few
// global flags most used, then a pointer to `options` for the rest (the
// layout of kubectl's own help).
func writeUsage(w io.Writer, c *command, global *pflag.FlagSet) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.RunE != nil {
		fmt.Fprintf(&b, "  %s\n", c.UseLine())
	}
	if len(c.subs) > 0 {
		fmt.Fprintf(&b, "  %s [command]\n", c.CommandPath())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if len(c.subs) > 0 {
		b.WriteString("\nAvailable Commands:\n")
		pad := len("help")
		for _, sub := range c.subs {
			pad = max(pad, len(sub.Name()))
		}
		pad = max(pad, 11)
		rows := append([]*command{{Use: "help", Short: "Help about any command"}}, c.subs...)
		sort.Slice(rows, func(i, j int) bool { return rows[i].Name() < rows[j].Name() })
		for _, sub := range rows {
			fmt.Fprintf(&b, "  %-*s %s\n", pad, sub.Name(), sub.Short)
		}
	}
	own := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if global.Lookup(f.Name) == nil && !f.Hidden {
			own.AddFlag(f)
		}
	})
	if own.HasFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", own.FlagUsages())
	}
	conn := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	for _, name := range connectionFlags {
		if f := global.Lookup(name); f != nil {
			conn.AddFlag(f)
		}
	}
	if c.Annotations[annotationOffline] == "" {
		fmt.Fprintf(&b, "\nConnection flags:\n%s", conn.FlagUsages())
		fmt.Fprintf(&b, "\nUse \"%s options\" for every global flag (kubeconfig, authentication, impersonation, TLS).\n", displayName)
	}
	if len(c.subs) > 0 {
		fmt.Fprintf(&b, "Use \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// annotationOffline marks a command that never connects to a server: its
// help does not show the connection flags.
const annotationOffline = "steadywatch.io/offline"

func newOptionsCommand(out io.Writer, global *pflag.FlagSet) *command {
	return &command{
		Use:         "options",
		Short:       "List the global flags every command takes (kubeconfig, authentication, TLS, -v)",
		Args:        noArgs,
		Annotations: map[string]string{annotationOffline: "true"},
		RunE: func(*command, []string) error {
			_, err := fmt.Fprintf(out, "The following options can be passed to any command:\n\n%s", global.FlagUsages())
			return err
		},
	}
}
