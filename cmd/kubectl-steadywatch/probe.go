package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// ErrMissingRight is matched (errors.Is) by every *MissingRightError.
var ErrMissingRight = errors.New("missing right")

// MissingRightError names the right the probe lacks.
type MissingRightError struct {
	Verb, Resource, Namespace string
	// Err is the server's answer, if the right was found missing by a request.
	Err error
}

func (e *MissingRightError) Error() string {
	s := fmt.Sprintf("missing right: %s %s", e.Verb, e.Resource)
	if e.Namespace != "" {
		s += " in namespace " + e.Namespace
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *MissingRightError) Is(target error) bool { return target == ErrMissingRight }
func (e *MissingRightError) Unwrap() error        { return e.Err }

// probeLimit is the limit of the paginated cells: the probe creates 4
// ConfigMaps, so a first page of 2 has a continue token.
const probeLimit = 2

// probeLabel marks every ConfigMap the probe creates; its value is the run id.
const probeLabel = "steadywatch.io/probe-run"

type probeOptions struct {
	output          string
	bookmarkTimeout time.Duration
	streamQuiet     time.Duration
	cleanupTimeout  time.Duration
}

func newProbeCommand(a *app) *command {
	o := &probeOptions{}
	cmd := &command{
		Use:   "probe",
		Short: "Run every cell of the KEP-2523 resourceVersion tables and report what the server did",
		Long: `probe creates a scratch namespace (or, with -n, uses that namespace) and a few
ConfigMaps, then sends every cell of the API Concepts' list table (resourceVersionMatch x
paging x resourceVersion) and watch table, a streaming list, a bookmark watch,
far-future resourceVersions and a list with a KEP-5866 shardSelector as raw
requests, and reports for each the expected
semantic (per the KEP), the observed one (from the HTTP status and the served
resourceVersion), the HTTP status and the served RV relation (exact, newer,
older). It then deletes what it created: the ConfigMaps and the scratch
namespace, also on Ctrl-C, SIGTERM or failure.

Rights needed: get /version; without -n: create and delete namespaces; in the
namespace: create, list, watch and deletecollection configmaps. A missing right
is reported as "missing right: VERB RESOURCE ..." before anything is created.

-o json prints the versioned schema documented in README.md (schemaVersion 1).`,
		Example: `  kubectl steadywatch probe
  kubectl steadywatch probe -n my-namespace -o json`,
		Args: noArgs,
		RunE: func(cmd *command, _ []string) error { return a.runProbe(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.DurationVar(&o.bookmarkTimeout, "bookmark-timeout", 5*time.Second, "timeoutSeconds of the bookmark watch (watch caches send a bookmark about 2s before it; min 3s)")
	f.DurationVar(&o.streamQuiet, "stream-timeout", 3*time.Second, "how long a streaming list may stay quiet before its initial-events-end bookmark counts as missing")
	f.DurationVar(&o.cleanupTimeout, "cleanup-timeout", 30*time.Second, "bound on deleting what the probe created")
	return cmd
}

// probeEnv is the state the cells run against.
type probeEnv struct {
	// rc sends the cells' requests as they are: no client-side retries (a
	// 504 with Retry-After is an observation, not something to wait out).
	rc          rest.Interface
	cms         typedcorev1.ConfigMapInterface
	ns          string
	selector    string
	runID       string
	old         string // N
	latest      string // newest RV seen
	token       string // continue token of a MostRecent first page
	tokenRV     string
	names       []string // probe objects listed before the cells
	oldName     string   // the object created at N
	afterOld    []string // objects created after N
	sentinelSeq int
	// caps is what the server's version says it can do; streamBase is the
	// scope of the proxy-chain cells' streaming list; endObs is that list's
	// observation, shared by the three cells.
	caps       capability.Capabilities
	streamBase metav1.ListOptions
	endObs     *endObservation
}

func randomSuffix() string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

func (a *app) runProbe(cmd *command, o *probeOptions) (err error) {
	if err := outputFormat(o.output); err != nil {
		return err
	}
	if o.bookmarkTimeout < 3*time.Second {
		return usagef("--bookmark-timeout must be at least 3s")
	}
	if o.streamQuiet <= 0 || o.cleanupTimeout <= 0 {
		return usagef("--stream-timeout and --cleanup-timeout must be positive")
	}
	ctx := cmd.Context()
	logger := klog.FromContext(ctx)
	c, err := a.clients(ctx)
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(c.cfg)
	// The probe sends a few dozen requests in a row; client-go's default
	// client-side rate limit (5 QPS) would only slow it down.
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	runID := randomSuffix()
	createNS := !c.explicitNamespace
	ns := c.namespace
	if createNS {
		ns = "steadywatch-probe-" + runID
	}
	if err := preflight(ctx, cs, ns, createNS); err != nil {
		return err
	}

	env := &probeEnv{rc: cs.CoreV1().RESTClient(), cms: cs.CoreV1().ConfigMaps(ns), ns: ns, runID: runID, selector: probeLabel + "=" + runID}
	// Cleanup runs whatever happens next, on a context that outlives an interrupt.
	created := false
	defer func() {
		if !created {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cleanupTimeout)
		defer cancel()
		if cerr := cleanup(cctx, cs, env, createNS); cerr != nil {
			// Printed once: as the command's error, or here when another
			// error is the command's.
			if err == nil {
				err = fmt.Errorf("probe: cleanup failed: %w", cerr)
			} else {
				fmt.Fprintf(a.errOut, "probe: cleanup failed: %s\n", oneLine(cerr.Error()))
			}
			return
		}
		if createNS {
			fmt.Fprintf(a.errOut, "probe: deleted namespace %s\n", ns)
		} else {
			fmt.Fprintf(a.errOut, "probe: deleted the probe's ConfigMaps in namespace %s\n", ns)
		}
	}()
	if createNS {
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{probeLabel: runID}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
			return wrapRequestError(ctx, "create", "namespaces", "", err)
		}
		created = true
		fmt.Fprintf(a.errOut, "probe: created namespace %s\n", ns)
	}
	created = true
	if err := setup(ctx, env); err != nil {
		return err
	}
	env.caps = c.server.Capabilities(ctx)
	if !createNS {
		// A shared namespace: stream only the probe's own objects.
		env.streamBase = metav1.ListOptions{LabelSelector: env.selector}
	}
	logger.V(1).Info("probe set up", "namespace", ns, "old", env.old, "latest", env.latest)
	fmt.Fprintf(a.errOut, "probe: %d ConfigMaps created in %s; N=%s latest=%s; running cells\n", len(env.names), ns, env.old, env.latest)

	rep := probeReport{
		SchemaVersion: 1,
		Server: serverReport{
			GitVersion:   c.version.GitVersion,
			Host:         hostOf(c.cfg),
			Capabilities: c.server.Capabilities(ctx).String(),
		},
		Namespace:        ns,
		CreatedNamespace: createNS,
		ResourceVersions: rvReport{N: env.old, Latest: env.latest, ContinueToken: env.tokenRV},
		Limit:            probeLimit,
		Cells:            []cellReport{},
	}
	start := time.Now()
	for _, cl := range probeCells() {
		cr, err := runCell(ctx, env, cl, o)
		if err != nil {
			return err
		}
		rep.Cells = append(rep.Cells, cr)
	}
	rep.DurationSeconds = roundSeconds(time.Since(start))
	rep.summarize()
	if o.output == "json" {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	printProbeReport(a.out, rep)
	return nil
}

// preflight asks the apiserver (SelfSubjectAccessReview) for every right the
// probe needs, before it creates anything. If the review API itself is not
// available to the caller, it is skipped: missing rights are then reported
// from the first 403.
func preflight(ctx context.Context, cs kubernetes.Interface, ns string, createNS bool) error {
	type right struct{ verb, resource, ns string }
	var rights []right
	if createNS {
		rights = append(rights, right{"create", "namespaces", ""}, right{"delete", "namespaces", ""})
	}
	for _, v := range []string{"create", "list", "watch", "deletecollection"} {
		rights = append(rights, right{v, "configmaps", ns})
	}
	for _, r := range rights {
		rev, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Verb: r.verb, Resource: r.resource, Namespace: r.ns, Version: "v1",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: %w", ctx.Err())
			}
			klog.FromContext(ctx).V(1).Info("access review unavailable; rights are checked by the requests themselves", "err", err)
			return nil
		}
		if !rev.Status.Allowed {
			return &MissingRightError{Verb: r.verb, Resource: r.resource, Namespace: r.ns}
		}
	}
	return nil
}

// wrapRequestError turns a 403 into a MissingRightError and an interrupt into
// a clear error.
func wrapRequestError(ctx context.Context, verb, resource, ns string, err error) error {
	if apierrors.IsForbidden(err) {
		return &MissingRightError{Verb: verb, Resource: resource, Namespace: ns, Err: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if ns != "" {
		return fmt.Errorf("%s %s in namespace %s: %w", verb, resource, ns, err)
	}
	return fmt.Errorf("%s %s: %w", verb, resource, err)
}

func (e *probeEnv) newConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{probeLabel: e.runID}},
		Data:       map[string]string{"probe": name},
	}
}

// list sends one list request exactly as given.
func (e *probeEnv) list(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error) {
	l := &corev1.ConfigMapList{}
	err := e.rc.Get().Namespace(e.ns).Resource("configmaps").VersionedParams(&opts, scheme.ParameterCodec).MaxRetries(0).Do(ctx).Into(l)
	return l, err
}

// watch opens one watch exactly as given.
func (e *probeEnv) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return e.rc.Get().Namespace(e.ns).Resource("configmaps").VersionedParams(&opts, scheme.ParameterCodec).MaxRetries(0).Watch(ctx)
}

