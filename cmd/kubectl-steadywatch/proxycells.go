package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// The proxy-chain cells check, on the cluster the kubeconfig points at and
// through every proxy in between, the three ways a streaming list has been
// seen to lose its end in the field. One streaming list provokes the bookmark
// quickly: its initial events must end with a BOOKMARK annotated
// k8s.io/initial-events-end (KEP-3157), so once every initial event has
// arrived (counted beforehand from a limit=1 list: its item plus
// remainingItemCount) that bookmark is due at once. The probe runs the SDK's
// own guard (watchpipe.AwaitInitialEvents) on it, with the same bounds as
// steadywatch's informers, so each cell also shows what steadywatch decides
// and how soon.

// Observed values of the proxy-chain cells (shared by the three cells: they
// read one streaming list).
const (
	SemEndBookmark       = "EndBookmark"       // the annotated end bookmark arrived
	SemBookmarksFiltered = "BookmarksFiltered" // no bookmark at all; the stream stayed open
	SemAnnotationMissing = "AnnotationMissing" // a bookmark without k8s.io/initial-events-end ended the initial events
	SemCutBeforeEnd      = "CutBeforeEnd"      // the stream ended without the end bookmark
	SemNotApplicable     = "NotApplicable"     // the server cannot stream lists (v1.18, 1.19-1.26, gate off)
	SemInconclusive      = "Inconclusive"      // an error, or events the check cannot read
)

// Results of a proxy-chain cell.
const (
	ResultOK            = "ok"
	ResultFault         = "fault"
	ResultNotApplicable = "not-applicable"
	ResultInconclusive  = "inconclusive"
)

// Verdicts of proxy-chain cells besides as-specified (ok) and differs (fault).
const (
	VerdictNotApplicable = "not-applicable"
	VerdictInconclusive  = "inconclusive"
)

// KindProxyChain is the kind of the three proxy-chain cells.
const KindProxyChain = "proxy-chain"

// IDs of the proxy-chain cells.
const (
	CellBookmarksFiltered = "proxy/bookmarks-filtered"
	CellAnnotationMissing = "proxy/initial-events-end-missing"
	CellCutBeforeEnd      = "proxy/cut-before-end-bookmark"
)

const srcProxyChain = "KEP-3157: the initial events of a streaming list end with a BOOKMARK annotated k8s.io/initial-events-end"

// proxyCheck is what one proxy-chain cell checks, the public report of the
// fault and what steadywatch does about it.
type proxyCheck struct {
	Report, Steadywatch string
}

var proxyChecks = map[string]proxyCheck{
	CellBookmarksFiltered: {
		Report: "gravitational/teleport#64188",
		Steadywatch: "its guard counts the initial events (limit=1 list: item + remainingItemCount) and abandons the streaming list " +
			"1.5s after the last expected one (10s of quiet while the count is unknown, 30s while a known count is not reached), records streamingList=no for the server " +
			"(it expires) and lists instead: reason streaming-list-abandoned (drop-in informer), streaming-ignored (reflector)",
	},
	CellAnnotationMissing: {
		Report: "antrea-io/antrea#8123",
		Steadywatch: "its guard treats a bookmark without the annotation before the end as a server that does not stream lists: " +
			"it abandons the streaming list at once, records streamingList=no (it expires) and lists instead " +
			"(streaming-list-abandoned, streaming-ignored)",
	},
	CellCutBeforeEnd: {
		Report: "kubernetes/kubernetes#140890",
		Steadywatch: "its guard ends the streaming list when the stream closes without the end bookmark and lists instead " +
			"(streaming-list-abandoned, streaming-failed); a cut is not taken as evidence about the server, and the next " +
			"syncs back off instead of retrying the stream at once",
	},
}

// proxyChainCells are the three cells, in order.
func proxyChainCells() []cell {
	note := "one streaming list (sendInitialEvents=true, allowWatchBookmarks=true) read by steadywatch's guard; " +
		"the count of initial events comes from a limit=1 list (item + remainingItemCount)"
	var cells []cell
	for _, id := range []string{CellBookmarksFiltered, CellAnnotationMissing, CellCutBeforeEnd} {
		cells = append(cells, cell{
			ID: id, Kind: KindProxyChain, RV: RVUnset, Match: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents: true, AllowWatchBookmarks: true,
			Expected: SemEndBookmark, Source: srcProxyChain, Note: note,
		})
	}
	return cells
}

