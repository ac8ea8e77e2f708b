package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// displayName is how the plugin names itself in help and errors: kubectl
// runs it as "kubectl steadywatch".
const displayName = "kubectl steadywatch"

// command is one subcommand (or the root): its help texts, its own flags
// and what it runs. The plugin parses its command line with spf13/pflag
// (kubectl's flag syntax, already a dependency of client-go's clientcmd)
// instead of a command framework, so that building it adds no module to
// the SDK's go.mod.
type command struct {
	Use     string // the command's name, then its arguments if any
	Short   string // one line, in the parent's command list
	Long    string // the help text above the usage
	Example string
	// Args checks the positional arguments (noArgs for every command here).
	Args func(c *command, args []string) error
	// RunE runs the command; nil for the root, which only prints its help.
	RunE        func(c *command, args []string) error
	Annotations map[string]string

	flags  *pflag.FlagSet
	parent *command
	subs   []*command
	ctx    context.Context
}

// Flags are the command's own flags (the global ones are added when the
// command line is parsed).
func (c *command) Flags() *pflag.FlagSet {
	if c.flags == nil {
		c.flags = pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
		c.flags.SetOutput(io.Discard)
		c.flags.SortFlags = true
	}
	return c.flags
}

// Context is the context the command runs with (a logger from klog in it).
func (c *command) Context() context.Context { return c.ctx }

// Name is the first word of Use.
func (c *command) Name() string {
	name, _, _ := strings.Cut(c.Use, " ")
	return name
}

// CommandPath is the command's name as typed: "kubectl steadywatch list".
func (c *command) CommandPath() string {
	if c.parent == nil {
		return displayName
	}
	return c.parent.CommandPath() + " " + c.Name()
}

// UseLine is the usage line of a runnable command.
func (c *command) UseLine() string {
	line := c.CommandPath()
	if _, rest, ok := strings.Cut(c.Use, " "); ok {
		line += " " + rest
	}
	if c.Flags().HasAvailableFlags() {
		line += " [flags]"
	}
	return line
}

// AddCommand adds subcommands; they are listed by name.
func (c *command) AddCommand(subs ...*command) {
	for _, s := range subs {
		s.parent = c
	}
	c.subs = append(c.subs, subs...)
	sort.Slice(c.subs, func(i, j int) bool { return c.subs[i].Name() < c.subs[j].Name() })
}

func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// noArgs refuses positional arguments, as a usage error.
func noArgs(c *command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], c.CommandPath())
	}
	return nil
}

// cli is the root command and the global flags every command takes.
type cli struct {
	root   *command
	global *pflag.FlagSet
	out    io.Writer
	// version is what --version prints.
	version string
}

// execute parses args (global flags, then a command, then its flags and the
// global flags again, in any order) and runs the command. A bad flag, an
// unknown command or an argument where none is taken is a *usageError.
// --help, -h and `help [command]` print the command's help on out.
func (x *cli) execute(ctx context.Context, args []string) error {
	rootFlags := x.root.Flags()
	rootFlags.AddFlagSet(x.global)
	help := rootFlags.BoolP("help", "h", false, "help for "+displayName)
	version := rootFlags.Bool("version", false, "version for "+displayName)
	rootFlags.SetInterspersed(false)
	if err := rootFlags.Parse(args); err != nil {
		return &usageError{err}
	}
	rest := rootFlags.Args()
	switch {
	case *version:
		_, err := io.WriteString(x.out, x.version)
		return err
	case *help || len(rest) == 0:
		return x.help(x.root)
	case rest[0] == "help":
		if len(rest) == 1 {
			return x.help(x.root)
		}
		sub := x.root.find(rest[1])
		if sub == nil {
			return usagef("unknown help topic %q for %q", strings.Join(rest[1:], " "), displayName)
		}
		x.addHelpFlag(sub)
		return x.help(sub)
	}
	sub := x.root.find(rest[0])
	if sub == nil {
		return usagef("unknown command %q for %q", rest[0], displayName)
	}
	fs := sub.Flags()
	help = x.addHelpFlag(sub)
	fs.AddFlagSet(x.global)
	if err := fs.Parse(rest[1:]); err != nil {
		return &usageError{err}
	}
	if *help {
		return x.help(sub)
	}
	if sub.Args != nil {
		if err := sub.Args(sub, fs.Args()); err != nil {
			return err
		}
	}
	sub.ctx = klog.NewContext(ctx, klog.Background())
	return sub.RunE(sub, fs.Args())
}

func (x *cli) addHelpFlag(c *command) *bool {
	return c.Flags().BoolP("help", "h", false, "help for "+c.Name())
}

// help prints a command's help: its long description, then its usage.
func (x *cli) help(c *command) error {
	text := c.Long
	if text == "" {
		text = c.Short
	}
	if text = strings.TrimRight(text, " \t\n"); text != "" {
		if _, err := fmt.Fprintf(x.out, "%s\n\n", text); err != nil {
			return err
		}
	}
	return writeUsage(x.out, c, x.global)
}
