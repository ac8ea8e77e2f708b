package reflector

// The environment the options walk (options_test.go) runs each scenario in:
// an in-memory apiserver, a client that injects faults, and the trace of
// requests, metrics and store calls a scenario compares.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/clients"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/wirewait"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/listgate"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// ---- the scenario's environment ----

type env struct {
	t      *testing.T
	srv    *cmServer
	client *faultClient
	rec    *traceRecorder
	gate   *listgate.Gate
	// rv0 is the resourceVersion after the first objects, rv the current one.
	rv0, rv string

	mu       sync.Mutex
	outcomes []string
	bounds   map[string]bool           // the bounds requests were sent with (sawBound)
	frozen   []steadywatchtest.Request // the requests at the first store.Replace (a reflector's first sync)
	replaces atomic.Int32
	resyncs  atomic.Int32
	// scopeChecked: the path lists through lister.WrapDecoding, which
	// checks its first list's scope with one more request (a limit=1 Exact
	// list through the caller's ListerWatcher) before it returns it.
	scopeChecked bool
	// set: this run has the field under test set (within).
	set bool
}

func newEnv(t *testing.T, pr *probe) *env {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	t.Cleanup(srv.Close)
	for i := range 10 {
		half := map[bool]string{true: "yes", false: "no"}[i%2 == 0]
		srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{"half": half}}})
	}
	e := &env{t: t, srv: srv, rec: &traceRecorder{}, gate: listgate.New(1), rv0: srv.ResourceVersion()}
	srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}})
	e.rv = srv.ResourceVersion()
	e.client = &faultClient{Client: srv.InNamespace("ns"), e: e}
	if pr.setup != nil {
		pr.setup(e)
	}
	srv.SetFaults(pr.faults)
	return e
}

func (e *env) compact() {
	if err := e.srv.Compact(e.rv); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) listerOptions(pr *probe, set bool) lister.Options {
	var o lister.Options
	if !pr.noMetrics {
		o.Metrics = e.rec
	}
	if pr.base != nil {
		pr.base(e, &o)
	}
	if set && pr.set != nil {
		pr.set(e, &o)
	}
	return o
}

