// Command demo is the README's first command: stock client-go and
// steadywatch side by side on real kube-apiservers (built, or reused from the
// harness's cache, with progress on stderr) through the faults users meet,
// each scene seconds long, ending with a summary table.
//
//	cd e2e && go run ./cmd/demo [--scenes redelivered,cut-stream,...|help] [--timeout 5m] [-v]
//
// Both sides are the same program: a ConfigMap informer from client-go's
// SharedInformerFactory. Stock is that factory with client-go's defaults;
// ours is built by reflector.NewSharedInformerFactoryWithOptions, the one
// line a user changes. Each watches the scene's namespace through a fault
// proxy of its own, so every request it sends is on record and counted. The faults are the e2e/soak catalogue's,
// held for seconds instead of the soak's minute:
//
//   - redelivered: each object's previous MODIFIED re-sent after the newer
//     one (build.Current);
//   - cut-stream: every streaming list ended right before its end bookmark
//     (build.Current);
//   - bad-bookmark: watch bookmarks at resourceVersion "abc", the watch
//     ended after each (build.Current);
//   - retry-after: every list and watch answered 429 with Retry-After: -1
//     (build.Current);
//   - legacy: a build.Legacy (v1.18.19) apiserver, which ignores
//     sendInitialEvents;
//   - stale-reads: every watch event held back 300 ms while a controller
//     loop writes an object and reads it right back, 30 times: stock from
//     its informer's cache, ours through readyourwrites.Client
//     (build.Current);
//   - drop: the watch connections dropped mid-stream, the control scene
//     where both sides end correct (build.Current).
//
// After the fault is lifted one more object is written and both stores are
// compared with a fresh MostRecent list from the apiserver. A side is
// correct when it never went back in time (in stale-reads: never read its
// own object older than its own write), sent no request storm (at most
// soak.LoopBound requests in any 10 s) and ends equal to the server. The
// exit status is 0 when ours is correct in every scene, 1 otherwise, 2 on
// bad flags. Stock failing is what the demo shows, not an error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/soak"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	scenes  []string
	timeout time.Duration
	verbose bool
	help    bool // --scenes help: list the scenes
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenesFlag := fs.String("scenes", strings.Join(sceneNames(), ","), "comma-separated scenes to run, in order (\"help\" lists them): "+strings.Join(sceneNames(), ", "))
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the scenes (building the servers on a first run comes before, bounded separately by 30m)")
	verbose := fs.Bool("v", false, "also print a timeline of each side's first requests and client-go's and the harness's own logs (stderr)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	c := config{timeout: *timeout, verbose: *verbose}
	for _, s := range strings.Split(*scenesFlag, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s == "help" {
			c.help = true
			continue
		}
		if _, ok := sceneByName(s); !ok {
			return config{}, fmt.Errorf("unknown scene %q; the scenes:\n%s", s, sceneList())
		}
		c.scenes = append(c.scenes, s)
	}
	if len(c.scenes) == 0 && !c.help {
		return config{}, errors.New("no scene selected; the scenes:\n" + sceneList())
	}
	if c.timeout <= 0 {
		return config{}, errors.New("--timeout must be positive")
	}
	return c, nil
}

