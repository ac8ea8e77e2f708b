package lister

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

func TestRule1GoneRetriesAtNewerRVFromProbe(t *testing.T) {
	srv := capability.Static(capability.Capabilities{})
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		fail(testfake.Gone()),   // NotOlderThan(10) limit=2: legacy Exact, compacted
		page("50", "", "probe"), // limit=1 MostRecent probe
		page("50", "c1", "a", "b"),
		page("50", "", "c"),
	}}
	rec := &countingRecorder{}
	l := New(c, knobs.WithLister(Options{Server: srv, Metrics: rec, Name: "cms"}, knobs.Lister{Policy: fastPolicy()}))
	obj, r, err := l.List(context.Background(), NotOlderThan("10").WithLimit(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(obj); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("items %v", got)
	}
	calls := c.calls()
	want := []metav1.ListOptions{
		{ResourceVersion: "10", ResourceVersionMatch: "NotOlderThan", Limit: 2},
		{Limit: 1},
		{ResourceVersion: "50", Limit: 2}, // the 410 proved the match is ignored: legacy form (Exact at 50 satisfies NotOlderThan 10)
		{Limit: 2, Continue: "c1"},
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("sent %+v\nwant %+v", calls, want)
	}
	if r.ServedResourceVersion != "50" || r.Served != NotOlderThan("50").WithLimit(2) || r.Pages != 2 || r.Items != 3 {
		t.Fatalf("record %+v", r)
	}
	if len(r.Fallbacks) != 1 || r.Fallbacks[0].Reason != "rule1-gone-retry-newer-rv" ||
		!strings.Contains(r.Fallbacks[0].Detail, "limit=1 MostRecent list") || r.Fallbacks[0].Attempt != 1 {
		t.Fatalf("fallbacks %v", r.Fallbacks)
	}
	if r.Requests[1].Purpose != purposeNewerRVProbe || r.Requests[0].Class != fallback.Gone {
		t.Fatalf("requests %+v", r.Requests)
	}
	// The 410 proved the server ignores resourceVersionMatch: the next list uses the legacy form.
	if got := srv.Capabilities(context.Background()).Get(capability.ResourceVersionMatch); got != capability.No {
		t.Fatalf("match support after rule 1 = %v", got)
	}
	c.answers = append(c.answers, page("60", "", "z"))
	if _, r2, err := l.List(context.Background(), NotOlderThan("55").WithLimit(2)); err != nil || r2.Requests[0].Options.ResourceVersionMatch != "" {
		t.Fatalf("second list %v %+v", err, r2)
	}
	if !slices.Equal(rec.fallbacks, []string{"rule1-gone-retry-newer-rv"}) || rec.lists[0] != "NotOlderThan=ok" {
		t.Fatalf("metrics %v %v", rec.lists, rec.fallbacks)
	}
}

func TestRule1PrefersCallersNewerRV(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(testfake.Gone()), page("30", "", "a")}}
	l := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy(), LastObservedRV: func() string { return "30" }}))
	_, r, err := l.List(context.Background(), NotOlderThan("10").WithLimit(5))
	if err != nil {
		t.Fatal(err)
	}
	if calls := c.calls(); len(calls) != 2 || calls[1].ResourceVersion != "30" {
		t.Fatalf("calls %+v", calls)
	}
	if !strings.Contains(r.Fallbacks[0].Detail, "caller's last observed") {
		t.Fatalf("detail %q", r.Fallbacks[0].Detail)
	}
}

func TestRule1ExhaustedFallsBackToMostRecentButNeverOlder(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		fail(testfake.Gone()), page("40", "", "p"), fail(testfake.Gone()), page("60", "", "a"),
	}}
	p := fastPolicy()
	p.MaxNewerRVRetries = 1
	l := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: p}))
	_, r, err := l.List(context.Background(), NotOlderThan("10").WithLimit(5))
	if err != nil {
		t.Fatal(err)
	}
	want := []fallback.ReasonCode{"rule1-gone-retry-newer-rv", "rule1-gone-fallback-most-recent"}
	if !slices.Equal(reasons(r), want) || r.Served != MostRecent().WithLimit(5) || r.ServedResourceVersion != "60" {
		t.Fatalf("reasons %v served %v at %s", reasons(r), r.Served, r.ServedResourceVersion)
	}

	// The MostRecent fallback answering older than the floor is never accepted.
	c = &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(testfake.Gone()), page("5", "", "old")}}
	p.MaxNewerRVRetries = -1
	l = New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: p}))
	handed := 0
	_, err = l.ListPages(context.Background(), NotOlderThan("10").WithLimit(5), func(runtime.Object) error { handed++; return nil })
	if !errors.Is(err, ErrTooLargeResourceVersion) || handed != 0 {
		t.Fatalf("err %v handed %d", err, handed)
	}
	// 410, then the consistent MostRecent read older than the floor: it
	// proves the floor newer than anything the server has; no retry.
	if n := len(c.calls()); n != 2 {
		t.Fatalf("%d calls", n)
	}
}

