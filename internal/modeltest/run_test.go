package modeltest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// The clients, in the order results are reported.
const (
	clientStock     = "stock"     // client-go's informer over a plain cache.ListWatch
	clientDropIn    = "dropin"    // client-go's informer over lister.NewListerWatcher
	clientReflector = "reflector" // reflector.New over a cache.Store, on a fake clock
	// clientInformer: steadywatch's informer (reflector.NewSharedIndexInformerWithOptions,
	// reflector.New under it) with the checker's handlers: every handler
	// call, per-object adds, updates and tombstoned deletes of its relists
	// included, is checked against the history.
	clientInformer = "informer"
	// clientWire (wire_test.go): reflector.New as clientReflector, over
	// lister.FromClientset through HTTP.
)

var allClients = []string{clientStock, clientDropIn, clientReflector, clientWire, clientInformer}

// Bounds the invariants are checked against.
const (
	// waitBudget is the longest a wait step waits for every client to hold
	// the server's state (under a fault they may not).
	waitBudget = 250 * time.Millisecond
	// convergeBound: after the last step the faults are healed, and
	// steadywatch's clients must hold the server's state within this. It
	// covers client-go's and reflector.New's backoff cap (30s) plus a list.
	convergeBound = 40 * time.Second
	// stockGrace: stock client-go is given this much longer than the
	// steadywatch clients took (a stock cache can hold a stale object until
	// its next relist, minutes later: reported, not waited for).
	stockGrace = 5 * time.Second
	// requestSlack: the drop-in informer may send this many more requests
	// in a history than stock client-go did in the same one (its limit=1
	// count beside its streaming list).
	requestSlack = 4
	// reflectorRequestSlack is requestSlack for reflector.New. Without
	// Options.Server it does not know that the server honours streaming
	// lists, so it lists and then watches where stock client-go sends one
	// streaming list: its start costs 3 requests (a limit=1 MostRecent read,
	// so that the list is served from the watch cache; the NotOlderThan
	// list; the watch) against stock's 1, and a relist at most 3 (the
	// NotOlderThan list; the MostRecent list if that one is answered 410;
	// the watch) against stock's 1. Relists are spaced by the growing
	// backoff (800ms doubling; only the first after a 410 on a watch is
	// immediate, as client-go's), so the few seconds a generated history
	// holds its faults (maxFaultWindows) fit at most 4: 2 + 4 x 2.
	reflectorRequestSlack = 10
	// faultedRequestCost: the slack grows by this much for every request of
	// a client that a fault spoiled (see spoiled), beyond the number of
	// stock's. Fault windows are steps of the history, not of a
	// client's requests, so which requests a window spoils depends on each
	// client's timing (under load a drop-in streaming list can meet
	// IgnoreSendInitialEvents where stock's met none, and its fallback list
	// GoneOnLists). A spoiled request costs at most two more: the read of
	// the current resourceVersion and the retried request. The hot-loop
	// bound below stays absolute.
	faultedRequestCost = 2
	// hotLoopBase and hotLoopPerSecond bound any client's requests in a
	// history absolutely, stock client-go's too: a client that backs off
	// (800ms doubling, client-go's and reflector.New's default) stays far
	// below; one that retries without a delay does not (a persistent fault
	// makes "no more than stock" meaningless when stock itself loops).
	hotLoopBase      = 10
	hotLoopPerSecond = 10
	// maxFaultWindows bounds the fault switches of a generated history, so
	// client-go's backoff (doubling from 800ms) stays short.
	maxFaultWindows = 2
	// shrinkConvergeBound replaces convergeBound while shrinking a
	// violation that is not about convergence.
	shrinkConvergeBound = 3 * time.Second
	// tick is the fake clock's resolution while a wait is in progress.
	tick = 5 * time.Millisecond
)

type cmServer = steadywatchtest.Server[*corev1.ConfigMap]

// result is what one play of a history found.
type result struct {
	violations []violation
	requests   map[string]int // per client, up to when steadywatch's clients converged
	window     time.Duration  // from the clients' start to then
	converge   map[string]time.Duration
	took       time.Duration // the whole play
	// relists and relistDeletes: reflector.New's relists, which fill its
	// store object by object, and the objects they deleted (per client:
	// clientReflector, clientWire).
	relists, relistDeletes map[string]int
	// wire: how the wire client's one-response lists were read.
	wire wireResult
}

