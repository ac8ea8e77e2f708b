// Command demo is the README's first command: it runs a stock client-go
// informer and steadywatch's reflector side by side against real
// kube-apiservers (built, or reused from e2e/.cache, by the harness, with
// progress on stderr) while real trouble happens, prints a timeline of what
// each one sent and did, and ends with a summary table.
//
//	cd e2e && go run ./cmd/demo [--scenes legacy,compaction,drop,ha] [--timeout 5m] [--stock-bound 20s] [-v]
//
// Scenes (each on its own fresh cluster, both clients over the same server,
// each behind its own fault proxy so every request it sends is on record):
//
//   - legacy: a build.Legacy (v1.18.19) apiserver, which ignores sendInitialEvents. client-go
//     v0.37 opens a streaming list and waits for an initial-events-end
//     bookmark that never comes (it is given --stock-bound); steadywatch
//     knows from /version that the server cannot stream and lists.
//   - compaction: build.Current (v1.37.2) with the watch cache off (lists and watches served
//     by etcd). etcd moves on and is compacted, then both watches are
//     dropped: re-opened from their last resourceVersion they get 410 Gone.
//     steadywatch relists NotOlderThan(last); the request is shown.
//   - drop: build.Current; both watches are dropped mid-stream: steadywatch resumes
//     from its last resourceVersion without relisting.
//   - ha: two build.Current apiservers on one etcd, requests alternating between
//     them; one member is restarted (its watch cache re-initialises from etcd
//     and it refuses connections meanwhile) while watches are dropped and
//     objects written. This is the lag this machine can reproduce: a restarted
//     member, not a live member whose watch cache falls behind.
//
// At the end of every scene one more object is written and both stores are
// compared with a fresh MostRecent list from the apiserver. The exit status
// is 0 when steadywatch's side is correct in every scene (synced, store equal
// to the truth, never back in time), 1 otherwise, 2 on bad flags. The stock
// informer failing is expected and reported, not an error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/e2e/harness/build"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	scenes     []string
	timeout    time.Duration
	stockBound time.Duration
	verbose    bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenes := fs.String("scenes", strings.Join(sceneNames(), ","), "comma-separated scenes to run, in order: "+strings.Join(sceneNames(), ", "))
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the scenes (building the servers on a first run comes before, bounded separately by 30m)")
	stockBound := fs.Duration("stock-bound", 20*time.Second, "how long the stock informer is given to sync")
	verbose := fs.Bool("v", false, "also print client-go's and the harness's own logs (stderr)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	c := config{timeout: *timeout, stockBound: *stockBound, verbose: *verbose}
	for _, s := range strings.Split(*scenes, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, ok := sceneByName(s); !ok {
			return config{}, fmt.Errorf("unknown scene %q (want some of %s)", s, strings.Join(sceneNames(), ", "))
		}
		c.scenes = append(c.scenes, s)
	}
	if len(c.scenes) == 0 {
		return config{}, errors.New("no scene selected")
	}
	if c.timeout <= 0 || c.stockBound <= 0 {
		return config{}, errors.New("--timeout and --stock-bound must be positive")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "demo:", err)
		}
		return 2
	}
	if !cfg.verbose {
		// client-go's informer logs through klog's global logger; the timeline
		// shows what it did instead.
		klog.SetLogger(logr.Discard())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Build (first run: minutes, with progress on stderr) or reuse the
	// servers first, outside --timeout, which bounds the scenes.
	if err := ensureBinaries(ctx, cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	t := newTimeline(stdout)
	var results []result
	failed := false
	for i, name := range cfg.scenes {
		sc, _ := sceneByName(name)
		t.raw("")
		t.raw("== scene %d/%d: %s — %s", i+1, len(cfg.scenes), sc.name, sc.title)
		res, err := runScene(ctx, t, sc, cfg, stderr)
		results = append(results, res...)
		if err != nil {
			t.say("demo", "scene %s could not run: %v", sc.name, err)
			failed = true
			if ctx.Err() != nil {
				break
			}
		}
	}
	printSummary(t, results)
	for _, r := range results {
		if r.who == "ours" && !r.ok() {
			failed = true
		}
	}
	if failed {
		t.raw("\nRESULT: steadywatch was NOT correct in every scene (see above).")
		return 1
	}
	t.raw("\nRESULT: steadywatch synced, never went back in time, and ended equal to the apiserver in every scene.")
	return 0
}

// result is one side's outcome in one scene.
type result struct {
	scene, who string
	syncedIn   time.Duration
	synced     bool
	syncs      int            // lists + streaming lists on the wire
	causes     map[string]int // ours: relist causes
	fallbacks  map[string]int // ours: lister fallback reasons
	decision   string         // ours: a sync path chosen as a fallback (compat)
	requests   int
	storeOK    bool
	storeNote  string
	backward   int64
}

func (r result) ok() bool { return r.synced && r.storeOK && r.backward == 0 }

func printSummary(t *timeline, results []result) {
	t.raw("")
	t.raw("== summary (requests and syncs counted on the wire by each side's proxy; relists = syncs after the first)")
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scene\tside\tsync time\trelists\tfallbacks by reason\trequests\twent back\tfinal store == truth")
	for _, r := range results {
		sync := "never"
		if r.synced {
			sync = r.syncedIn.Round(time.Millisecond).String()
		}
		relists := "0"
		if r.syncs > 1 {
			relists = fmt.Sprint(r.syncs - 1)
		}
		if len(r.causes) > 0 {
			relists += " (" + counts(r.causes) + ")"
		}
		fb := "-"
		if r.who == "stock" {
			fb = "(not reported)"
		} else {
			var parts []string
			if r.decision != "" {
				parts = append(parts, r.decision)
			}
			if len(r.fallbacks) > 0 {
				parts = append(parts, counts(r.fallbacks))
			}
			if len(parts) > 0 {
				fb = strings.Join(parts, "; ")
			}
		}
		verdict := "yes"
		if !r.storeOK {
			verdict = "NO"
		}
		if r.storeNote != "" {
			verdict += " (" + r.storeNote + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.scene, r.who, sync, relists, fb, r.requests, r.backward, verdict)
	}
	_ = w.Flush()
	t.raw("%s", strings.TrimRight(b.String(), "\n"))
}

// buildTimeout bounds building the kube-apiservers (cold: several minutes each on 2 cores).
const buildTimeout = 30 * time.Minute

func ensureBinaries(ctx context.Context, cfg config, progress io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	seen := map[string]bool{}
	for _, name := range cfg.scenes {
		sc, _ := sceneByName(name)
		if v := sc.opts.Version; !seen[v] {
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

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