func TestRule1DisabledFallbackFails(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(testfake.Gone())}}
	p := fastPolicy()
	p.MaxNewerRVRetries, p.DisableMostRecentFallback = -1, true
	_, _, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: p})).List(context.Background(), NotOlderThan("10").WithLimit(5))
	var le *Error
	if !errors.As(err, &le) || le.Reason != "rule1-gone-exhausted" || !errors.Is(err, ErrRetriesExhausted) || !apierrors.IsResourceExpired(err) {
		t.Fatalf("err %v", err)
	}
}

func TestRule2ExactMismatchRetriesWithLimit(t *testing.T) {
	srv := capability.Static(capability.Capabilities{})
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		page("12", "", "new"), // Exact(10) unpaginated: server ignored the match, served newest
		page("10", "c", "a"),  // rv=10&limit=3: legacy Exact
		page("10", "", "b"),
	}}
	l := New(c, knobs.WithLister(Options{Server: srv, PageSize: 3}, knobs.Lister{Policy: fastPolicy()}))
	obj, r, err := l.List(context.Background(), Exact("10"))
	if err != nil {
		t.Fatal(err)
	}
	calls := c.calls()
	want := []metav1.ListOptions{
		{ResourceVersion: "10", ResourceVersionMatch: "Exact"},
		{ResourceVersion: "10", Limit: 3}, // legacy form once the mismatch was observed
		{Limit: 3, Continue: "c"},
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("sent %+v", calls)
	}
	if got := names(obj); !slices.Equal(got, []string{"a", "b"}) || r.ServedResourceVersion != "10" {
		t.Fatalf("items %v rv %s", got, r.ServedResourceVersion)
	}
	if !slices.Equal(reasons(r), []fallback.ReasonCode{"rule2-exact-mismatch-retry-with-limit"}) || r.Requests[0].Class != fallback.ServedNewerThanExact {
		t.Fatalf("reasons %v", reasons(r))
	}
	if srv.Capabilities(context.Background()).Get(capability.ResourceVersionMatch) != capability.No {
		t.Fatal("mismatch not observed")
	}
}

func TestExactNeverReturnsOtherRV(t *testing.T) {
	for name, answer := range map[string]func(metav1.ListOptions) (runtime.Object, error){
		"mismatch with limit": page("12", "", "x"),
		"410":                 fail(testfake.Gone()),
	} {
		c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){answer}}
		handed := 0
		_, err := New(c, Options{}).ListPages(context.Background(), Exact("10").WithLimit(2), func(runtime.Object) error { handed++; return nil })
		if !errors.Is(err, ErrExactUnavailable) || !apierrors.IsResourceExpired(err) || handed != 0 || len(c.calls()) != 1 {
			t.Errorf("%s: err %v handed %d calls %d", name, err, handed, len(c.calls()))
		}
	}
}