type truthEntry struct {
	ns   string
	rv   uint64
	tier string
}

type run struct {
	h       history
	sc      scope
	clients []string
	servers map[string]*cmServer
	checks  map[string]*checker
	fronts  map[string]*front // the HTTP fronts of the clients that have one (clientWire)
	clk     *testingclock.FakeClock
	step    atomic.Int64
	wake    chan struct{}

	mu    sync.Mutex
	truth map[string]truthEntry // the server's state, in scope or not
	ends  map[string][]uint64   // key -> resourceVersions at which an in-scope version ended

	// written, when set, runs after each client's server applied a step
	// and before the next one does (a test's hook into that moment).
	written func(client string)

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started time.Time
	lastClk time.Time
}

// play runs h with the named clients and checks every invariant. With
// stopAt set, it ends as soon as a violation of that client and kind is
// seen (shrinking needs no more).
func play(h history, clients []string, stopAt *violation) (res result) {
	r := newRun(h, clients)
	defer r.stop()
	if !slices.ContainsFunc(h.steps, func(s step) bool { return s.op == opStart }) {
		r.start()
	}
	begin := time.Now()
	defer func() { res.took = time.Since(begin) }()
	seen := func() bool {
		if stopAt == nil || r.checks[stopAt.client] == nil {
			return false
		}
		for _, v := range r.checks[stopAt.client].found() {
			if v.kind == stopAt.kind {
				res.violations = append(res.violations, v)
				return true
			}
		}
		return false
	}
	for i, s := range h.steps {
		r.step.Store(int64(i))
		if err := r.apply(s); err != nil {
			res.violations = append(res.violations, violation{client: "model", kind: "error", detail: err.Error(), step: i})
			return res
		}
		if seen() {
			return res
		}
	}
	r.step.Store(int64(len(h.steps)))
	if r.started.IsZero() {
		r.start()
	}
	for _, srv := range r.servers {
		srv.SetFaults(steadywatchtest.Faults{})
	}
	healed := time.Now()
	// A last write in scope is the barrier: a client that holds it has
	// applied every event before it (watch events arrive in order), or a
	// list at least as new.
	ns := h.namespace
	if ns == "" {
		ns = "a"
	}
	if err := r.apply(set(ns, "marker", "blue")); err != nil {
		res.violations = append(res.violations, violation{client: "model", kind: "error", detail: err.Error(), step: -1})
		return res
	}
	ours := slices.DeleteFunc(slices.Clone(clients), func(c string) bool { return c == clientStock })
	res.converge = map[string]time.Duration{}
	bound := convergeBound
	if stopAt != nil {
		bound = shrinkConvergeBound
	}
	r.waitUntil(func() bool { return r.convergedAll(ours, healed, res.converge) }, bound)
	res.window = time.Since(r.started)
	res.requests = map[string]int{}
	faulted := map[string]int{}
	for _, c := range clients {
		reqs := r.servers[c].Requests()
		res.requests[c] = len(reqs)
		if f := r.fronts[c]; f != nil {
			// What the wire saw, including any request the server never read.
			res.requests[c] = max(res.requests[c], int(f.requests.Load()))
		}
		for _, q := range reqs {
			if spoiled(q) {
				faulted[c]++
			}
		}
	}
	if slices.Contains(clients, clientStock) {
		r.waitUntil(func() bool { return r.convergedAll([]string{clientStock}, healed, res.converge) }, time.Since(healed)+stockGrace)
	}
	if *flagTrace {
		for _, c := range clients {
			for _, q := range r.servers[c].Requests() {
				fmt.Printf("%s %s %s %d rv=%q match=%q limit=%d sie=%v -> %s items=%d\n", c, q.Verb, q.Served, q.Code, q.Options.ResourceVersion, q.Options.ResourceVersionMatch, q.Options.Limit, q.Options.SendInitialEvents != nil, q.ResourceVersion, q.Items)
			}
		}
	}
	for _, c := range clients {
		if _, ok := res.converge[c]; !ok {
			res.violations = append(res.violations, violation{client: c, kind: kindNotConverged, step: -1,
				detail: fmt.Sprintf("after %v: holds %s, the server %s", time.Since(healed).Round(time.Millisecond), render(r.checks[c].snapshot()), render(r.visible()))})
		}
		if limit := hotLoopBase + int(hotLoopPerSecond*res.window.Seconds()); res.requests[c] > limit {
			res.violations = append(res.violations, violation{client: c, kind: kindHotLoop, step: -1,
				detail: fmt.Sprintf("%d requests in %v (bound %d): %s", res.requests[c], res.window.Round(time.Millisecond), limit, head(trace(r.servers[c].Requests()), 400))})
		}
		slack := requestSlack
		if c == clientReflector || c == clientWire || c == clientInformer {
			slack = reflectorRequestSlack
		}
		if extra := faulted[c] - faulted[clientStock]; extra > 0 {
			slack += faultedRequestCost * extra
		}
		if c != clientStock && slices.Contains(clients, clientStock) && res.requests[c] > res.requests[clientStock]+slack {
			res.violations = append(res.violations, violation{client: c, kind: kindRequests, step: -1,
				detail: fmt.Sprintf("%d requests, stock %d (slack %d; faulted answers %d, stock %d) in %v: %s; stock: %s", res.requests[c], res.requests[clientStock], slack, faulted[c], faulted[clientStock],
					res.window.Round(time.Millisecond), head(trace(r.servers[c].Requests()), 600), head(trace(r.servers[clientStock].Requests()), 300))})
		}
		res.violations = append(res.violations, r.checks[c].found()...)
	}
	res.relists, res.relistDeletes = map[string]int{}, map[string]int{}
	for _, c := range []string{clientReflector, clientWire} {
		if chk, ok := r.checks[c]; ok {
			chk.mu.Lock()
			res.relists[c], res.relistDeletes[c] = chk.relisted.lists, chk.relisted.deleted
			chk.mu.Unlock()
		}
	}
	if f := r.fronts[clientWire]; f != nil {
		res.wire = f.result()
		if res.wire.whole > 0 {
			res.violations = append(res.violations, violation{client: clientWire, kind: kindWholeList, step: -1, detail: res.wire.String()})
		}
	}
	return res
}