func (e *probeEnv) create(ctx context.Context, name string) (string, error) {
	obj, err := e.cms.Create(ctx, e.newConfigMap(name), metav1.CreateOptions{})
	if err != nil {
		return "", wrapRequestError(ctx, "create", "configmaps", e.ns, err)
	}
	return obj.GetResourceVersion(), nil
}

// setup creates probe-0 (its RV is N), then three newer ConfigMaps, lists
// them (latest RV and names) and takes a continue token from a first page.
func setup(ctx context.Context, e *probeEnv) error {
	e.oldName = "probe-" + e.runID + "-0"
	rv, err := e.create(ctx, e.oldName)
	if err != nil {
		return err
	}
	e.old = rv
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("probe-%s-%d", e.runID, i)
		if _, err := e.create(ctx, name); err != nil {
			return err
		}
		e.afterOld = append(e.afterOld, name)
	}
	l, err := e.list(ctx, metav1.ListOptions{LabelSelector: e.selector})
	if err != nil {
		return wrapRequestError(ctx, "list", "configmaps", e.ns, err)
	}
	e.latest = l.GetResourceVersion()
	for _, it := range l.Items {
		e.names = append(e.names, it.GetName())
	}
	page, err := e.list(ctx, metav1.ListOptions{LabelSelector: e.selector, Limit: probeLimit})
	if err != nil {
		return wrapRequestError(ctx, "list", "configmaps", e.ns, err)
	}
	if page.GetContinue() == "" {
		return fmt.Errorf("setup: a first page of %d of %d ConfigMaps came without a continue token", probeLimit, len(e.names))
	}
	e.token, e.tokenRV = page.GetContinue(), page.GetResourceVersion()
	if vocab.CompareRV(e.latest, e.old) != vocab.Newer {
		return fmt.Errorf("setup: the list after newer writes is at %s, not newer than N=%s", e.latest, e.old)
	}
	return nil
}