func TestContinueExpiredNeverStitches(t *testing.T) {
	answers := func() []func(metav1.ListOptions) (runtime.Object, error) {
		return []func(metav1.ListOptions) (runtime.Object, error){
			page("20", "c1", "old-a"),
			fail(testfake.Gone()), // continue token expired
			page("30", "c2", "a"),
			page("30", "", "b"),
		}
	}
	// Without OnRestart, pages already handed over cannot be voided: fail.
	c := &scripted{t: t, answers: answers()}
	var got []string
	_, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).ListPages(context.Background(), MostRecent().WithLimit(1), func(p runtime.Object) error {
		got = append(got, names(p)...)
		return nil
	})
	if !errors.Is(err, ErrContinueExpired) || !slices.Equal(got, []string{"old-a"}) || len(c.calls()) != 2 {
		t.Fatalf("err %v got %v calls %d", err, got, len(c.calls()))
	}

	// With OnRestart the caller learns the pages are void; the list restarts.
	c = &scripted{t: t, answers: answers()}
	got, restarts := nil, 0
	r, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).ListPages(context.Background(), MostRecent().WithLimit(1), func(p runtime.Object) error {
		got = append(got, names(p)...)
		return nil
	}, OnRestart(func(ev fallback.Event) error {
		restarts++
		got = nil
		if ev.Reason != "continue-expired-restart-newer-rv" {
			t.Errorf("restart reason %s", ev.Reason)
		}
		return nil
	}))
	if err != nil || restarts != 1 || !slices.Equal(got, []string{"a", "b"}) || r.Restarts != 1 || r.Pages != 2 || r.ServedResourceVersion != "30" {
		t.Fatalf("err %v restarts %d got %v record %+v", err, restarts, got, r)
	}
	if calls := c.calls(); calls[2] != (metav1.ListOptions{Limit: 1}) {
		t.Fatalf("restart sent %+v", calls[2])
	}

	// List() restarts internally and returns only the new snapshot.
	c = &scripted{t: t, answers: answers()}
	obj, _, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), MostRecent().WithLimit(1))
	if err != nil || !slices.Equal(names(obj), []string{"a", "b"}) || obj.(metav1.ListInterface).GetResourceVersion() != "30" {
		t.Fatalf("List after restart: %v %v", err, obj)
	}
}

func TestContinueExpiredNotOlderThanRestartsAtNewerRV(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		page("20", "c1", "a"), fail(testfake.Gone()), page("45", "", "probe"), page("45", "", "a", "b"),
	}}
	obj, r, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), NotOlderThan("15").WithLimit(1))
	if err != nil || !slices.Equal(names(obj), []string{"a", "b"}) {
		t.Fatalf("%v %v", err, obj)
	}
	if calls := c.calls(); calls[3].ResourceVersion != "45" || calls[3].ResourceVersionMatch != "NotOlderThan" {
		t.Fatalf("restart sent %+v", calls[3])
	}
	if r.Served.ResourceVersion != "45" {
		t.Fatalf("served %v", r.Served)
	}
}

func TestContinueExpiredUnpaginatedPolicy(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		page("20", "c1", "a"), fail(testfake.Gone()), page("33", "", "a", "b"),
	}}
	p := fastPolicy()
	p.ContinueExpired = policy.RestartUnpaginated
	_, r, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: p})).List(context.Background(), NotOlderThan("15").WithLimit(1))
	if err != nil || c.calls()[2] != (metav1.ListOptions{ResourceVersion: "15", ResourceVersionMatch: "NotOlderThan"}) {
		t.Fatalf("%v %+v", err, c.calls())
	}
	if !slices.Equal(reasons(r), []fallback.ReasonCode{"continue-expired-restart-unpaginated"}) {
		t.Fatalf("%v", reasons(r))
	}
}

func TestContinuePageFromAnotherSnapshotIsNotStitched(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		page("20", "c1", "a"), page("21", "", "b"), page("22", "", "a", "b"),
	}}
	obj, r, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), MostRecent().WithLimit(1))
	if err != nil || r.ServedResourceVersion != "22" || !slices.Equal(names(obj), []string{"a", "b"}) || r.Restarts != 1 {
		t.Fatalf("%v %+v", err, r)
	}
}

func TestTooLargeHonoursRetryAfterThenFallsBack(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		fail(testfake.TooLarge(1)), page("95", "", "p"), fail(testfake.TooLarge(1)), page("95", "", "a"),
	}}
	p := fastPolicy()
	p.MaxRetryAfter = 60 * time.Millisecond // the server asks for 1s; the cap bounds it
	p.MaxTooLargeRetries = 1
	start := time.Now()
	_, r, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: p})).List(context.Background(), NotOlderThan("90"))
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 60*time.Millisecond || el > 900*time.Millisecond {
		t.Fatalf("waited %v, want the capped Retry-After of 60ms", el)
	}
	calls := c.calls()
	// The first 504 is checked by a consistent limit=1 read: 95 >= 90, so
	// the version exists and the request is sent again after Retry-After.
	if calls[0] != calls[2] || calls[1].Limit != 1 || calls[1].ResourceVersion != "" || calls[3] != (metav1.ListOptions{}) {
		t.Fatalf("calls %+v", calls)
	}
	want := []fallback.ReasonCode{"too-large-rv-check-exists", "too-large-rv-wait-retry-after", "too-large-rv-fallback-most-recent"}
	if !slices.Equal(reasons(r), want) || !strings.Contains(r.Fallbacks[1].Detail, "Retry-After 1s") {
		t.Fatalf("%v %q", reasons(r), r.Fallbacks[1].Detail)
	}
	// Exact never falls back.
	c = &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(testfake.TooLarge(0))}}
	p.MaxTooLargeRetries = -1
	if _, _, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: p})).List(context.Background(), Exact("90").WithLimit(1)); !errors.Is(err, ErrExactUnavailable) {
		t.Fatalf("exact too large: %v", err)
	}
}