// newRun prepares h's play with the named clients, each on a server of its
// own; the clients start with the history's start step, or r.start.
func newRun(h history, clients []string) *run {
	r := &run{
		h: h, sc: scope{namespace: h.namespace, selector: h.selector}, clients: clients,
		servers: map[string]*cmServer{}, checks: map[string]*checker{}, fronts: map[string]*front{},
		clk:   testingclock.NewFakeClock(time.Now()),
		wake:  make(chan struct{}, 1),
		truth: map[string]truthEntry{}, ends: map[string][]uint64{},
	}
	for _, c := range clients {
		r.servers[c] = steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
		if !h.fromZero {
			r.servers[c].Advance(1)
		}
		r.checks[c] = newChecker(c, r.sc, &r.step, r.notify, func(key string, rv uint64) (uint64, bool) { return r.ended(c, key, rv) })
	}
	return r
}

// spoiled reports whether a fault visibly changed a request's answer: an
// error, or a streaming list served as a plain watch. Requests a fault
// answered with 200 as asked (a watch closed early, a dropped bookmark) are
// not counted: a client that repeats them must stay within stock's count.
func spoiled(q steadywatchtest.Request) bool {
	if !q.Faulted {
		return false
	}
	return q.Code != http.StatusOK || (q.Options.SendInitialEvents != nil && *q.Options.SendInitialEvents && q.Served != "StreamingList")
}

func (r *run) notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// waitUntil waits until cond holds or d passes, re-checking whenever a
// client changed its cache and every tick; reflector.New's fake clock
// moves on by the real time that passed, so its backoffs run as client-go's do.
func (r *run) waitUntil(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		r.stepClock()
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-r.wake:
		case <-t.C:
		}
	}
}

func (r *run) stepClock() {
	now := time.Now()
	if !r.lastClk.IsZero() {
		r.clk.Step(now.Sub(r.lastClk))
	}
	r.lastClk = now
}