// cleanup deletes the probe's ConfigMaps and, if it created it, the namespace.
// ConfigMaps are deleted explicitly so nothing is left even where no
// namespace controller runs.
func cleanup(ctx context.Context, cs kubernetes.Interface, e *probeEnv, deleteNS bool) error {
	var errs []error
	if err := e.cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: e.selector}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, wrapRequestError(ctx, "deletecollection", "configmaps", e.ns, err))
	}
	if deleteNS {
		if err := cs.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, wrapRequestError(ctx, "delete", "namespaces", "", err))
		}
	}
	return errors.Join(errs...)
}

// wireOptions returns the wire options of a cell.
func (e *probeEnv) wireOptions(c cell) metav1.ListOptions {
	o := metav1.ListOptions{LabelSelector: e.selector, ResourceVersionMatch: c.Match}
	switch c.RV {
	case RVZero:
		o.ResourceVersion = "0"
	case RVOld:
		o.ResourceVersion = e.old
	case RVLatest:
		o.ResourceVersion = e.latest
	case RVFuture:
		o.ResourceVersion = e.future()
	}
	switch c.Paging {
	case PagingLimit:
		o.Limit = probeLimit
	case PagingContinue:
		o.Limit = probeLimit
		o.Continue = e.token
	}
	return o
}