func TestTransientErrorsBackOffBounded(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(apierrors.NewTooManyRequests("slow", 0))}}
	_, r, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), Any())
	if !errors.Is(err, ErrRetriesExhausted) || !apierrors.IsTooManyRequests(err) || len(c.calls()) != 3 {
		t.Fatalf("err %v calls %d", err, len(c.calls()))
	}
	if got := reasons(r); !slices.Equal(got, []fallback.ReasonCode{"throttled-backoff", "throttled-backoff", "retries-exhausted"}) {
		t.Fatalf("%v", got)
	}
	// A 503 then success.
	c = &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(apierrors.NewServiceUnavailable("x")), page("7", "", "a")}}
	if _, _, err := New(c, knobs.WithLister(Options{}, knobs.Lister{Policy: fastPolicy()})).List(context.Background(), Any()); err != nil {
		t.Fatal(err)
	}
}

func TestContextCancelledIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		func(metav1.ListOptions) (runtime.Object, error) { cancel(); return nil, context.Canceled },
	}}
	_, _, err := New(c, Options{}).List(ctx, MostRecent())
	if !errors.Is(err, context.Canceled) || len(c.calls()) != 1 {
		t.Fatalf("err %v calls %d", err, len(c.calls()))
	}
	// Cancelled during a backoff wait: returns promptly.
	ctx, cancel = context.WithCancel(context.Background())
	c = &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		func(metav1.ListOptions) (runtime.Object, error) {
			cancel()
			return nil, apierrors.NewTooManyRequests("x", 30)
		},
	}}
	start := time.Now()
	_, _, err = New(c, Options{}).List(ctx, MostRecent())
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestInvalidQueryIsRejectedBeforeAnyRequest(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){page("1", "")}}
	for _, q := range []Query{Exact("0"), Exact(""), NotOlderThan(""), MostRecent().WithContinue("t"), Exact("5").WithLimit(1).WithContinue("t")} {
		_, _, err := New(c, Options{}).List(context.Background(), q)
		var iq *fallback.InvalidQueryError
		if !errors.Is(err, fallback.ErrInvalidQuery) || !errors.As(err, &iq) {
			t.Errorf("%v: %v", q, err)
		}
	}
	if n := len(c.calls()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestLegacyServerGetsLegacyForm(t *testing.T) {
	c := newServer(t, steadywatchtest.V118(), testfake.ConfigMap("a", ""))
	c.Advance(9) // the store at resourceVersion 10
	l := New(c, Options{Server: staticServer(capability.No, capability.No), PageSize: 4})
	if _, _, err := l.List(context.Background(), Exact("10")); err != nil {
		t.Fatal(err)
	}
	if got := c.Requests()[0].Options; got != (metav1.ListOptions{ResourceVersion: "10", Limit: 4}) {
		t.Fatalf("sent %+v", got)
	}
}

func TestGetExact(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){page("10", "", "foo"), page("10", "")}}
	l := New(c, Options{Server: staticServer(capability.Yes, capability.Unknown), LabelSelector: "app=x"})
	obj, r, err := l.GetExact(context.Background(), "foo", "10")
	if err != nil || obj.(metav1.Object).GetName() != "foo" || r.ServedResourceVersion != "10" {
		t.Fatalf("%v %v", err, obj)
	}
	want := metav1.ListOptions{ResourceVersion: "10", ResourceVersionMatch: "Exact", FieldSelector: "metadata.name=foo", LabelSelector: "app=x"}
	if got := c.calls()[0]; got != want {
		t.Fatalf("sent %+v", got)
	}
	if _, _, err := l.GetExact(context.Background(), "foo", "10"); !apierrors.IsNotFound(err) {
		t.Fatalf("missing object: %v", err)
	}
}

