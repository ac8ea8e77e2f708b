package soak

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/poll"
	"github.com/steadywatch/steadywatch/e2e/internal/storecheck"
)

// Options configure Run. Zero fields take the defaults.
type Options struct {
	// Duration is how long each fault holds. 0 = 60s.
	Duration time.Duration
	// Recovery bounds how long after the lift each path may take to hold
	// what the server holds. 0 = 60s.
	Recovery time.Duration
	// Faults are the faults to hold, in order. nil = Catalogue.
	Faults []Fault
	// Paths are the paths to run side by side (of Paths, in its order).
	// nil = Paths. Without stock, the request bound is not checked.
	Paths []string
	// Objects is how many ConfigMaps each path's namespace holds. 0 = 5.
	Objects int
	// WriteEvery is how often the writer changes each namespace while the
	// fault holds (an update; every tenth change a delete and re-create).
	// 0 = 1s.
	WriteEvery time.Duration
	// Progress receives a line per phase and per result. nil = discard.
	Progress io.Writer
}

func (o Options) withDefaults() Options {
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.Recovery <= 0 {
		o.Recovery = 60 * time.Second
	}
	if o.Faults == nil {
		o.Faults = Catalogue
	}
	if o.Paths == nil {
		o.Paths = Paths
	}
	if o.Objects <= 0 {
		o.Objects = 5
	}
	if o.WriteEvery <= 0 {
		o.WriteEvery = time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// FaultReport is every path's measurement under one fault.
type FaultReport struct {
	Fault      Fault    `json:"fault"`
	Results    []Result `json:"results"`
	Violations []string `json:"violations,omitempty"`
}

// Report is one run.
type Report struct {
	Server   string        `json:"server"`
	Duration time.Duration `json:"durationNs"`
	Recovery time.Duration `json:"recoveryNs"`
	Objects  int           `json:"objects"`
	// Paths are the paths that ran, when not every one of Paths did.
	Paths  []string      `json:"paths,omitempty"`
	Faults []FaultReport `json:"faults"`
	Wall   time.Duration `json:"wallNs"`
}

// Violations returns every fault's violations.
func (r *Report) Violations() []string {
	var v []string
	for _, f := range r.Faults {
		v = append(v, f.Violations...)
	}
	return v
}

// Run starts a real kube-apiserver (build.Current, watch cache on) behind
// a fault proxy and holds each of o.Faults in turn. It returns the report
// also when guarantees were violated (Report.Violations); an error means the
// soak itself could not run.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	begin := time.Now()
	c, err := harness.Start(ctx, harness.Options{Version: build.Current, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	if err != nil {
		return nil, err
	}
	direct, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	// /readyz can pass before the bootstrap controller created "default".
	if err := poll.Within(ctx, 60*time.Second, 100*time.Millisecond, func() bool {
		_, err := direct.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return nil, fmt.Errorf("soak: the apiserver did not create namespace default: %w", err)
	}

	log := NewRequestLog(p)
	lctx, stopLog := context.WithCancel(ctx)
	go log.Run(lctx, 250*time.Millisecond)
	defer stopLog()

	rep := &Report{Server: c.Version(), Duration: o.Duration, Recovery: o.Recovery, Objects: o.Objects}
	if !slices.Equal(o.Paths, Paths) {
		rep.Paths = o.Paths
	}
	for i, f := range o.Faults {
		fmt.Fprintf(o.Progress, "soak: [%d/%d] %s: holding for %s\n", i+1, len(o.Faults), f.ID, o.Duration)
		fr, err := runFault(ctx, o, f, p, pcfg, direct, log)
		if err != nil {
			return rep, fmt.Errorf("soak: fault %s: %w", f.ID, err)
		}
		for _, r := range fr.Results {
			fmt.Fprintf(o.Progress, "soak: %s | %s\n", f.ID, resultLine(r))
		}
		for _, v := range fr.Violations {
			fmt.Fprintf(o.Progress, "soak: VIOLATION %s\n", v)
		}
		rep.Faults = append(rep.Faults, fr)
	}
	rep.Wall = time.Since(begin)
	return rep, nil
}

func resultLine(r Result) string {
	rec := "not recovered"
	if r.Recovered {
		rec = fmt.Sprintf("recovered after %.1f s", r.RecoveredAfter.Seconds())
	}
	return fmt.Sprintf("%s: during %d req (%d lists, %d streaming, %d watches; %.1f/min, busiest 10 s %d, longest gap %.1f s), synced=%v, %s, %d after, back in time %d, stopped=%v, held at lift %d, %s",
		r.Path, r.During.Requests, r.During.Lists, r.During.StreamingLists, r.During.Watches, r.During.PerMinute, r.During.Busiest10s,
		r.During.LongestGap.Seconds(), r.Synced, rec, r.After.Requests, len(r.Backward), r.Stopped, r.HeldAtLift, r.Counters)
}

// writer changes one namespace's ConfigMaps directly (not through the
// proxy).
type writer struct {
	cs   kubernetes.Interface
	ns   string
	objs []*corev1.ConfigMap
	n    int
}

func newWriter(ctx context.Context, cs kubernetes.Interface, ns string, objects int) (*writer, error) {
	w := &writer{cs: cs, ns: ns}
	for i := range objects {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)},
			Data:       map[string]string{"v": "0"},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		w.objs = append(w.objs, cm)
	}
	return w, nil
}

// step updates the next object, or every tenth step deletes and re-creates
// it under the same name.
func (w *writer) step(ctx context.Context) error {
	w.n++
	i := w.n % len(w.objs)
	cms := w.cs.CoreV1().ConfigMaps(w.ns)
	if w.n%10 == 0 {
		if err := cms.Delete(ctx, w.objs[i].Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.objs[i].Name},
			Data: map[string]string{"v": strconv.Itoa(w.n)}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		w.objs[i] = cm
		return nil
	}
	cm := w.objs[i].DeepCopy()
	cm.Data = map[string]string{"v": strconv.Itoa(w.n)}
	cm, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	w.objs[i] = cm
	return nil
}

// runFault holds f for o.Duration with every path started under it, lifts
// it, and waits up to o.Recovery for every path to hold what the server
// holds.
func runFault(ctx context.Context, o Options, f Fault, p *faults.Proxy, pcfg *rest.Config, direct kubernetes.Interface, log *RequestLog) (FaultReport, error) {
	fr := FaultReport{Fault: f}
	suffix := rand.String(5)
	writers := make([]*writer, len(o.Paths))
	for i, path := range o.Paths {
		ns := fmt.Sprintf("soak-%d-%s", i, suffix)
		if _, err := direct.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return fr, err
		}
		defer func() {
			_ = direct.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
		}()
		w, err := newWriter(ctx, direct, ns, o.Objects)
		if err != nil {
			return fr, fmt.Errorf("%s: %w", path, err)
		}
		writers[i] = w
	}

	f.Arm(p)
	armed := time.Now()
	lifted := false
	defer func() {
		if !lifted {
			Lift(p)
		}
	}()
	clients := make([]*client, len(o.Paths))
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.cancel()
			}
		}
	}()
	for i, path := range o.Paths {
		c, err := start(path, writers[i].ns, pcfg)
		if err != nil {
			return fr, fmt.Errorf("%s: %w", path, err)
		}
		clients[i] = c
	}

	// Hold the fault, writing to every namespace.
	nextWrite, nextTick := armed, armed.Add(f.Every)
	for until := armed.Add(o.Duration); time.Now().Before(until); {
		now := time.Now()
		if !now.Before(nextWrite) {
			for _, w := range writers {
				if err := w.step(ctx); err != nil {
					return fr, fmt.Errorf("writing to %s: %w", w.ns, err)
				}
			}
			nextWrite = nextWrite.Add(o.WriteEvery)
		}
		if f.Tick != nil && f.Every > 0 && !now.Before(nextTick) {
			f.Tick(p)
			nextTick = nextTick.Add(f.Every)
		}
		wake := nextWrite
		if until.Before(wake) {
			wake = until
		}
		if f.Tick != nil && f.Every > 0 && nextTick.Before(wake) {
			wake = nextTick
		}
		if err := poll.Sleep(ctx, time.Until(wake)); err != nil {
			return fr, err
		}
	}
	synced := make([]bool, len(clients))
	for i, c := range clients {
		synced[i] = c.synced()
	}

	// Lift it; one more write each, which every path must then hold.
	atLift := log.Snapshot(armed)
	Lift(p)
	lifted = true
	liftAt := time.Now()
	for _, w := range writers {
		if err := w.step(ctx); err != nil {
			return fr, fmt.Errorf("writing to %s: %w", w.ns, err)
		}
	}
	recoveredAt := make([]time.Time, len(clients))
	_ = poll.Within(ctx, o.Recovery, 100*time.Millisecond, func() bool {
		all := true
		for i, c := range clients {
			if !recoveredAt[i].IsZero() {
				continue
			}
			want, _, err := storecheck.Truth(ctx, direct, c.ns)
			if err == nil && maps.Equal(want, c.holds()) {
				recoveredAt[i] = time.Now()
				continue
			}
			all = false
		}
		return all
	})
	if err := ctx.Err(); err != nil {
		return fr, err
	}
	end := liftAt.Add(o.Recovery)

	stopped := make([]bool, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); stopped[i] = c.stop(10 * time.Second) }()
	}
	wg.Wait()

	reqs := log.Snapshot(armed)
	for i, c := range clients {
		r := Result{Fault: f.ID, Path: c.path, Synced: synced[i], Backward: c.t.WentBack(), Stopped: stopped[i], HeldAtLift: Held(atLift, c.ns),
			During: Count(reqs, c.ns, armed, liftAt)}
		afterEnd := end
		if !recoveredAt[i].IsZero() {
			r.Recovered, r.RecoveredAfter = true, recoveredAt[i].Sub(liftAt)
			afterEnd = recoveredAt[i]
		}
		r.After = Count(reqs, c.ns, liftAt, afterEnd)
		if c.path != PathStock {
			r.Counters = c.rec.String()
		}
		fr.Results = append(fr.Results, r)
	}
	fr.Violations = Check(fr.Results, o.Duration)
	return fr, nil
}

// RequestLog keeps every request a proxy logged, polled (Run) often enough
// that the proxy's bounded log never drops one unseen.
type RequestLog struct {
	p    *faults.Proxy
	mu   sync.Mutex
	reqs map[int]faults.Request
}

// NewRequestLog returns a RequestLog of p.
func NewRequestLog(p *faults.Proxy) *RequestLog {
	return &RequestLog{p: p, reqs: map[int]faults.Request{}}
}

// Run polls the proxy every interval until ctx ends.
func (l *RequestLog) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		l.poll()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *RequestLog) poll() {
	reqs := l.p.Requests()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range reqs {
		l.reqs[r.Seq] = r
	}
}

// Snapshot returns every request seen so far, oldest first, and forgets
// those that arrived before drop.
func (l *RequestLog) Snapshot(drop time.Time) []faults.Request {
	l.poll()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]faults.Request, 0, len(l.reqs))
	for _, seq := range slices.Sorted(maps.Keys(l.reqs)) {
		r := l.reqs[seq]
		if r.Time.Before(drop) {
			delete(l.reqs, seq)
			continue
		}
		out = append(out, r)
	}
	return out
}