// convergedAll reports whether each client holds the server's state,
// recording when each first did.
func (r *run) convergedAll(clients []string, since time.Time, at map[string]time.Duration) bool {
	want := r.visible()
	all := true
	for _, c := range clients {
		if _, done := at[c]; done {
			continue
		}
		if got := r.checks[c].snapshot(); mapsEqual(got, want) {
			at[c] = time.Since(since)
		} else {
			all = false
		}
	}
	return all
}

// settled reports whether every client holds the server's state, has a
// watch open and has received every event sent to it.
func (r *run) settled() bool {
	for _, c := range r.clients {
		if r.servers[c].Watches() == 0 || r.servers[c].QueuedEvents() > 0 {
			return false
		}
	}
	return r.converged(r.clients)
}

func (r *run) converged(clients []string) bool {
	want := r.visible()
	for _, c := range clients {
		if !mapsEqual(r.checks[c].snapshot(), want) {
			return false
		}
	}
	return true
}

// trace renders a request log compactly: verb, how it was served, code.
func trace(reqs []steadywatchtest.Request) string {
	var out []string
	for _, q := range reqs {
		s := q.Verb + ":" + q.Served
		if q.Code != 200 {
			s += fmt.Sprintf(":%d", q.Code)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// head shortens s to about n bytes.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " ..."
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func render(m map[string]uint64) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s@%d", k, v))
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// visible is the server's state in the clients' scope.
func (r *run) visible() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]uint64{}
	for k, e := range r.truth {
		if r.sc.matches(e.ns, map[string]string{"tier": e.tier}) {
			out[k] = e.rv
		}
	}
	return out
}

// ended returns the first resourceVersion after rv at which the server
// ended key's version rv (deleted it or moved it out of scope). The run
// records an end once every client's server applied the step; until then
// client's own server says whether it applied it: a client can see the
// end (a relist served after it) as soon as its server did.
func (r *run) ended(client, key string, rv uint64) (uint64, bool) {
	r.mu.Lock()
	for _, e := range r.ends[key] {
		if e > rv {
			r.mu.Unlock()
			return e, true
		}
	}
	r.mu.Unlock()
	srv := r.servers[client]
	ns, name, _ := strings.Cut(key, "/")
	obj, ok := srv.Get(ns, name)
	if !ok {
		// Deleted by the step in flight (one write at a time): at the
		// server's resourceVersion.
		at, err := strconv.ParseUint(srv.ResourceVersion(), 10, 64)
		return at, err == nil && at > rv
	}
	at, err := strconv.ParseUint(obj.ResourceVersion, 10, 64)
	if err != nil || at <= rv || r.sc.matches(obj.Namespace, obj.Labels) {
		return 0, false
	}
	return at, true // moved out of scope by the step in flight
}

// apply plays one step on every client's server.
func (r *run) apply(s step) error {
	switch s.op {
	case opStart:
		if r.started.IsZero() {
			r.start()
		}
	case opSet:
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name, Labels: map[string]string{"tier": s.tier}},
			Data: map[string]string{"step": fmt.Sprint(r.step.Load())}}
		rv, err := r.each(func(srv *cmServer) (string, error) {
			o, err := srv.Apply(obj)
			if err != nil {
				return "", err
			}
			return o.ResourceVersion, nil
		})
		if err != nil {
			return err
		}
		r.record(s.ns+"/"+s.name, &truthEntry{ns: s.ns, rv: rv, tier: s.tier}, rv)
	case opDel:
		key := s.ns + "/" + s.name
		r.mu.Lock()
		_, exists := r.truth[key]
		r.mu.Unlock()
		if !exists {
			return nil
		}
		rv, err := r.each(func(srv *cmServer) (string, error) { return srv.ResourceVersion(), srv.Delete(s.ns, s.name) })
		if err != nil {
			return err
		}
		r.record(key, nil, rv+1)
	case opAdvance:
		_, err := r.each(func(srv *cmServer) (string, error) { return srv.Advance(uint64(s.n)), nil })
		return err
	case opCompact:
		_, err := r.each(func(srv *cmServer) (string, error) { return "", srv.Compact("") })
		return err
	case opBookmark:
		_, err := r.each(func(srv *cmServer) (string, error) { srv.Bookmark(); return "", nil })
		return err
	case opCut:
		_, err := r.each(func(srv *cmServer) (string, error) { srv.Close(); return "", nil })
		return err
	case opFaults:
		f, err := parseFaults(s.faultSpec)
		if err != nil {
			return err
		}
		_, err = r.each(func(srv *cmServer) (string, error) { srv.SetFaults(f); return "", nil })
		return err
	case opWait:
		if !r.started.IsZero() {
			r.waitUntil(r.settled, waitBudget)
		}
	default:
		return fmt.Errorf("unknown step %#v", s)
	}
	return nil
}

