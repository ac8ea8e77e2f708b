// Command matrix generates docs/compatibility.md: for each kube-apiserver
// version and configuration it runs the matrix battery (package
// e2e/matrix) against real servers started by the harness, for steadywatch
// and for a stock client-go informer, and optionally folds in chaos results
// written by `go test ./chaos -chaos.report=FILE`.
//
//	cd e2e && go run ./cmd/matrix -versions v1.18.19,v1.37.2 -mixed v1.18.19+v1.37.2 -out ../docs/compatibility.md
//
// -versions run the single-version configurations (watch cache on, off, HA
// pair); -mixed pairs "old+new" run the mixed-version HA pair. -not-run
// "VERSION: why" (repeatable) records what was asked for and not run.
// -rows-from keeps the rows and chaos results of earlier reports (-json files
// or the page itself) and adds what -versions/-mixed run now, so a page can
// grow by one version at a time; the page says which run measured which rows:
//
//	go run ./cmd/matrix -rows-from ../docs/compatibility.md -versions v1.33.13 -out ../docs/compatibility.md
//
// Versions not yet built are built first (minutes each, cached in
// e2e/.cache). A version whose cluster cannot start becomes a "not run" row
// with the reason, so the table never silently omits what was asked for.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/steadywatch/steadywatch/e2e/chaos"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/matrix"
)

func main() {
	versions := flag.String("versions", build.Legacy+","+build.Current, "comma-separated kube-apiserver versions")
	mixed := flag.String("mixed", build.Legacy+"+"+build.Current, `comma-separated mixed-version HA pairs "old+new" ("" = none)`)
	var notRun []matrix.NotRun
	flag.Func("not-run", `"VERSION: why" for a version asked for and not run (repeatable)`, func(s string) error {
		v, why, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(v) == "" || strings.TrimSpace(why) == "" {
			return fmt.Errorf("want \"VERSION: why\", got %q", s)
		}
		notRun = append(notRun, matrix.NotRun{Server: strings.TrimSpace(v), Why: strings.TrimSpace(why)})
		return nil
	})
	configs := flag.String("configs", "", "comma-separated configuration names (default: all: "+configNames()+")")
	out := flag.String("out", "", "markdown output path (default: stdout)")
	jsonOut := flag.String("json", "", "also write the raw report as JSON here")
	chaosFiles := flag.String("chaos", "", "comma-separated chaos result files (go test ./chaos -chaos.report=FILE) to include")
	timeout := flag.Duration("timeout", 60*time.Minute, "bound on the whole run")
	rowsFrom := flag.String("rows-from", "", "comma-separated earlier reports, oldest first (a -json file, or a page this command wrote, e.g. ../docs/compatibility.md): "+
		"their rows and chaos results are kept, each row attributed to the run that measured it; servers are then run only if -versions or -mixed is given, and their rows replace earlier ones")
	flag.Parse()
	explicit := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { explicit[f.Name] = true })

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *timeout)
	defer cancelT()

	rep := matrix.Report{
		Generated: time.Now().UTC().Format(time.RFC3339),
		Command:   "go run ./cmd/matrix " + strings.Join(commandArgs(os.Args[1:]), " "),
		Go:        runtime.Version(),
		ClientGo:  "client-go " + clientGoVersion(),
		NotRun:    notRun,
	}
	var cfgs []matrix.Config
	for _, c := range matrix.Configs {
		if *configs == "" || contains(strings.Split(*configs, ","), c.Name) {
			cfgs = append(cfgs, c)
		}
	}
	var servers []string
	for _, l := range []struct{ flag, list string }{{"versions", *versions}, {"mixed", *mixed}} {
		name, list := l.flag, l.list
		if *rowsFrom != "" && !explicit[name] {
			continue // with earlier rows, only what is asked for is run
		}
		for _, v := range strings.Split(list, ",") {
			if v = strings.TrimSpace(v); v != "" {
				servers = append(servers, v)
			}
		}
	}
	var earlier []matrix.Report
	if *rowsFrom != "" {
		for _, f := range strings.Split(*rowsFrom, ",") {
			prev, err := readReport(strings.TrimSpace(f))
			if err != nil {
				fail(fmt.Errorf("rows-from %s: %w", f, err))
			}
			earlier = append(earlier, prev)
		}
	}
	own := matrix.Report{Generated: rep.Generated, Command: rep.Command, Go: rep.Go, ClientGo: rep.ClientGo}
	seconds := map[string]float64{}
	for _, v := range servers {
		for _, c := range cfgs {
			if c.Mixed != matrix.IsPair(v) {
				continue
			}
			fmt.Fprintf(os.Stderr, "matrix: %s / %s ...\n", v, c.Name)
			begin := time.Now()
			row, err := matrix.Run(ctx, v, c, matrix.Options{Progress: os.Stderr})
			if err != nil {
				row.Err = err.Error()
				if i := strings.IndexByte(row.Err, '\n'); i > 0 {
					row.Err = row.Err[:i] // keep the table readable; the log tail went to stderr
				}
				fmt.Fprintf(os.Stderr, "matrix: %s / %s: %v\n", v, c.Name, err)
			}
			took := time.Since(begin)
			seconds[v] += took.Seconds()
			fmt.Fprintf(os.Stderr, "matrix: %s / %s done in %s\n", v, c.Name, took.Round(time.Millisecond))
			own.Rows = append(own.Rows, row)
			if ctx.Err() != nil {
				fail(ctx.Err())
			}
		}
	}
	if len(own.Rows) > 0 { // this run's own rows, with its time per server
		own.Runs = []matrix.RunInfo{{Generated: own.Generated, Command: own.Command, Go: own.Go, ClientGo: own.ClientGo, Seconds: seconds}}
		for i := range own.Rows {
			own.Rows[i].Run = 1
		}
	}
	rep.Rows, rep.Runs, rep.Chaos = matrix.Merge(append(earlier, own)...)
	rep.ChaosFrom = matrix.ChaosOrigins(earlier...)
	if *chaosFiles != "" {
		for _, f := range strings.Split(*chaosFiles, ",") {
			r, err := chaos.ReadResult(strings.TrimSpace(f))
			if err != nil {
				fail(fmt.Errorf("chaos result %s: %w", f, err))
			}
			rep.Chaos = append(rep.Chaos, r)
		}
	}
	md := matrix.Markdown(rep)
	if *out == "" {
		fmt.Print(md)
	} else if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fail(err)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

// commandArgs is args for the page's command line: -not-run values (long
// prose, shown in their own section) are replaced by "...".
func commandArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-not-run" || a == "--not-run":
			out = append(out, a, "...")
			i++
		case strings.HasPrefix(a, "-not-run=") || strings.HasPrefix(a, "--not-run="):
			out = append(out, "-not-run=...")
		case a == "" || strings.ContainsAny(a, " \t\"'"):
			out = append(out, strconv.Quote(a)) // e.g. -mixed "" stays visible
		default:
			out = append(out, a)
		}
	}
	return out
}

// readReport reads a report written with -json, or the page -out wrote.
func readReport(path string) (matrix.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return matrix.Report{}, err
	}
	return matrix.ParseReport(b)
}

func configNames() string {
	var n []string
	for _, c := range matrix.Configs {
		n = append(n, c.Name)
	}
	return strings.Join(n, ",")
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if strings.TrimSpace(v) == x {
			return true
		}
	}
	return false
}

func clientGoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "matrix:", err)
	os.Exit(1)
}