func (e *env) reflectorOptions(path adoptionPath, pr *probe, set bool) Options {
	o := knobs.WithReflector(Options{Lister: e.listerOptions(pr, set)}, knobs.Reflector{Backoff: policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if path == pathReflectorList {
		o.List = e.customList("base")
	}
	if pr.rbase != nil {
		pr.rbase(e, &o)
	}
	if set && pr.rset != nil {
		pr.rset(e, &o)
	}
	return o
}

// customList is a caller's own List: a plain lister, each call recorded.
func (e *env) customList(tag string) ListFunc {
	l := lister.New(e.client, lister.Options{})
	return func(ctx context.Context, q fallback.Query) (runtime.Object, error) {
		if e.replaces.Load() == 0 { // later calls depend on timing
			e.outcome("List(%s) %s", tag, q)
		}
		obj, _, err := l.List(ctx, q)
		return obj, err
	}
}

// listerWatcher builds a drop-in path's ListerWatcher (dropInPaths) with
// lo, as client-go's reflector gets it.
func (e *env) listerWatcher(path adoptionPath, lo lister.Options) cache.ListerWatcherWithContext {
	switch path {
	case pathListerNew:
		return lister.New(e.client, lo).ListerWatcher()
	case pathListerWatcher:
		return lister.NewListerWatcher(e.client, lo)
	case pathWrap:
		return lister.Wrap(e.srv.InNamespace("ns").ListerWatcher(), lo)
	case pathWrapDecoding:
		e.scopeChecked = true
		return lister.WrapDecoding(e.srv.InNamespace("ns").ListerWatcher(), e.client, lo)
	}
	e.t.Fatalf("%s is not a drop-in path", path)
	return nil
}

// informerReflector builds path's informer with lo and returns the
// reflector that fills its store, traced as e.store() is and with the
// scenarios' short backoff (the informer paths take no reflector.Options;
// the default backoff only makes the scenarios slower).
func (e *env) informerReflector(path adoptionPath, lo lister.Options, pr *probe, set bool) *Reflector {
	example := &corev1.ConfigMap{}
	var inf cache.SharedIndexInformer
	switch path {
	case pathFactory:
		cs := fake.NewClientset()
		e.srv.Install(&cs.Fake, "configmaps")
		f := NewSharedInformerFactoryWithOptions(cs, 0, lo, informers.WithNamespace("ns")).(*sharedInformerFactory)
		inf = f.newInformerFunc(example)(cs, 0)
	case pathSharedInformer:
		inf = NewSharedIndexInformerWithOptions(e.srv.InNamespace("ns").ListerWatcher(), example, cache.SharedIndexInformerOptions{}, lo)
	case pathMetadata:
		// The scenario's objects are ConfigMaps: served as metadata-only
		// objects, as the metadata client would.
		inf = NewMetadataInformer(metadataOf{e.client}, corev1.SchemeGroupVersion.WithResource("configmaps"), 0, cache.Indexers{}, lo)
	case pathNewInformerFor:
		e.scopeChecked = true
		// An object in another namespace, which neither the hook's
		// ListerWatcher nor the informer lists: NewInformerFor tells the
		// namespace's client from the every-namespace one by it.
		e.srv.MustCreate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}})
		e.rv = e.srv.ResourceVersion()
		inf = informerFor(e.srv.InNamespace("ns").ListerWatcher(), example, cache.SharedIndexInformerOptions{}, lo, e.decodingClient)
	}
	a, ok := inf.(*adoptedInformer)
	if !ok || a.reflector == nil {
		e.t.Fatalf("%s built %T, not steadywatch's informer", path, inf)
	}
	r := a.reflector
	ts := traceStore{Store: r.objects, e: e}
	r.store, r.objects = ts, ts
	r.o.Reflector.Backoff = policy.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}.WithDefaults(policy.DefaultReflectorBackoff())
	r.backoff, r.regressBackoff = r.o.Backoff.New(), r.o.Backoff.New()
	r.backoff.Reset()
	r.regressBackoff.Reset()
	return r
}

// decodingClient is NewInformerFor's client for namespace: the scenario's
// client in "ns", the server's own for every namespace.
func (e *env) decodingClient(namespace string) (clients.Lister, error) {
	switch namespace {
	case "ns":
		return e.client, nil
	case "":
		return &faultClient{Client: e.srv.InNamespace(""), e: e}, nil
	}
	return nil, fmt.Errorf("no client for namespace %q in this test", namespace)
}

// metadataOf serves a client's objects as metadata-only objects.
type metadataOf struct{ Client }

func (m metadataOf) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := m.Client.List(ctx, o)
	if err != nil {
		return obj, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	lm, _ := meta.ListAccessor(obj)
	out := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue(), RemainingItemCount: lm.GetRemainingItemCount()}}
	for _, it := range items {
		out.Items = append(out.Items, *partial(it))
	}
	return out, nil
}

func (m metadataOf) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := m.Client.Watch(ctx, o)
	if err != nil {
		return w, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type != watch.Error {
			ev.Object = partial(ev.Object)
		}
		return ev, true
	}), nil
}

func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	m, err := meta.Accessor(obj)
	if err != nil {
		return &metav1.PartialObjectMetadata{}
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: m.GetNamespace(), Name: m.GetName(), ResourceVersion: m.GetResourceVersion(), Labels: m.GetLabels(), Annotations: m.GetAnnotations()}}
}

func (e *env) store() cache.ReflectorStore {
	return traceStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), e: e}
}