func (e *probeEnv) future() string {
	n, err := strconv.ParseUint(e.latest, 10, 64)
	if err != nil {
		return "999999999999"
	}
	return strconv.FormatUint(n+1000000, 10)
}

// statusOf returns the HTTP status of a request error (0 for a transport error).
func statusOf(err error) int {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return int(se.Status().Code)
	}
	return 0
}

func runCell(ctx context.Context, e *probeEnv, c cell, o *probeOptions) (cellReport, error) {
	opts := e.wireOptions(c)
	r := cellReport{
		ID: c.ID, Kind: c.Kind, Source: c.Source, Note: c.Note,
		Request: requestShape{
			ResourceVersion: c.RV, ResourceVersionMatch: string(c.Match),
			Continue: c.Paging == PagingContinue, SendInitialEvents: c.SendInitialEvents,
			AllowWatchBookmarks: c.AllowWatchBookmarks,
		},
		Expected: c.Expected, ExpectedIfMatchIgnored: c.ExpectedIfMatchIgnored,
		Wire: wireQuery(opts),
	}
	if c.Paging == PagingLimit || c.Paging == PagingContinue {
		r.Request.Limit = probeLimit
	}
	begin := time.Now()
	var err error
	switch c.Kind {
	case KindList, KindFarFutureList:
		err = e.runList(ctx, c, opts, &r)
	case KindWatch:
		err = e.runWatchCell(ctx, c, opts, &r)
	case KindStreamingList:
		err = e.runStreamingList(ctx, c, opts, o.streamQuiet, &r)
	case KindBookmark:
		err = e.runBookmark(ctx, opts, o.bookmarkTimeout, &r)
	case KindFarFutureWatch:
		err = e.runFarFutureWatch(ctx, opts, &r)
	case KindShardSelector:
		err = e.runShardSelectorCell(ctx, opts, &r)
	case KindProxyChain:
		if e.endObs == nil {
			obs, oerr := e.observeEndBookmark(ctx, e.caps, e.streamBase, o.streamQuiet)
			if oerr != nil {
				return r, oerr
			}
			e.endObs = &obs
		}
		runProxyChainCell(c, *e.endObs, &r)
		return r, nil
	default:
		err = fmt.Errorf("unknown cell kind %q", c.Kind)
	}
	if err != nil {
		return r, err
	}
	r.Seconds = roundSeconds(time.Since(begin))
	r.Verdict = verdict(c, r.Observed)
	return r, nil
}

// fatal reports whether a cell's request error must stop the probe (missing
// right, interrupt, unreachable server) rather than be recorded as an
// observation.
func fatal(ctx context.Context, verb string, e *probeEnv, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &MissingRightError{Verb: verb, Resource: "configmaps", Namespace: e.ns, Err: err}
	}
	if statusOf(err) == 0 {
		return fmt.Errorf("%s configmaps: %w", verb, err)
	}
	return nil
}

