package modeltest

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

// The default number of histories of a run, and under the race detector.
const (
	defaultHistories     = 1000
	defaultHistoriesRace = 200
)

// Flags; each has an environment variable of the same meaning (the flag wins).
var (
	flagStream    = flag.Uint64("model.stream", 0, "random stream of the histories (env MODEL_STREAM; default 1; \"random\" in the env picks one)")
	flagHistories = flag.Int("model.histories", 0, "number of histories (env MODEL_HISTORIES; default 1000, 200 with -race)")
	flagDuration  = flag.Duration("model.duration", 0, "run histories for this long instead of a number (env MODEL_DURATION)")
	flagHistory   = flag.Int("model.history", -1, "play only this history of the stream (env MODEL_HISTORY)")
	flagParallel  = flag.Int("model.parallel", 0, "histories played at once (env MODEL_PARALLEL; default 64)")
	flagTrace     = flag.Bool("model.trace", false, "print every request and cache change (with -model.history)")
	flagShrink    = flag.Duration("model.shrink", 0, "time spent shrinking, shared by the failures (env MODEL_SHRINK; default 2m)")
)

func TestMain(m *testing.M) {
	// client-go logs every watch error of every informer at level 0.
	klog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}

type config struct {
	stream    uint64
	histories int
	duration  time.Duration
	only      int
	parallel  int
	shrink    time.Duration
}

func readConfig(t *testing.T) config {
	c := config{stream: *flagStream, histories: *flagHistories, duration: *flagDuration, only: *flagHistory, parallel: *flagParallel, shrink: *flagShrink}
	env := func(name string) string { return os.Getenv(name) }
	if c.stream == 0 {
		switch s := env("MODEL_STREAM"); s {
		case "":
			c.stream = 1
		case "random":
			c.stream = uint64(time.Now().UnixNano())
		default:
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("MODEL_STREAM=%q: %v", s, err)
			}
			c.stream = n
		}
	}
	atoi := func(name string, into *int) {
		if s := env(name); s != "" && *into <= 0 {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, s, err)
			}
			*into = n
		}
	}
	atoi("MODEL_HISTORIES", &c.histories)
	atoi("MODEL_PARALLEL", &c.parallel)
	if c.only < 0 {
		c.only = -1
		if s := env("MODEL_HISTORY"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("MODEL_HISTORY=%q: %v", s, err)
			}
			c.only = n
		}
	}
	dur := func(name string, into *time.Duration) {
		if s := env(name); s != "" && *into == 0 {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, s, err)
			}
			*into = d
		}
	}
	dur("MODEL_DURATION", &c.duration)
	dur("MODEL_SHRINK", &c.shrink)
	if c.histories <= 0 {
		c.histories = defaultHistories
		if raceEnabled {
			c.histories = defaultHistoriesRace
		}
	}
	if c.parallel <= 0 {
		c.parallel = 64
	}
	if c.shrink <= 0 {
		c.shrink = 2 * time.Minute
	}
	return c
}

// summary aggregates the results of many histories, per client.
type summary struct {
	mu        sync.Mutex
	histories int
	// failing: client -> kind -> histories with at least one such violation.
	failing map[string]map[string]int
	// first: client/kind -> the first failing history and one violation.
	first    map[string]firstFailure
	requests map[string]int
	window   time.Duration
	converge map[string][]time.Duration
	took     []time.Duration
	// relists, relistDeletes: per client, reflector.New's object-by-object
	// relists and the deletions they delivered, over every history.
	relists, relistDeletes map[string]int
	// wire: how the wire client's one-response lists were read, over every
	// history.
	wire wireResult
}

type firstFailure struct {
	h   history
	v   violation
	idx int
}

func (s *summary) add(idx int, h history, res result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.histories++
	seen := map[string]bool{}
	for _, v := range res.violations {
		k := v.client + "/" + v.kind
		if seen[k] {
			continue
		}
		seen[k] = true
		if s.failing[v.client] == nil {
			s.failing[v.client] = map[string]int{}
		}
		s.failing[v.client][v.kind]++
		if f, ok := s.first[k]; !ok || idx < f.idx {
			s.first[k] = firstFailure{h: h, v: v, idx: idx}
		}
	}
	for c, n := range res.requests {
		s.requests[c] += n
	}
	s.window += res.window
	s.took = append(s.took, res.took)
	for c, n := range res.relists {
		s.relists[c] += n
	}
	for c, n := range res.relistDeletes {
		s.relistDeletes[c] += n
	}
	s.wire.itemByItem += res.wire.itemByItem
	s.wire.gaveUp += res.wire.gaveUp
	s.wire.whole += res.wire.whole
	for c, d := range res.converge {
		s.converge[c] = append(s.converge[c], d)
	}
}

// minHistoriesForRelists is how many histories are enough for some of
// them to make reflector.New relist and delete, at a relist's end, objects
// deleted while its watch was down (TestModel checks that they do).
const minHistoriesForRelists = 200