func (e *env) outcome(format string, args ...any) {
	e.mu.Lock()
	e.outcomes = append(e.outcomes, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// list calls lw.List as client-go does and records the outcome.
func (e *env) list(lw cache.ListerWatcherWithContext, o metav1.ListOptions) {
	e.listWithin(lw, o, 10*time.Second)
}

func (e *env) listWithin(lw cache.ListerWatcherWithContext, o metav1.ListOptions, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	obj, err := lw.ListWithContext(ctx, o)
	if err != nil {
		e.outcome("list failed: %s", errClass(err))
		return
	}
	m, _ := meta.ListAccessor(obj)
	e.outcome("list: %d items at %s", meta.LenList(obj), m.GetResourceVersion())
}

// watch opens a watch as client-go does and reads it until it closes,
// until stop says so, or for d; it records what it saw.
func (e *env) watch(lw cache.ListerWatcherWithContext, o metav1.ListOptions, d time.Duration, stop func(watch.Event) bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := lw.WatchWithContext(ctx, o)
	if err != nil {
		e.outcome("watch refused: %s", errClass(err))
		return
	}
	defer w.Stop()
	seen := map[watch.EventType]int{}
	t := time.NewTimer(d)
	defer t.Stop()
	end := "open when the test stopped reading"
read:
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				end = "closed"
				break read
			}
			seen[ev.Type]++
			if ev.Type == watch.Error {
				end = "error " + string(apierrors.ReasonForError(apierrors.FromObject(ev.Object)))
				break read
			}
			if stop != nil && stop(ev) {
				end = "stopped by the test"
				break read
			}
		case <-t.C:
			break read
		}
	}
	e.outcome("watch: %v, %s", seen, end)
}

func errClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context deadline"
	case errors.Is(err, lister.ErrStreamingListUnsupported):
		return "streaming list unsupported"
	}
	return engine.Classify(err).String()
}