func (e *probeEnv) runList(ctx context.Context, c cell, opts metav1.ListOptions, r *cellReport) error {
	refs := listRefs{Old: e.old, LatestBefore: e.latest, Token: e.tokenRV, Future: opts.ResourceVersion}
	l, err := e.list(ctx, opts)
	if err != nil {
		if f := fatal(ctx, "list", e, err); f != nil {
			return f
		}
		r.HTTPStatus = statusOf(err)
		r.Observed = errorSemantic(r.HTTPStatus, engine.Classify(err))
		r.Message = oneLine(err.Error())
		if d, ok := engine.RetryAfter(err); ok {
			r.RetryAfterSeconds = int(d / time.Second)
		}
		return nil
	}
	r.HTTPStatus = 200
	r.ServedResourceVersion = l.GetResourceVersion()
	r.Items = len(l.Items)
	r.Observed, r.Relation, r.RelativeTo = observeList(c, r.ServedResourceVersion, refs)
	if vocab.CompareRV(r.ServedResourceVersion, e.latest) == vocab.Newer {
		e.latest = r.ServedResourceVersion
	}
	return nil
}

// openWatch opens a watch; an HTTP error is recorded on r and returns a nil watch.
func (e *probeEnv) openWatch(ctx context.Context, opts metav1.ListOptions, r *cellReport) (watch.Interface, error) {
	opts.Watch = true
	r.Wire = wireQuery(opts)
	w, err := e.watch(ctx, opts)
	if err != nil {
		if f := fatal(ctx, "watch", e, err); f != nil {
			return nil, f
		}
		r.HTTPStatus = statusOf(err)
		r.Observed = errorSemantic(r.HTTPStatus, engine.Classify(err))
		r.Message = oneLine(err.Error())
		return nil, nil
	}
	r.HTTPStatus = 200
	return w, nil
}

// openBoundedWatch opens a watch with timeoutSeconds secs, bounded on the
// client by bound: wctx ends after bound, and stop ends the watch and wctx.
// w is nil (and err too) when the server refused the watch, as recorded in r.
func (e *probeEnv) openBoundedWatch(ctx context.Context, opts metav1.ListOptions, secs int64, bound time.Duration, r *cellReport) (wctx context.Context, w watch.Interface, stop func(), err error) {
	opts.TimeoutSeconds = &secs
	wctx, cancel := context.WithTimeout(ctx, bound)
	w, err = e.openWatch(wctx, opts, r)
	if err != nil || w == nil {
		cancel()
		return nil, nil, nil, err
	}
	return wctx, w, func() { w.Stop(); cancel() }, nil
}

// recordQuietEnd records sem when a watch ended without the event its cell
// waited for, with byServer as the message when the server ended it (its
// timeoutSeconds) and byBound when the cell's bound passed first. Other ends
// were recorded by readEvents.
func recordQuietEnd(r *cellReport, end watchEnd, sem, byServer, byBound string) {
	switch end {
	case endedByServer:
		r.Observed, r.Message = sem, byServer
	case endedByBound:
		r.Observed, r.Message = sem, byBound
	}
}

// recordErrorEvent records a watch ERROR event as the observation.
func recordErrorEvent(ev watch.Event, r *cellReport) {
	st, ok := ev.Object.(*metav1.Status)
	if !ok {
		r.Observed, r.Message = SemError, fmt.Sprintf("watch error event %T", ev.Object)
		return
	}
	err := apierrors.FromObject(st)
	r.ErrorEventStatus = int(st.Code)
	r.Observed = errorSemantic(int(st.Code), engine.Classify(err))
	r.Message = oneLine(st.Message)
}

// watchEnd says why readEvents stopped.
type watchEnd int