// each runs fn on every server; they must agree on the resourceVersion it returns.
func (r *run) each(fn func(*cmServer) (string, error)) (uint64, error) {
	var first string
	for i, c := range r.clients {
		rv, err := fn(r.servers[c])
		if err != nil {
			return 0, err
		}
		if r.written != nil {
			r.written(c)
		}
		if i == 0 {
			first = rv
		} else if rv != first {
			return 0, fmt.Errorf("servers disagree: %s at %q, %s at %q", r.clients[0], first, c, rv)
		}
	}
	var n uint64
	if first != "" {
		if _, err := fmt.Sscan(first, &n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// record sets key's state (nil: deleted) at resourceVersion rv and notes
// when an in-scope version ends.
func (r *run) record(key string, now *truthEntry, rv uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, had := r.truth[key]
	wasIn := had && r.sc.matches(prev.ns, map[string]string{"tier": prev.tier})
	isIn := now != nil && r.sc.matches(now.ns, map[string]string{"tier": now.tier})
	if wasIn && !isIn {
		r.ends[key] = append(r.ends[key], rv)
	}
	if now == nil {
		delete(r.truth, key)
	} else {
		r.truth[key] = *now
	}
}

// start starts every client on its own server.
func (r *run) start() {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	r.cancel = cancel
	r.started = time.Now()
	// Every client has synced (and opened its watch) before the history
	// goes on, so the faults that follow reach each client's watch alike.
	defer r.waitUntil(r.settled, convergeBound)
	for _, c := range r.clients {
		view := r.servers[c].InNamespace(r.h.namespace)
		chk := r.checks[c]
		var runFn func(context.Context)
		switch c {
		case clientStock:
			sel := r.h.selector
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					o.LabelSelector = sel
					return view.List(ctx, o)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					o.LabelSelector = sel
					return view.Watch(ctx, o)
				},
			}
			inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
			if _, err := inf.AddEventHandler(chk.handlers()); err != nil {
				panic(err)
			}
			runFn = inf.RunWithContext
		case clientDropIn:
			lw := lister.NewListerWatcher(view, lister.Options{LabelSelector: r.h.selector})
			inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
			if _, err := inf.AddEventHandler(chk.handlers()); err != nil {
				panic(err)
			}
			runFn = inf.RunWithContext
		case clientInformer:
			inf := reflector.NewSharedIndexInformerWithOptions(view.ListerWatcher(), &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{},
				lister.Options{LabelSelector: r.h.selector})
			if _, err := inf.AddEventHandler(chk.handlers()); err != nil {
				panic(err)
			}
			runFn = inf.RunWithContext
		case clientReflector:
			st := newStore(chk)
			refl := reflector.New(view, &corev1.ConfigMap{}, st, knobs.WithReflector(reflector.Options{Lister: lister.Options{LabelSelector: r.h.selector}}, knobs.Reflector{Clock: r.clk}))
			runFn = refl.Run
		case clientWire:
			var err error
			if runFn, err = r.startWire(c, chk); err != nil {
				panic(err)
			}
		}
		r.wg.Add(1)
		go func() { defer r.wg.Done(); runFn(ctx) }()
	}
}

func (r *run) stop() {
	if r.cancel != nil {
		r.cancel()
	}
	for _, srv := range r.servers {
		srv.Close()
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	// The clients end with their context; one blocked on reflector.New's
	// fake clock needs it to move.
	for {
		select {
		case <-done:
			for _, f := range r.fronts {
				f.close()
			}
			return
		case <-time.After(tick):
			r.stepClock()
		}
	}
}