// holdGate takes the gate's only slot until the returned function is called.
func (e *env) holdGate() (release func()) {
	release, err := e.gate.Acquire(context.Background(), "holder", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return release
}

// run runs r until cond or for d, then stops it and waits for Run to
// return. Every transition it makes is checked against the decision table
// (watchRows).
func (e *env) run(r *Reflector, cond func() bool, d time.Duration) {
	watchRows(e.t, r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	e.waitFor(cond, d)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		e.t.Fatal("Run did not return within 5s of cancel")
	}
}

// within is how long this run waits for the effect its scenario looks for:
// effectBound in the run expected to show it (the one with the field set
// when whenSet, the base runs otherwise), quiet in the other, where only
// the effect's absence can be seen.
func (e *env) within(whenSet bool) time.Duration {
	if e.set == whenSet {
		return effectBound
	}
	return quiet
}

// waitFor polls cond (a deadline-bounded poll) and returns its last value.
func (e *env) waitFor(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// countListSent: the streaming-list count read was sent (a MostRecent
// limit=1 list; the other limit=1 lists, such as lister.WrapDecoding's
// Exact scope check, are not it).
func (e *env) countListSent() bool {
	for _, q := range afterStream(e.srv.Requests()) {
		if isCountList(q) {
			return true
		}
	}
	return false
}

// scopeCheckSent: lister.WrapDecoding's scope check was sent (a limit=1
// list at a resourceVersion, without resourceVersionMatch).
func (e *env) scopeCheckSent() bool {
	for _, q := range e.srv.Requests() {
		if q.Verb == "list" && q.Options.Limit == 1 && q.Options.ResourceVersion != "" && q.Options.ResourceVersionMatch == "" {
			return true
		}
	}
	return false
}

func (e *env) exactListSent() bool {
	for _, q := range e.srv.Requests() {
		if q.Verb == "list" && q.Served == "Exact" {
			return true
		}
	}
	return false
}

// relistSemantics: how the lists after the first sync were served.
func (e *env) relistSemantics() []string {
	e.mu.Lock()
	n := len(e.frozen)
	e.mu.Unlock()
	set := map[string]bool{}
	for _, q := range e.srv.Requests()[n:] {
		if q.Verb == "list" {
			set[q.Served] = true
		}
	}
	return sortedKeys(set)
}

func (e *env) onReplace() {
	if e.replaces.Add(1) == 1 {
		e.mu.Lock()
		e.frozen = e.srv.Requests()
		e.mu.Unlock()
		e.rec.freeze()
	}
}

// withCountList adds to the requests of a first sync made by a streaming
// list the count list (limit=1) sent beside that stream, when it answered
// after the sync: it belongs to the sync, only its timing varies.
func withCountList(frozen, all []steadywatchtest.Request) []steadywatchtest.Request {
	after := afterStream(frozen)
	if after == nil {
		return frozen // no streaming list
	}
	for _, q := range after {
		if isCountList(q) {
			return frozen // already in
		}
	}
	for _, q := range all[len(frozen):] {
		if isCountList(q) {
			return append(slices.Clone(frozen), q)
		}
	}
	return frozen
}

// afterStream returns the requests of qs sent after the first streaming
// list (an empty, non-nil slice when it is the last), nil without one.
// The count read is sent beside a streaming list, once it is open;
// NewInformerFor's scope check sends lists of the same shape before it (as
// the first request's check).
func afterStream(qs []steadywatchtest.Request) []steadywatchtest.Request {
	for i, q := range qs {
		if q.Options.SendInitialEvents != nil && *q.Options.SendInitialEvents {
			return qs[i+1:]
		}
	}
	return nil
}

// isCountList: q has the shape of the streaming-list count read (a
// MostRecent limit=1 list in the informer's namespace); WrapDecoding's
// scope check is a limit=1 list at a resourceVersion.
func isCountList(q steadywatchtest.Request) bool {
	return q.Verb == "list" && q.Namespace == "ns" && q.Options.Limit == 1 && q.Options.ResourceVersion == "" && q.Options.Continue == ""
}

// trace is what a run observed: the requests and metrics (a reflector's up
// to its first sync, later ones depend on timing), then the outcomes.
func (e *env) trace() string {
	e.mu.Lock()
	reqs := e.frozen
	e.mu.Unlock()
	if e.replaces.Load() == 0 {
		reqs = e.srv.Requests()
	} else {
		reqs = withCountList(reqs, e.srv.Requests())
	}
	var lines []string
	for _, q := range reqs {
		o := q.Options
		sie := o.SendInitialEvents != nil && *o.SendInitialEvents
		lines = append(lines, fmt.Sprintf("%s %s ns=%s rv=%q match=%q limit=%d continue=%v label=%q field=%q sendInitialEvents=%v code=%d",
			q.Verb, q.Served, q.Namespace, o.ResourceVersion, o.ResourceVersionMatch, o.Limit, o.Continue != "", o.LabelSelector, o.FieldSelector, sie, q.Code))
	}
	sort.Strings(lines)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("request " + l + "\n")
	}
	for _, l := range e.rec.lines() {
		b.WriteString("metric " + l + "\n")
	}
	e.mu.Lock()
	for _, l := range e.outcomes {
		b.WriteString("outcome " + l + "\n")
	}
	e.mu.Unlock()
	return b.String()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// traceStore counts Replace and Resync calls.
type traceStore struct {
	cache.Store
	e *env
}

func (s traceStore) Replace(items []any, rv string) error {
	err := s.Store.Replace(items, rv)
	s.e.onReplace()
	return err
}

func (s traceStore) Resync() error { s.e.resyncs.Add(1); return s.Store.Resync() }

// Bookmark ends a list that filled the store object by object (a sync, as
// a Replace is for a queue).
func (s traceStore) Bookmark(rv string) { s.Store.Bookmark(rv); s.e.onReplace() }

// faultClient is the server's client with faults the in-memory server does
// not have: every plain watch failing with watchErr, and MostRecent lists
// served older than the store once it synced (staleAfterSync).
type faultClient struct {
	Client
	e              *env
	watchErr       error
	staleAfterSync bool
}

func (c *faultClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.e.sawBound(ctx)
	obj, err := c.Client.List(ctx, o)
	if err == nil && c.staleAfterSync && c.e.replaces.Load() > 0 && o.ResourceVersion == "" && o.Continue == "" {
		if m, merr := meta.ListAccessor(obj); merr == nil {
			m.SetResourceVersion("1")
		}
	}
	return obj, err
}

func (c *faultClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	c.e.sawBound(ctx)
	if c.watchErr != nil && (o.SendInitialEvents == nil || !*o.SendInitialEvents) {
		return nil, c.watchErr
	}
	return c.Client.Watch(ctx, o)
}

// sawBound records the bound a request is sent with
// (policy.Policy.ResponseTimeout, on its context).
func (e *env) sawBound(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bounds == nil {
		e.bounds = map[string]bool{}
	}
	e.bounds[wirewait.BoundFrom(ctx, 0).String()] = true
}

func (e *env) requestBounds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.bounds)
}