const (
	// endedByCell: the cell's handler took an event as its observation.
	endedByCell watchEnd = iota
	// endedByErrorEvent: an ERROR event, recorded as the observation.
	endedByErrorEvent
	// endedByServer: the server closed the watch.
	endedByServer
	// endedByBound: the cell's bound (wctx) passed first.
	endedByBound
)

// readEvents reads w's events, counting them in r, until handle returns
// true, an ERROR event comes (recorded in r), the server closes the watch
// or wctx ends. It fails only when ctx, the probe's own context, ended.
func readEvents(ctx, wctx context.Context, w watch.Interface, r *cellReport, handle func(watch.Event) bool) (watchEnd, error) {
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return endedByServer, nil
			}
			r.Events++
			if ev.Type == watch.Error {
				recordErrorEvent(ev, r)
				return endedByErrorEvent, nil
			}
			if handle(ev) {
				return endedByCell, nil
			}
		case <-wctx.Done():
			if ctx.Err() != nil {
				return endedByBound, fmt.Errorf("interrupted: %w", ctx.Err())
			}
			return endedByBound, nil
		}
	}
}

// watchCellBound bounds one watch-table cell; the sentinel normally ends it at once.
const watchCellBound = 10 * time.Second

// runWatchCell opens the watch, then creates a sentinel ConfigMap: its event
// comes after everything the server sends for the watch's start (synthetic
// state or history), so the cell ends as soon as it arrives.
func (e *probeEnv) runWatchCell(ctx context.Context, c cell, opts metav1.ListOptions, r *cellReport) error {
	wctx, w, stop, err := e.openBoundedWatch(ctx, opts, int64(watchCellBound/time.Second), watchCellBound, r)
	if err != nil || w == nil {
		return err
	}
	defer stop()
	e.sentinelSeq++
	sentinel := fmt.Sprintf("sentinel-%s-%d", e.runID, e.sentinelSeq)
	if _, err := e.create(ctx, sentinel); err != nil {
		return err
	}
	seen := map[string]bool{}
	end, err := readEvents(ctx, wctx, w, r, func(ev watch.Event) bool {
		acc, err := meta.Accessor(ev.Object)
		if err != nil || ev.Type == watch.Bookmark {
			return false
		}
		name := acc.GetName()
		if ev.Type == watch.Added {
			seen[name] = true
		}
		return name == sentinel
	})
	if err != nil || end == endedByErrorEvent {
		return err
	}
	var obs watchObservation
	obs.InitialState = seen[e.oldName]
	obs.CompleteState = obs.InitialState
	for _, n := range e.names {
		if !seen[n] {
			obs.CompleteState = false
		}
	}
	for _, n := range e.afterOld {
		if seen[n] {
			obs.ChangesAfterOld = true
		}
	}
	r.Observed = observeWatch(c, obs)
	return nil
}

// runStreamingList waits for the initial-events-end bookmark with the SDK's
// one streaming-list guard (watchpipe.AwaitInitialEvents), quiet bounding each
// wait. The probe records what it saw; it keeps no belief about the server.
func (e *probeEnv) runStreamingList(ctx context.Context, _ cell, opts metav1.ListOptions, quiet time.Duration, r *cellReport) error {
	opts.SendInitialEvents = ptrBool(true)
	opts.AllowWatchBookmarks = true
	wctx, w, stop, err := e.openBoundedWatch(ctx, opts, 60, time.Minute, r)
	if err != nil || w == nil {
		return err
	}
	defer stop()
	var last watch.Event
	out, detail := watchpipe.AwaitInitialEvents(wctx.Done(), w, watchpipe.GuardOptions{Timeout: quiet}, klog.FromContext(ctx), func(ev watch.Event) bool {
		r.Events++
		last = ev
		return true
	})
	switch out {
	case watchpipe.InitialEventsEnded:
		r.Observed = SemInitialEventsEnd
		if acc, err := meta.Accessor(last.Object); err == nil {
			r.ServedResourceVersion = acc.GetResourceVersion()
		}
	case watchpipe.InitialEventsError:
		recordErrorEvent(last, r)
	case watchpipe.InitialEventsStopped:
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		r.Observed = SemNoInitialEventsEnd
	default:
		r.Observed, r.Message = SemNoInitialEventsEnd, detail
	}
	return nil
}

