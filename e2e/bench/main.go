// Command bench measures steadywatch against stock client-go v0.37.2, side
// by side in one run on the same real kube-apiserver (issue 9): P1 initial
// sync, P2 recovery after a watch 410, P3 a herd of informers across an
// apiserver restart, P4 per-event/per-page overhead (go test -bench), and
// the limit (decoding the same list once from memory). Every figure it
// reports is a ratio ours / stock from the same run; absolute times on a
// shared machine are noise.
//
//	cd e2e && go run ./bench -size small -out ../docs    # a few minutes on 2 cores
//	cd e2e && go run ./bench -size full  -out ../docs    # 10k and 50k ConfigMaps
//
// It writes <out>/benchmarks.md, <out>/bench/results.json and
// <out>/bench/p1.png, p2.png. Each contender runs in a child process of its
// own (this binary re-executed with "child"), so GC state is independent.
//
// It is not a test: it asserts only that every contender really synced the
// expected number of objects and that the injected fault really fired.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

type config struct {
	size      string
	out       string
	root      string
	count     int
	only      string
	herd      int
	herdObjs  int
	p1Sizes   []int
	p2Size    int
	benchtime string
	profile   string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		if err := runChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.StringVar(&c.size, "size", "small", "small (10k ConfigMaps, a few minutes) or full (10k and 50k)")
	flag.StringVar(&c.out, "out", "../docs", "directory for benchmarks.md; JSON and PNGs go to <out>/bench")
	flag.StringVar(&c.root, "root", "..", "the SDK module root (for P4's go test -bench)")
	flag.IntVar(&c.count, "count", 5, "repetitions per contender (interleaved)")
	flag.StringVar(&c.only, "only", "p1,p2,p3,p4", "comma-separated subset of p1,p2,p3,p4")
	flag.IntVar(&c.herd, "herd", 50, "informers per contender in P3")
	flag.StringVar(&c.profile, "profile", "", "P1: write a CPU profile of each contender's first repetition into this directory (perturbs that repetition)")
	flag.StringVar(&c.benchtime, "benchtime", "1s", "P4 -benchtime")
	objects := flag.Int("objects", 0, "override the object count of P1/P2 (and P3 when -herd-objects is 0); for quick trials")
	herdObjs := flag.Int("herd-objects", 0, "override the object count of P3")
	render := flag.String("render", "", "only re-render <out>/benchmarks.md and the charts from this results JSON (e.g. after editing docs/bench/notes.md)")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render, c.out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	switch c.size {
	case "small":
		c.p1Sizes, c.p2Size, c.herdObjs = []int{10000}, 10000, 1000
	case "full":
		c.p1Sizes, c.p2Size, c.herdObjs = []int{10000, 50000}, 10000, 5000
	default:
		fmt.Fprintln(os.Stderr, "bench: -size must be small or full")
		os.Exit(2)
	}
	if *objects > 0 {
		c.p1Sizes, c.p2Size = []int{*objects}, *objects
	}
	if *herdObjs > 0 {
		c.herdObjs = *herdObjs
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Hour)
	defer cancelT()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func (c config) want(p string) bool { return slices.Contains(strings.Split(c.only, ","), p) }

func run(ctx context.Context, c config) error {
	start := time.Now()
	rep := &report{Size: c.size, Count: c.count, Command: commandLine(), Env: environment(ctx, c)}
	var err error
	if c.root, err = filepath.Abs(c.root); err != nil {
		return err
	}
	if c.want("p4") {
		logf("P4: go test -bench (wrapper overhead) in %s", c.root)
		if rep.P4, err = runP4(ctx, c); err != nil {
			return fmt.Errorf("P4: %w", err)
		}
	}
	if c.want("p1") || c.want("p2") || c.want("p3") {
		b, err := startBench(ctx, c)
		if err != nil {
			return err
		}
		defer b.stop()
		rep.Env.Server = b.cluster.Version()
		if c.want("p1") {
			for _, n := range c.p1Sizes {
				r, err := b.runP1(ctx, n)
				if err != nil {
					return fmt.Errorf("P1 %d: %w", n, err)
				}
				rep.P1 = append(rep.P1, r)
			}
		}
		if c.want("p2") {
			if rep.P2, err = b.runP2(ctx, c.p2Size); err != nil {
				return fmt.Errorf("P2: %w", err)
			}
		}
		if c.want("p3") {
			if rep.P3, err = b.runP3(ctx); err != nil {
				return fmt.Errorf("P3: %w", err)
			}
		}
	}
	rep.Env.LoadEnd = loadAvg()
	rep.Env.DurationS = time.Since(start).Seconds()
	return rep.write(c.out)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func commandLine() string {
	return "cd e2e && go run ./bench " + strings.Join(os.Args[1:], " ")
}