// boundRecorder is a compat.Server that records the bound of the context
// the executor asks it with: the context its requests are sent under.
type boundRecorder struct {
	compat.Server
	e *env
}

func (b boundRecorder) Capabilities(ctx context.Context) capability.Capabilities {
	b.e.sawBound(ctx)
	return b.Server.Capabilities(ctx)
}

var (
	recordBounds = func(e *env, o *lister.Options) {
		o.Server = boundRecorder{Server: capability.Static(capability.Capabilities{}), e: e}
	}
	shortResponseTimeout = func(_ *env, o *lister.Options) { o.ResponseTimeout = 5 * time.Second }
)

// traceRecorder keeps every distinct metric call (with its labels) except
// the timestamps of ResourceVersionAdvanced; after freeze, later calls are
// kept apart.
type traceRecorder struct {
	metricsnop.Nop // the methods not recorded here
	mu             sync.Mutex
	set            map[string]bool
	frozen         bool
	restarts       map[string]bool
}

func (r *traceRecorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		return
	}
	if r.set == nil {
		r.set = map[string]bool{}
	}
	r.set[fmt.Sprintf(format, args...)] = true
}

func (r *traceRecorder) freeze() { r.mu.Lock(); r.frozen = true; r.mu.Unlock() }

func (r *traceRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.set)
}

func (r *traceRecorder) restartReasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.restarts)
}

func (r *traceRecorder) List(name, sem, out string) { r.add("List %s %s %s", name, sem, out) }
func (r *traceRecorder) Fallback(name, reason string) {
	r.add("Fallback %s %s", name, reason)
}
func (r *traceRecorder) Relist(name, cause string) { r.add("Relist %s %s", name, cause) }
func (r *traceRecorder) WatchRestart(name, reason string) {
	r.mu.Lock()
	if r.restarts == nil {
		r.restarts = map[string]bool{}
	}
	r.restarts[reason] = true
	r.mu.Unlock()
	r.add("WatchRestart %s %s", name, reason)
}
func (r *traceRecorder) Bookmark(name string)                      { r.add("Bookmark %s", name) }
func (r *traceRecorder) Items(name string, _ int)                  { r.add("Items %s", name) }
func (r *traceRecorder) ResourceVersionAdvanced(string, time.Time) {}
func (r *traceRecorder) ConsistencyCheck(name, result string) {
	r.add("ConsistencyCheck %s %s", name, result)
}
func (r *traceRecorder) Transition(name, from, to, reason string) {
	r.add("Transition %s %s>%s %s", name, from, to, reason)
}
func (r *traceRecorder) ListGateWait(name string, _ time.Duration) { r.add("ListGateWait %s", name) }
func (r *traceRecorder) ListGateShared(name string)                { r.add("ListGateShared %s", name) }
func (r *traceRecorder) ListGateOverdue(name string)               { r.add("ListGateOverdue %s", name) }

func withRV(o metav1.ListOptions, rv string) metav1.ListOptions { o.ResourceVersion = rv; return o }