// endObservation is what one streaming list showed.
type endObservation struct {
	// NotApplicable, if set, says why the server cannot stream lists.
	NotApplicable string
	HTTPStatus    int
	Message       string
	Wire          string
	// Expected is the number of initial events counted beforehand, -1 if unknown.
	Expected     int
	ExpectedFrom string
	// Added counts the initial ADDED events handed to the guard.
	Added int
	// Bookmarks counts the bookmarks that reached the guard; Annotated is
	// true when one carried k8s.io/initial-events-end.
	Bookmarks int
	Annotated bool
	// ErrorEventStatus is the code of a watch ERROR event.
	ErrorEventStatus int
	Outcome          watchpipe.InitialEventsOutcome
	Detail           string
	// DecidedAfterLast is the time from the last initial event (or the
	// stream's start, if none) to the guard's decision.
	DecidedAfterLast time.Duration
	Seconds          float64
}

// observed classifies the stream for the three cells.
func (o endObservation) observed() string {
	switch {
	case o.NotApplicable != "":
		return SemNotApplicable
	case o.HTTPStatus != 200:
		return SemInconclusive
	}
	switch o.Outcome {
	case watchpipe.InitialEventsEnded:
		return SemEndBookmark
	case watchpipe.InitialEventsCut, watchpipe.InitialEventsClosed:
		return SemCutBeforeEnd
	case watchpipe.InitialEventsNotStreaming:
		switch {
		case o.Bookmarks > 0 && !o.Annotated:
			return SemAnnotationMissing
		case o.Bookmarks == 0 && (o.Expected < 0 || o.Added >= o.Expected):
			return SemBookmarksFiltered
		}
	}
	return SemInconclusive
}

// counted describes the initial events seen against the count.
func (o endObservation) counted() string {
	if o.Expected < 0 {
		return fmt.Sprintf("%d initial event(s) (count unknown: %s)", o.Added, o.ExpectedFrom)
	}
	return fmt.Sprintf("%d of %d expected initial event(s) (count from %s)", o.Added, o.Expected, o.ExpectedFrom)
}

// proxyCellResult returns the result and evidence of cell id for o.
func proxyCellResult(id string, o endObservation) (result, evidence string) {
	obs := o.observed()
	switch obs {
	case SemNotApplicable:
		return ResultNotApplicable, o.NotApplicable
	case SemInconclusive:
		switch {
		case o.HTTPStatus != 200:
			return ResultInconclusive, fmt.Sprintf("the streaming list was answered %d: %s", o.HTTPStatus, o.Message)
		case o.ErrorEventStatus != 0:
			return ResultInconclusive, fmt.Sprintf("the stream carried an ERROR event %d after %s: %s", o.ErrorEventStatus, o.counted(), o.Message)
		}
		return ResultInconclusive, fmt.Sprintf("after %s: %s", o.counted(), o.Detail)
	}
	decided := fmt.Sprintf("steadywatch's guard decided %s after the last initial event", o.DecidedAfterLast.Round(10*time.Millisecond))
	switch id {
	case CellBookmarksFiltered:
		switch obs {
		case SemEndBookmark, SemAnnotationMissing:
			return ResultOK, "a BOOKMARK arrived after " + o.counted()
		case SemBookmarksFiltered:
			return ResultFault, fmt.Sprintf("no BOOKMARK after %s; the stream stayed open (%s: %s)", o.counted(), decided, o.Detail)
		case SemCutBeforeEnd:
			return ResultInconclusive, "the stream ended before a bookmark could arrive (see " + CellCutBeforeEnd + ")"
		}
	case CellAnnotationMissing:
		switch obs {
		case SemEndBookmark:
			return ResultOK, "the BOOKMARK after " + o.counted() + " carried " + metav1.InitialEventsAnnotationKey + `: "true"`
		case SemAnnotationMissing:
			return ResultFault, fmt.Sprintf("a BOOKMARK without %s arrived after %s (%s)", metav1.InitialEventsAnnotationKey, o.counted(), decided)
		case SemBookmarksFiltered, SemCutBeforeEnd:
			return ResultInconclusive, "no bookmark reached the probe, so its annotation cannot be checked (see " + CellBookmarksFiltered + ", " + CellCutBeforeEnd + ")"
		}
	case CellCutBeforeEnd:
		switch obs {
		case SemEndBookmark:
			return ResultOK, "the stream stayed open until the end bookmark after " + o.counted()
		case SemAnnotationMissing:
			return ResultOK, "the stream stayed open until a bookmark after " + o.counted()
		case SemBookmarksFiltered:
			return ResultOK, fmt.Sprintf("the stream stayed open %s after the last initial event", o.DecidedAfterLast.Round(10*time.Millisecond))
		case SemCutBeforeEnd:
			return ResultFault, fmt.Sprintf("the stream ended after %s without the %s bookmark (%s)", o.counted(), metav1.InitialEventsAnnotationKey, decided)
		}
	}
	return ResultInconclusive, "unclassified: " + obs
}