func TestRemainingItemCountExposed(t *testing.T) {
	c := newServer(t, steadywatchtest.Faults{}, testfake.ConfigMap("a", ""), testfake.ConfigMap("b", ""), testfake.ConfigMap("c", ""), testfake.ConfigMap("d", ""), testfake.ConfigMap("e", ""), testfake.ConfigMap("f", ""), testfake.ConfigMap("g", ""), testfake.ConfigMap("h", ""))
	var seen *int64
	stop := errors.New("stop")
	r, err := New(c, Options{}).ListPages(context.Background(), MostRecent().WithLimit(1), func(p runtime.Object) error {
		seen = p.(metav1.ListInterface).GetRemainingItemCount()
		return stop
	})
	if !errors.Is(err, stop) || seen == nil || *seen != 7 || r.RemainingItemCount == nil || *r.RemainingItemCount != 7 {
		t.Fatalf("err %v seen %v record %v", err, seen, r.RemainingItemCount)
	}
}

// A real v1.18.19 answers fieldSelector=metadata.name=X from X's newest
// revision even with a limit (storage GetToList ignores resourceVersion), so
// GetExact scans the collection at the exact resourceVersion instead of failing.
func TestGetExactScansCollectionWhenNameListIsNotExact(t *testing.T) {
	c := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){
		page("12", "", "foo"),       // Exact(10) unpaginated, match ignored: newest
		page("12", "", "foo"),       // rv=10&limit=3 with the name selector: still newest (GetToList)
		page("10", "c", "a", "foo"), // collection at rv=10&limit=3: legacy Exact
		page("10", "", "b"),
	}}
	rm := &countingRecorder{}
	l := New(c, knobs.WithLister(Options{Server: capability.Static(capability.Capabilities{}), PageSize: 3, LabelSelector: "app=x", Metrics: rm}, knobs.Lister{Policy: fastPolicy()}))
	obj, r, err := l.GetExact(context.Background(), "foo", "10")
	if err != nil || obj.(metav1.Object).GetName() != "foo" || r.ServedResourceVersion != "10" {
		t.Fatalf("%v %v %+v", err, obj, r)
	}
	want := []metav1.ListOptions{
		{ResourceVersion: "10", ResourceVersionMatch: "Exact", FieldSelector: "metadata.name=foo", LabelSelector: "app=x"},
		{ResourceVersion: "10", Limit: 3, FieldSelector: "metadata.name=foo", LabelSelector: "app=x"},
		{ResourceVersion: "10", Limit: 3, LabelSelector: "app=x"},
		{Limit: 3, Continue: "c", LabelSelector: "app=x"},
	}
	if got := c.calls(); !slices.Equal(got, want) {
		t.Fatalf("sent %+v", got)
	}
	wantReasons := []fallback.ReasonCode{"rule2-exact-mismatch-retry-with-limit", "rule2-exact-mismatch-with-limit", "get-exact-name-list-not-exact-scan-collection"}
	if !slices.Equal(reasons(r), wantReasons) || len(r.Requests) != 4 || r.Pages != 2 {
		t.Fatalf("reasons %v requests %d pages %d", reasons(r), len(r.Requests), r.Pages)
	}
	if !slices.Contains(rm.fallbacks, "get-exact-name-list-not-exact-scan-collection") {
		t.Fatalf("scan not counted: %v", rm.fallbacks)
	}

	// Not in the collection at rv: NotFound, not an object from another resourceVersion.
	c = &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){page("12", "", "foo"), page("12", "", "foo"), page("10", "", "a")}}
	l = New(c, knobs.WithLister(Options{Server: capability.Static(capability.Capabilities{}), PageSize: 3}, knobs.Lister{Policy: fastPolicy()}))
	if _, _, err := l.GetExact(context.Background(), "foo", "10"); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound, got %v", err)
	}

	// rv compacted: the scan's 410 is ErrExactUnavailable.
	c = &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){page("12", "", "foo"), page("12", "", "foo"), fail(testfake.Gone())}}
	l = New(c, knobs.WithLister(Options{Server: capability.Static(capability.Capabilities{}), PageSize: 3}, knobs.Lister{Policy: fastPolicy()}))
	if _, _, err := l.GetExact(context.Background(), "foo", "10"); !errors.Is(err, ErrExactUnavailable) || !apierrors.IsResourceExpired(err) {
		t.Fatalf("want ErrExactUnavailable, got %v", err)
	}
}