// runBookmark watches from N with allowWatchBookmarks and a short
// timeoutSeconds; watch caches send a bookmark about 2s before a watch's
// timeout (and about every minute), so one is expected well within the bound
// if the server sends any. A watch cache sends a bookmark only at an RV newer
// than the last event it sent the watcher, so the watch starts at N and selects
// only the ConfigMap created at N (fieldSelector metadata.name): it gets no
// event, and any bookmark is at the cache's newest RV, newer than N. Once the
// watch is open the probe writes another ConfigMap (not selected), so that the
// cache's newest RV is newer than N.
func (e *probeEnv) runBookmark(ctx context.Context, opts metav1.ListOptions, timeout time.Duration, r *cellReport) error {
	secs := int64(timeout / time.Second)
	opts.FieldSelector = "metadata.name=" + e.oldName
	opts.AllowWatchBookmarks = true
	bound := timeout + 3*time.Second
	wctx, w, stop, err := e.openBoundedWatch(ctx, opts, secs, bound, r)
	if err != nil || w == nil {
		return err
	}
	defer stop()
	// A write the watch does not select moves the cache past N while the watch
	// is open; observed on v1.36: without it the cache may send no bookmark.
	if _, err := e.create(ctx, "bookmark-bump-"+e.runID); err != nil {
		return err
	}
	end, err := readEvents(ctx, wctx, w, r, func(ev watch.Event) bool {
		if ev.Type != watch.Bookmark {
			return false
		}
		r.Observed = SemBookmark
		if acc, err := meta.Accessor(ev.Object); err == nil {
			r.ServedResourceVersion = acc.GetResourceVersion()
		}
		return true
	})
	if err != nil {
		return err
	}
	recordQuietEnd(r, end, SemNoBookmark,
		fmt.Sprintf("the watch ended at its timeoutSeconds=%d without a bookmark", secs), fmt.Sprintf("no bookmark within %s", bound))
	return nil
}

// farFutureWatchTimeout is the timeoutSeconds of the far-future watch.
const farFutureWatchTimeout = 2

func (e *probeEnv) runFarFutureWatch(ctx context.Context, opts metav1.ListOptions, r *cellReport) error {
	bound := farFutureWatchTimeout*time.Second + 4*time.Second
	wctx, w, stop, err := e.openBoundedWatch(ctx, opts, farFutureWatchTimeout, bound, r)
	if err != nil || w == nil {
		return err
	}
	defer stop()
	end, err := readEvents(ctx, wctx, w, r, func(ev watch.Event) bool {
		if ev.Type == watch.Bookmark {
			return false
		}
		r.Observed, r.Message = SemError, fmt.Sprintf("a %s event for a resourceVersion that does not exist yet", ev.Type)
		return true
	})
	if err != nil {
		return err
	}
	recordQuietEnd(r, end, SemWaits,
		fmt.Sprintf("no event until the watch's timeoutSeconds=%d", farFutureWatchTimeout), fmt.Sprintf("no event within %s", bound))
	return nil
}

// probeLister lists the probe's namespace, sending every request as given
// (no client-side retries).
type probeLister struct{ e *probeEnv }

func (l probeLister) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := l.e.list(ctx, opts)
	if err != nil {
		return nil, err
	}
	return list, nil
}

// itemCount returns the number of items of a list object.
func itemCount(obj runtime.Object) (int, error) {
	if !meta.IsListType(obj) {
		return 0, fmt.Errorf("a list answered %T", obj)
	}
	return meta.LenList(obj), nil
}

func ptrInt64(v int64) *int64 { return &v }
func ptrBool(v bool) *bool    { return &v }