func verdictOfResult(result string) string {
	switch result {
	case ResultOK:
		return VerdictAsSpecified
	case ResultFault:
		return VerdictDiffers
	case ResultNotApplicable:
		return VerdictNotApplicable
	}
	return VerdictInconclusive
}

// streamingNotApplicable says why the server's version cannot stream lists
// (compat's version table: sendInitialEvents is ignored before 1.19 and
// refused for a watch with resourceVersionMatch before 1.27), or "".
func streamingNotApplicable(c capability.Capabilities) string {
	if c.Get(capability.StreamingList) == capability.No && c.Basis[capability.StreamingList] == capability.BasisVersion {
		return fmt.Sprintf("server %s cannot stream lists (%s): there is no end bookmark to lose", c.Version, c.Reasons[capability.StreamingList])
	}
	return ""
}

// countInitialEvents returns how many objects a streaming list with base
// should send: from a limit=1 list's item plus remainingItemCount (what
// steadywatch's guard uses), else from a full list (the probe's own
// objects are few).
func countInitialEvents(ctx context.Context, c watchpipe.ListClient, base metav1.ListOptions) (int, string) {
	if n, ok := watchpipe.ExpectedInitialEvents(ctx, c, base); ok {
		return n, "a limit=1 list: item + remainingItemCount"
	}
	obj, err := c.List(ctx, base)
	if err != nil {
		return -1, "the limit=1 list had no remainingItemCount and a full list failed: " + oneLine(err.Error())
	}
	items, err := itemCount(obj)
	if err != nil {
		return -1, err.Error()
	}
	return items, "a full list (the limit=1 list had no remainingItemCount)"
}