// TestModel plays generated histories (1000 by default) against stock
// client-go, the drop-in informer and reflector.New, and fails on any
// violation of steadywatch's clients, printing each one's minimal history.
// Stock client-go's violations are reported beside them.
//
// Replay one history: go test ./internal/modeltest -run TestModel -model.stream=S -model.history=N -v
// Soak: MODEL_HISTORIES=100000 (or MODEL_DURATION=30m) MODEL_STREAM=random (make soak).
func TestModel(t *testing.T) {
	cfg := readConfig(t)
	s := &summary{failing: map[string]map[string]int{}, first: map[string]firstFailure{}, requests: map[string]int{}, converge: map[string][]time.Duration{},
		relists: map[string]int{}, relistDeletes: map[string]int{}}
	begin := time.Now()
	var next int
	var mu sync.Mutex
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if cfg.only >= 0 {
			if next > 0 {
				return 0, false
			}
			next++
			return cfg.only, true
		}
		if cfg.duration > 0 {
			if time.Since(begin) >= cfg.duration {
				return 0, false
			}
		} else if next >= cfg.histories {
			return 0, false
		}
		next++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for range cfg.parallel {
		wg.Go(func() {
			for {
				idx, ok := take()
				if !ok {
					return
				}
				h := generate(cfg.stream, idx)
				s.add(idx, h, play(h, allClients, nil))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	t.Logf("stream %d: %d histories in %v (%d at once)", cfg.stream, s.histories, elapsed.Round(time.Millisecond), cfg.parallel)
	t.Log(s.report())
	for _, c := range []string{clientReflector, clientWire} {
		t.Logf("%s: reflector.New relisted object by object %d times, deleting %d objects the new lists no longer held", c, s.relists[c], s.relistDeletes[c])
		if cfg.only < 0 && s.histories >= minHistoriesForRelists && (s.relists[c] == 0 || s.relistDeletes[c] == 0) {
			t.Errorf("%d histories made %s relist %d times and delete %d objects at a relist's end: the histories no longer exercise its relists", s.histories, c, s.relists[c], s.relistDeletes[c])
		}
	}
	t.Logf("%s: %v", clientWire, s.wire)
	if s.histories > 0 && s.wire.itemByItem == 0 {
		// Each history's wire client lists at least once, with items.
		t.Errorf("%s: no one-response list was applied item by item over %d histories (%v): lister.ItemByItem is not exercised", clientWire, s.histories, s.wire)
	}

	var keys []string
	for k := range s.first {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ours := 0
	for _, k := range keys {
		if c := s.first[k].v.client; c != clientStock && c != "model" {
			ours++
		}
	}
	for _, k := range keys {
		f := s.first[k]
		if f.v.client == clientStock {
			t.Logf("stock client-go, first %s: %s\n%s", f.v.kind, f.h.name, f.v)
			continue
		}
		if f.v.client == "model" {
			t.Errorf("model error in %s: %s", f.h.name, f.v)
			continue
		}
		small := shrink(f.h, f.v, cfg.shrink/time.Duration(ours))
		t.Errorf("%s: %s (%d of %d histories), first in %s: %s\nminimal history (for regression_test.go):\n%#v\nreplay: go test ./internal/modeltest -run TestModel -model.stream=%d -model.history=%d -v",
			f.v.client, f.v.kind, s.failing[f.v.client][f.v.kind], s.histories, f.h.name, f.v, small, cfg.stream, f.idx)
	}
}

// report renders the summary: per client, the histories violating each
// invariant, requests per minute and time to converge.
func (s *summary) report() string {
	var b strings.Builder
	took := slices.Clone(s.took)
	slices.Sort(took)
	if len(took) > 0 {
		fmt.Fprintf(&b, "history duration p50 %v, p99 %v, max %v\n", took[len(took)/2].Round(time.Millisecond),
			took[min(len(took)-1, len(took)*99/100)].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	kinds := []string{kindBackInTime, kindReappeared, kindOutside, kindNotConverged, kindRequests, kindHotLoop, kindWholeList}
	fmt.Fprintf(&b, "histories violating each invariant (of %d):\n%-10s", s.histories, "client")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %16s", k)
	}
	fmt.Fprintf(&b, " %12s %14s\n", "req/min", "converge p50/p99")
	for _, c := range allClients {
		fmt.Fprintf(&b, "%-10s", c)
		for _, k := range kinds {
			fmt.Fprintf(&b, " %16d", s.failing[c][k])
		}
		rate := 0.0
		if s.window > 0 {
			rate = float64(s.requests[c]) / s.window.Minutes()
		}
		d := slices.Clone(s.converge[c])
		slices.Sort(d)
		p := func(q float64) time.Duration {
			if len(d) == 0 {
				return 0
			}
			return d[min(len(d)-1, int(q*float64(len(d))))].Round(time.Millisecond)
		}
		fmt.Fprintf(&b, " %12.1f %7v/%v\n", rate, p(0.5), p(0.99))
	}
	return b.String()
}

// shrink removes steps from h while the violation v still shows (each
// candidate played up to twice, with only the clients it needs), for at
// most budget.
func shrink(h history, v violation, budget time.Duration) history {
	clients := []string{v.client}
	if v.kind == kindRequests {
		clients = []string{clientStock, v.client}
	}
	if v.client == clientStock {
		clients = []string{clientStock}
	}
	var stopAt *violation
	if v.kind != kindNotConverged && v.kind != kindRequests && v.kind != kindHotLoop {
		stopAt = &v
	}
	fails := func(c history) bool {
		for range 2 {
			for _, got := range play(c, clients, stopAt).violations {
				if got.client == v.client && got.kind == v.kind {
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(budget)
	steps := h.steps
	n := 2
	for len(steps) > 1 && time.Now().Before(deadline) {
		chunk := (len(steps) + n - 1) / n
		removed := false
		for i := 0; i < len(steps) && time.Now().Before(deadline); i += chunk {
			cand := append(slices.Clone(steps[:i]), steps[min(i+chunk, len(steps)):]...)
			if fails(h.with(cand)) {
				steps, removed = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !removed {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(steps))
		}
	}
	out := h.with(steps)
	out.name = fmt.Sprintf("%s, shrunk: %s %s", h.name, v.client, v.kind)
	return out
}