// sceneList is one line per scene: its name and fault.
func sceneList() string {
	var b strings.Builder
	for _, s := range scenes {
		fmt.Fprintf(&b, "  %-12s %s\n", s.name, s.fault)
	}
	return strings.TrimRight(b.String(), "\n")
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "demo:", err)
		}
		return 2
	}
	if cfg.help {
		fmt.Fprintf(stdout, "make demo SCENE=name (or a comma-separated list); the scenes, in order:\n%s\n", sceneList())
		return 0
	}
	if !cfg.verbose {
		// client-go's informers log through klog's global logger; the
		// summary says what they did instead.
		klog.SetLogger(logr.Discard())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := demo(ctx, cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	for _, r := range results {
		if r.who == ours && len(r.failures()) > 0 {
			fmt.Fprintln(stdout, "\nRESULT: steadywatch was NOT correct in every scene (see above).")
			return 1
		}
	}
	fmt.Fprintln(stdout, "\nRESULT: steadywatch never went back in time, never stormed, and ended equal to the apiserver in every scene.")
	return 0
}

// demo runs cfg's scenes and prints each one's start and result lines and
// the summary; it returns every scene's results (stock's, then ours').
func demo(ctx context.Context, cfg config, stdout, progress io.Writer) ([]result, error) {
	begin := time.Now()
	// Build (first run: minutes, with progress on stderr) or reuse the
	// servers first, outside --timeout, which bounds the scenes.
	if err := ensureBinaries(ctx, cfg, progress); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	t := newTimeline(stdout, cfg.verbose)
	var current *harness.Cluster
	defer func() {
		if current != nil {
			_ = current.Stop()
		}
	}()
	var results []result
	var errs []error
	for i, name := range cfg.scenes {
		sc, _ := sceneByName(name)
		var c *harness.Cluster
		if sc.legacy {
			lc, err := startCluster(ctx, t, build.Legacy, progress)
			if err != nil {
				errs = append(errs, fmt.Errorf("scene %s: %w", sc.name, err))
				continue
			}
			c = lc
		} else {
			if current == nil {
				cc, err := startCluster(ctx, t, build.Current, progress)
				if err != nil {
					errs = append(errs, fmt.Errorf("scene %s: %w", sc.name, err))
					continue
				}
				current = cc
			}
			c = current
		}
		t.raw("")
		t.say("scene", "%d/%d %s: %s. Watch for: %s", i+1, len(cfg.scenes), sc.name, sc.fault, sc.watch)
		res, err := runScene(ctx, t, sc, c, cfg)
		if sc.legacy {
			if serr := c.Stop(); serr != nil && err == nil {
				err = serr
			}
		}
		if err != nil {
			t.say("demo", "scene %s could not run: %v", sc.name, err)
			errs = append(errs, fmt.Errorf("scene %s: %w", sc.name, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		t.say("result", "%s: %s", sc.name, resultLine(res))
		results = append(results, res...)
	}
	printSummary(t, results)
	t.raw("\n%d scene(s) in %v (servers built or reused first).", len(results)/2, time.Since(begin).Round(100*time.Millisecond))
	return results, errors.Join(errs...)
}

func startCluster(ctx context.Context, t *timeline, version string, progress io.Writer) (*harness.Cluster, error) {
	start := time.Now()
	c, err := harness.Start(ctx, harness.Options{Version: version, Progress: progress})
	if err != nil {
		return nil, err
	}
	t.say("demo", "kube-apiserver %s started in %v", version, time.Since(start).Round(100*time.Millisecond))
	return c, nil
}

// result is one side's outcome in one scene.
type result struct {
	scene, who string
	syncedIn   time.Duration
	synced     bool
	backward   []string  // objects applied older than before
	wire       soak.Wire // every list and watch of the scene's ConfigMaps
	// recovered: the store held what the server holds, recoveredIn after
	// the lift; waited is how long after the lift it was checked.
	recovered   bool
	recoveredIn time.Duration
	waited      time.Duration
	storeOK     bool // the store equals the server's at the end
	storeNote   string
	counters    string      // ours: fallbacks and relists by reason
	loop        *loopResult // the stale-reads scene's controller loop; nil elsewhere
}

// failures are what the side did wrong: went back in time, a request
// storm, never synced, a store that differs from the server's at the end.
// None means correct.
func (r result) failures() []string {
	var f []string
	if n := len(r.backward); n > 0 {
		f = append(f, fmt.Sprintf("went back in time %d times (%s)", n, r.backward[0]))
	}
	if l := r.loop; l != nil && l.stale > 0 {
		f = append(f, fmt.Sprintf("went back in time: %d of %d reads right after its own write were stale", l.stale, l.cycles))
	}
	if r.wire.Busiest10s > soak.LoopBound {
		f = append(f, fmt.Sprintf("request storm: %d requests in one 10 s", r.wire.Busiest10s))
	}
	if !r.synced {
		f = append(f, "never synced")
	}
	if !r.storeOK {
		f = append(f, fmt.Sprintf("store != server %.0f s after the fault (%s)", r.waited.Seconds(), r.storeNote))
	}
	return f
}

// wentBack is the summary's "went back" count: objects the side's informer
// applied older than before, plus, in the stale-reads scene, reads right
// after the side's own write that returned an object older than the write.
func (r result) wentBack() int {
	n := len(r.backward)
	if r.loop != nil {
		n += r.loop.stale
	}
	return n
}

func (r result) verdict() string {
	if f := r.failures(); len(f) > 0 {
		return "WRONG: " + strings.Join(f, "; ")
	}
	return "correct"
}

// resultLine is a scene's result line: both sides' verdicts.
func resultLine(res []result) string {
	var parts []string
	for _, r := range res {
		extra := ""
		if r.loop != nil && r.loop.stale == 0 { // otherwise the verdict says it
			extra = "; " + r.loop.String()
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s%s)", r.who, r.verdict(), plural(r.wire.Requests, "request"), extra))
	}
	return strings.Join(parts, " | ")
}

func (r result) recoveredText() string {
	if r.recovered {
		return fmt.Sprintf("yes, %.1f s", r.recoveredIn.Seconds())
	}
	return fmt.Sprintf("no (%.0f s)", r.waited.Seconds())
}

func printSummary(t *timeline, results []result) {
	t.raw("")
	t.raw("== summary (requests: every ConfigMap list and watch of the side, counted by its own proxy, client-go's retries included)")
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scene\tside\twent back\trequests\tbusiest 10 s\trecovered after the fault\tfinal store == server\tverdict")
	for _, r := range results {
		store := "yes"
		if !r.storeOK {
			store = "NO"
		}
		verdict := "correct"
		if len(r.failures()) > 0 {
			verdict = "WRONG"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.scene, r.who, r.wentBack(), r.wire.Requests, r.wire.Busiest10s, r.recoveredText(), store, verdict)
	}
	_ = w.Flush()
	t.raw("%s", strings.TrimRight(b.String(), "\n"))
	for _, r := range results {
		if r.loop != nil {
			t.raw("%s in %s: %s", r.who, r.scene, r.loop)
		}
		if r.who == ours && r.counters != "" {
			t.raw("ours in %s: %s", r.scene, r.counters)
		}
	}
}

// buildTimeout bounds building the kube-apiservers (cold: several minutes each on 2 cores).
const buildTimeout = 30 * time.Minute

func ensureBinaries(ctx context.Context, cfg config, progress io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	seen := map[string]bool{}
	for _, name := range cfg.scenes {
		sc, _ := sceneByName(name)
		v := build.Current
		if sc.legacy {
			v = build.Legacy
		}
		if !seen[v] {
			seen[v] = true
			start := time.Now()
			bin, err := build.Ensure(ctx, v, progress)
			if err != nil {
				return fmt.Errorf("kube-apiserver %s: %w", v, err)
			}
			fmt.Fprintf(progress, "demo: kube-apiserver %s ready (%s) in %v\n", v, bin, time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// plural is "1 request", "2 requests".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