// observeEndBookmark sends one streaming list with base's scope and lets
// steadywatch's guard read it.
func (e *probeEnv) observeEndBookmark(ctx context.Context, caps capability.Capabilities, base metav1.ListOptions, quiet time.Duration) (o endObservation, err error) {
	o.Expected = -1
	begin := time.Now()
	defer func() { o.Seconds = roundSeconds(time.Since(begin)) }()
	if na := streamingNotApplicable(caps); na != "" {
		o.NotApplicable = na
		return o, nil
	}
	lc := probeLister{e}
	o.Expected, o.ExpectedFrom = countInitialEvents(ctx, lc, base)

	opts := base
	opts.SendInitialEvents = ptrBool(true)
	opts.AllowWatchBookmarks = true
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	opts.TimeoutSeconds = ptrInt64(60)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var r cellReport
	w, err := e.openWatch(wctx, opts, &r)
	o.Wire, o.HTTPStatus, o.Message = r.Wire, r.HTTPStatus, r.Message
	if err != nil {
		return o, err
	}
	if w == nil {
		if o.HTTPStatus == 422 {
			o.NotApplicable = "the server refuses streaming lists (422: the WatchList feature gate is off, kubernetes/kubernetes#135583): " + o.Message
		}
		return o, nil
	}
	defer w.Stop()
	o.read(wctx, w, quiet, time.Now())
	if o.Outcome == watchpipe.InitialEventsStopped && ctx.Err() != nil {
		return o, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return o, nil
}

// read lets steadywatch's guard read the initial events of w (the count in
// o.Expected) and records what it saw and decided.
func (o *endObservation) read(ctx context.Context, w watch.Interface, quiet time.Duration, begin time.Time) {
	spy := newSpyWatch(w)
	defer spy.Stop()
	expected := make(chan int, 1)
	if o.Expected >= 0 {
		expected <- o.Expected
	}
	close(expected)
	last := begin
	var errEvent watch.Event
	out, detail := watchpipe.AwaitInitialEvents(ctx.Done(), spy, watchpipe.GuardOptions{Timeout: quiet, Expected: expected},
		klog.FromContext(ctx), func(ev watch.Event) bool {
			switch ev.Type {
			case watch.Added:
				o.Added++
				last = time.Now()
			case watch.Error:
				errEvent = ev
			}
			return true
		})
	o.DecidedAfterLast = time.Since(last)
	o.Outcome, o.Detail = out, detail
	o.Bookmarks, o.Annotated = spy.bookmarks()
	switch out {
	case watchpipe.InitialEventsStopped:
		o.Detail = "no decision before the bound"
	case watchpipe.InitialEventsError:
		if st, ok := errEvent.Object.(*metav1.Status); ok {
			o.ErrorEventStatus, o.Message = int(st.Code), oneLine(apierrors.FromObject(st).Error())
		}
	}
}

// runProxyChainCell fills r from the shared observation.
func runProxyChainCell(c cell, o endObservation, r *cellReport) {
	r.Wire, r.HTTPStatus, r.ErrorEventStatus = o.Wire, o.HTTPStatus, o.ErrorEventStatus
	r.Events = o.Added + o.Bookmarks
	r.Observed = o.observed()
	r.Result, r.Evidence = proxyCellResult(c.ID, o)
	r.Verdict = verdictOfResult(r.Result)
	chk := proxyChecks[c.ID]
	r.Report, r.Steadywatch = chk.Report, chk.Steadywatch
	if o.Expected >= 0 {
		r.ExpectedInitialEvents = ptrInt(o.Expected)
	}
	if o.HTTPStatus == 200 && o.NotApplicable == "" {
		r.DecisionSeconds = ptrFloat(roundSeconds(o.DecidedAfterLast))
	}
	r.Seconds = o.Seconds
}

// spyWatch forwards a watch and counts the bookmarks it handed over.
type spyWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu        sync.Mutex
	nBookmark int
	annotated bool
}

func newSpyWatch(inner watch.Interface) *spyWatch {
	s := &spyWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *spyWatch) run() {
	defer close(s.done)
	defer close(s.out)
	for {
		select {
		case <-s.stop:
			return
		case ev, ok := <-s.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case s.out <- ev:
			case <-s.stop:
				return
			}
			// Counted once handed over: what the guard saw.
			if ev.Type == watch.Bookmark {
				s.mu.Lock()
				s.nBookmark++
				s.annotated = s.annotated || hasInitialEventsEnd(ev.Object)
				s.mu.Unlock()
			}
		}
	}
}

func (s *spyWatch) Stop()                          { s.once.Do(func() { close(s.stop) }) }
func (s *spyWatch) ResultChan() <-chan watch.Event { return s.out }

// bookmarks stops the spy and returns how many bookmarks it handed over and
// whether one carried the end annotation.
func (s *spyWatch) bookmarks() (int, bool) {
	s.Stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nBookmark, s.annotated
}

func hasInitialEventsEnd(obj runtime.Object) bool {
	type annotated interface{ GetAnnotations() map[string]string }
	a, ok := obj.(annotated)
	return ok && a.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

func ptrInt(v int) *int           { return &v }
func ptrFloat(v float64) *float64 { return &v }
