// Command soak-faults holds each persistent fault of e2e/soak's catalogue
// against a real kube-apiserver behind the fault proxy, with stock client-go
// and steadywatch's adoption paths side by side (`make soak-faults`), prints
// each measurement, writes the generated section of
// docs/bad-server-data.md (-out) and the measurements as JSON (-json), and
// exits 1 when a guarantee was violated (after writing both).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/e2e/soak"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("soak-faults", flag.ContinueOnError)
	duration := fs.Duration("duration", 60*time.Second, "how long each fault holds")
	recovery := fs.Duration("recovery", 60*time.Second, "how long each path may take, after the lift, to hold what the server holds")
	only := fs.String("faults", "", "comma-separated fault IDs to hold (default: all): "+ids())
	paths := fs.String("paths", "", "comma-separated paths to run side by side (default: all): "+strings.Join(soak.PathIDs(), ","))
	out := fs.String("out", "", "markdown file whose generated section (between the soak-faults markers) is replaced; \"\" = none")
	jsonOut := fs.String("json", "", "write the measurements as JSON to this file; \"\" = none")
	from := fs.String("from-json", "", "run nothing: judge again and render -out from the measurements of an earlier run (its -json file)")
	command := fs.String("command", "", "the command line the generated section names (default: the make target with this run's settings)")
	klogFile := fs.String("klog", "", "write client-go's and steadywatch's logs (klog) to this file; \"\" = discard")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o := soak.Options{Duration: *duration, Recovery: *recovery, Progress: os.Stderr}
	if *only != "" {
		fl, unknown := soak.ByID(strings.Split(*only, ","))
		if len(unknown) > 0 {
			fmt.Fprintf(os.Stderr, "soak-faults: unknown fault(s) %s; known: %s\n", strings.Join(unknown, ", "), ids())
			return 2
		}
		o.Faults = fl
	}
	if *paths != "" {
		pl, unknown := soak.PathsByID(strings.Split(*paths, ","))
		if len(unknown) > 0 {
			fmt.Fprintf(os.Stderr, "soak-faults: unknown path(s) %s; known: %s\n", strings.Join(unknown, ", "), strings.Join(soak.PathIDs(), ","))
			return 2
		}
		o.Paths = pl
	}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	if *klogFile != "" {
		f, err := os.Create(*klogFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak-faults:", err)
			return 1
		}
		defer f.Close()
		klog.SetOutput(f)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var rep *soak.Report
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err == nil {
			rep = &soak.Report{}
			err = json.Unmarshal(b, rep)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak-faults:", err)
			return 1
		}
		// Judged again with this build's checks.
		for i := range rep.Faults {
			rep.Faults[i].Violations = soak.Check(rep.Faults[i].Results, rep.Duration)
		}
	} else {
		var err error
		if rep, err = soak.Run(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, "soak-faults:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "soak-faults: %d fault(s) in %s\n", len(rep.Faults), rep.Wall.Round(time.Second))
	}
	if *jsonOut != "" && *from == "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak-faults:", err)
			return 1
		}
	}
	if *out != "" {
		cmd := *command
		if cmd == "" {
			cmd = fmt.Sprintf("make soak-faults SOAK_DURATION=%s SOAK_RECOVERY=%s", rep.Duration, rep.Recovery)
			if *only != "" {
				cmd += " SOAK_FAULTS=" + *only
			}
			if *paths != "" {
				cmd += " (soak-faults -paths " + *paths + ")"
			}
		}
		doc, err := os.ReadFile(*out)
		if err == nil {
			doc, err = soak.Splice(doc, soak.Render(rep, cmd))
		}
		if err == nil {
			err = os.WriteFile(*out, doc, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak-faults:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "soak-faults: wrote %s\n", *out)
	}
	if v := rep.Violations(); len(v) > 0 {
		fmt.Fprintf(os.Stderr, "soak-faults: %d violation(s):\n", len(v))
		for _, s := range v {
			fmt.Fprintln(os.Stderr, "  "+s)
		}
		return 1
	}
	return 0
}

func ids() string {
	var s []string
	for _, f := range soak.Catalogue {
		s = append(s, f.ID)
	}
	return strings.Join(s, ",")
}
