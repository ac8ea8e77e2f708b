package capability

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// versionSource is a scripted /version: it returns the current answer and counts calls.
type versionSource struct {
	mu    sync.Mutex
	raw   string
	err   error
	calls atomic.Int32
}

func (v *versionSource) set(raw string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.raw, v.err = raw, err
}

func (v *versionSource) fn(ctx context.Context) (string, error) {
	v.calls.Add(1)
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.raw, v.err
}

// recorder captures Fallback calls; the other methods come from metrics.Nop.
type recorder struct {
	metricsnop.Nop
	mu        sync.Mutex
	fallbacks []string
}

func (r *recorder) Fallback(name, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallbacks = append(r.fallbacks, name+" "+reason)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.fallbacks
	r.fallbacks = nil
	return out
}

func newTestDetector(t *testing.T) (*Detector, *clocktesting.FakePassiveClock, *recorder) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &recorder{}
	d := NewDetector(DetectorOptions{
		VersionTTL:      10 * time.Minute,
		VersionErrorTTL: 30 * time.Second,
		ObservationTTL:  5 * time.Minute,
		Clock:           clk,
		Metrics:         rec,
	})
	return d, clk, rec
}

func TestDetectorVersionCachedAndRefreshedAfterTTL(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	src := &versionSource{raw: "v1.18.19"}
	s := d.For("https://a:6443", src.fn)

	for i := 0; i < 5; i++ {
		if got := s.Capabilities(ctx).Get(ResourceVersionMatch); got != No {
			t.Fatalf("v1.18.19: resourceVersionMatch = %s, want no", got)
		}
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("/version fetched %d times within the TTL, want 1", n)
	}

	src.set("v1.36.3", nil) // upgraded in place
	clk.SetTime(clk.Now().Add(10*time.Minute - time.Second))
	if got := s.Capabilities(ctx).Get(ResourceVersionMatch); got != No {
		t.Fatalf("just before the version TTL: resourceVersionMatch = %s, want the cached no", got)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	c := s.Capabilities(ctx)
	if c.Get(ResourceVersionMatch) != Yes || c.Version.Minor != 36 {
		t.Fatalf("after the version TTL: %s, want v1.36.3 with resourceVersionMatch=yes", c)
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("/version fetched %d times, want 2", n)
	}
}

func TestDetectorVersionErrorIsUnknownAndRetriedAfterNegativeTTL(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	src := &versionSource{err: errors.New("connection refused")}
	s := d.For("https://a:6443", src.fn)

	for i := 0; i < 10; i++ {
		c := s.Capabilities(ctx)
		for _, k := range AllCapabilities[:4] {
			if c.Get(k) != Unknown {
				t.Fatalf("after a /version error %s = %s, want unknown", k, c.Get(k))
			}
		}
		if !c.TooLargeRVByMessage {
			t.Fatal("unknown server: TooLargeRVByMessage must be the conservative true")
		}
		if !strings.Contains(c.Reasons[ResourceVersionMatch], "connection refused") {
			t.Fatalf("reason %q does not carry the fetch error", c.Reasons[ResourceVersionMatch])
		}
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("/version called %d times within the negative TTL, want 1 (no hammering)", n)
	}

	src.set("v1.34.4", nil)
	clk.SetTime(clk.Now().Add(29 * time.Second))
	if s.Capabilities(ctx).Get(ResourceVersionMatch) != Unknown || src.calls.Load() != 1 {
		t.Fatal("retried before the negative TTL passed")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if got := s.Capabilities(ctx).Get(ResourceVersionMatch); got != Yes {
		t.Fatalf("after the negative TTL: resourceVersionMatch = %s, want yes", got)
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("/version called %d times, want 2", n)
	}
}

func TestDetectorRefreshFailureKeepsLastKnownVersion(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	src := &versionSource{raw: "v1.34.4"}
	s := d.For("h", src.fn)
	_ = s.Capabilities(ctx)

	src.set("", errors.New("503 service unavailable"))
	clk.SetTime(clk.Now().Add(11 * time.Minute))
	c := s.Capabilities(ctx)
	if c.Get(ResourceVersionMatch) != Yes || c.Version.Minor != 34 {
		t.Fatalf("a failed refresh dropped the known version: %s", c)
	}
	if !strings.Contains(c.Reasons[ResourceVersionMatch], "kept after GET /version failed") {
		t.Errorf("reason %q does not say the version is stale", c.Reasons[ResourceVersionMatch])
	}
	// Retried after the negative TTL, not after the full version TTL.
	src.set("v1.18.19", nil)
	clk.SetTime(clk.Now().Add(30 * time.Second))
	if got := s.Capabilities(ctx).Get(ResourceVersionMatch); got != No {
		t.Fatalf("after the negative TTL the new version should be used; resourceVersionMatch = %s", got)
	}
}

func TestDetectorUnparsableAndUnstampedVersions(t *testing.T) {
	ctx := context.Background()
	for _, raw := range []string{"garbage", "v0.0.0-master+$Format:%H$", ""} {
		d, _, _ := newTestDetector(t)
		src := &versionSource{raw: raw}
		c := d.For("h", src.fn).Capabilities(ctx)
		if c.Get(StreamingList) != Unknown || c.Get(ResourceVersionMatch) != Unknown {
			t.Errorf("%q: %s, want all unknown", raw, c)
		}
		if c.Reasons[StreamingList] == "" {
			t.Errorf("%q: no reason", raw)
		}
	}
}

func TestDetectorObservationOutranksVersionAndExpires(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	s := d.For("h", (&versionSource{raw: "v1.34.4"}).fn)

	c := s.Capabilities(ctx)
	if c.Get(StreamingList) != Yes || !c.Tentative(StreamingList) {
		t.Fatalf("v1.34.4: streamingList = %s tentative=%v, want yes and tentative", c.Get(StreamingList), c.Tentative(StreamingList))
	}

	s.Observe(Observation{Capability: StreamingList, Support: No, Detail: "sendInitialEvents answered 422"})
	c = s.Capabilities(ctx)
	if c.Get(StreamingList) != No || c.Basis[StreamingList] != BasisObserved || c.Tentative(StreamingList) {
		t.Fatalf("observation did not outrank the version: %s basis=%s", c.Get(StreamingList), c.Basis[StreamingList])
	}
	if r := c.Reasons[StreamingList]; !strings.Contains(r, "422") || !strings.Contains(r, "overrides yes") {
		t.Errorf("reason %q should carry the detail and what it overrides", r)
	}

	clk.SetTime(clk.Now().Add(5*time.Minute - time.Second))
	if got := s.Capabilities(ctx).Get(StreamingList); got != No {
		t.Fatalf("observation expired early: %s", got)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	c = s.Capabilities(ctx)
	if c.Get(StreamingList) != Yes || c.Basis[StreamingList] != BasisGateDefault {
		t.Fatalf("after the observation TTL: %s basis=%s, want the version's yes again", c.Get(StreamingList), c.Basis[StreamingList])
	}
}

func TestDetectorContradictionReplacesAtOnce(t *testing.T) {
	ctx := context.Background()
	d, clk, rec := newTestDetector(t)
	s := d.For("https://ha:6443", (&versionSource{raw: "v1.19.0"}).fn)
	_ = s.Capabilities(ctx)
	rec.take()

	// An HA pair mid-upgrade: one server ignores resourceVersionMatch, the other honours it.
	answers := []Support{No, Yes, No, No, Yes}
	for i, a := range answers {
		clk.SetTime(clk.Now().Add(time.Second))
		s.Observe(Observation{Capability: ResourceVersionMatch, Support: a, Detail: fmt.Sprintf("answer %d", i)})
		c := s.Capabilities(ctx)
		if got := c.Get(ResourceVersionMatch); got != a {
			t.Fatalf("answer %d: belief %s, want the latest observation %s", i, got, a)
		}
		if !strings.Contains(c.Reasons[ResourceVersionMatch], fmt.Sprintf("answer %d", i)) {
			t.Fatalf("answer %d: reason %q is not the latest", i, c.Reasons[ResourceVersionMatch])
		}
	}
	want := []string{
		"compat compat:resourceVersionMatch=no",
		"compat compat:resourceVersionMatch=yes",
		"compat compat:resourceVersionMatch=no",
		"compat compat:resourceVersionMatch=yes",
	}
	if got := rec.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("belief-change metrics:\n%s\nwant (one per change, none for a repeated answer):\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Support Unknown forgets the observation.
	s.Observe(Observation{Capability: ResourceVersionMatch, Support: Unknown})
	if c := s.Capabilities(ctx); c.Basis[ResourceVersionMatch] != BasisVersion {
		t.Errorf("Observe(Unknown) did not forget: basis %s", c.Basis[ResourceVersionMatch])
	}
}

func TestDetectorPerHostIsolation(t *testing.T) {
	ctx := context.Background()
	d, _, _ := newTestDetector(t)
	a := &versionSource{raw: "v1.18.19"}
	b := &versionSource{raw: "v1.36.3"}
	sa := d.For("https://a:6443", a.fn)
	sb := d.For("https://b:6443", b.fn)

	sa.Observe(Observation{Capability: StreamingList, Support: Yes, Detail: "a only"})
	ca, cb := sa.Capabilities(ctx), sb.Capabilities(ctx)
	if ca.Get(ResourceVersionMatch) != No || cb.Get(ResourceVersionMatch) != Yes {
		t.Fatalf("versions mixed between hosts: a=%s b=%s", ca, cb)
	}
	if cb.Basis[StreamingList] == BasisObserved {
		t.Fatal("an observation on host a leaked to host b")
	}
	if a.calls.Load() != 1 || b.calls.Load() != 1 {
		t.Fatalf("calls a=%d b=%d, want 1 each", a.calls.Load(), b.calls.Load())
	}
	// The same host shares state across For calls.
	if got := d.For("https://a:6443", nil).Capabilities(ctx).Get(StreamingList); got != Yes {
		t.Fatalf("same host, second Server: streamingList = %s, want the shared observation", got)
	}
	if a.calls.Load() != 1 {
		t.Fatal("a second Server for the same host fetched /version again")
	}
}

func TestDetectorReturnsCopies(t *testing.T) {
	ctx := context.Background()
	d, _, _ := newTestDetector(t)
	s := d.For("h", (&versionSource{raw: "v1.34.4"}).fn)
	c := s.Capabilities(ctx)
	c.Support[ResourceVersionMatch] = No
	c.Reasons[ResourceVersionMatch] = "mutated"
	if got := s.Capabilities(ctx).Get(ResourceVersionMatch); got != Yes {
		t.Fatalf("mutating a returned Capabilities changed the detector: %s", got)
	}
}

func TestDetectorSingleFlightAndConcurrency(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	release := make(chan struct{})
	var calls atomic.Int32
	slow := func(ctx context.Context) (string, error) {
		calls.Add(1)
		select {
		case <-release:
			return "v1.34.4", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	s := d.For("h", slow)

	const n = 50
	results := make(chan Support, n)
	var started sync.WaitGroup
	for i := 0; i < n; i++ {
		started.Add(1)
		go func() {
			started.Done()
			results <- s.Capabilities(ctx).Get(ResourceVersionMatch)
		}()
	}
	started.Wait()
	// Wait until the one fetch has started, then let it finish.
	testfake.WaitFor(t, "the version fetch to start", func() bool { return calls.Load() > 0 })
	close(release)
	for i := 0; i < n; i++ {
		select {
		case got := <-results:
			if got != Yes {
				t.Fatalf("caller %d got %s, want yes", i, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a caller is stuck")
		}
	}
	if c := calls.Load(); c != 1 {
		t.Fatalf("%d concurrent callers made %d /version calls, want 1", n, c)
	}

	// Mixed readers, observers and hosts under -race.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("h%d", g%3)
			srv := d.For(host, (&versionSource{raw: "v1.30.1"}).fn)
			for i := 0; i < 200; i++ {
				sup := Yes
				if i%2 == 0 {
					sup = No
				}
				srv.Observe(Observation{Capability: StreamingList, Support: sup})
				c := srv.Capabilities(ctx)
				_ = c.String()
				if got := c.Get(StreamingList); got != Yes && got != No {
					t.Errorf("streamingList = %s under contention", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	clk.SetTime(clk.Now().Add(time.Hour))
	if got := d.For("h0", nil).Capabilities(ctx).Basis[StreamingList]; got == BasisObserved {
		t.Errorf("observations survived their TTL: basis %s", got)
	}
}

func TestDetectorCallerCancellationIsNotCachedAsServerError(t *testing.T) {
	d, _, _ := newTestDetector(t)
	var calls atomic.Int32
	ok := make(chan struct{})
	s := d.For("h", func(ctx context.Context) (string, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done() // the first caller gives up while waiting for /version
			return "", ctx.Err()
		}
		<-ok
		return "v1.34.4", nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Capabilities)
	go func() { done <- s.Capabilities(ctx) }()
	testfake.WaitFor(t, "the version fetch to start", func() bool { return calls.Load() > 0 })
	cancel()
	select {
	case c := <-done:
		if c.Get(ResourceVersionMatch) != Unknown {
			t.Fatalf("cancelled caller got %s", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled caller did not return")
	}
	close(ok)
	if got := s.Capabilities(context.Background()).Get(ResourceVersionMatch); got != Yes {
		t.Fatalf("after a caller cancelled, the next caller must fetch again: %s (calls=%d)", got, calls.Load())
	}
	if calls.Load() != 2 {
		t.Fatalf("calls = %d, want 2", calls.Load())
	}
}

func TestDetectorWaiterCancellationReturnsPromptly(t *testing.T) {
	d, _, _ := newTestDetector(t)
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	s := d.For("h", func(ctx context.Context) (string, error) {
		close(started)
		<-release
		return "v1.34.4", nil
	})
	go s.Capabilities(context.Background()) // the fetcher, blocked until release
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Support)
	go func() { done <- s.Capabilities(ctx).Get(ResourceVersionMatch) }()
	cancel()
	select {
	case got := <-done:
		if got != Unknown {
			t.Fatalf("waiter got %s, want unknown", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter with a cancelled context stayed blocked on another caller's fetch")
	}
}

func TestDetectorVersionTimeout(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	d := NewDetector(DetectorOptions{VersionTimeout: 50 * time.Millisecond, Clock: clk})
	var calls atomic.Int32
	s := d.For("h", func(ctx context.Context) (string, error) {
		calls.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	})
	start := time.Now()
	c := s.Capabilities(context.Background())
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("a hanging /version held the caller for %s", el)
	}
	if c.Get(ResourceVersionMatch) != Unknown || !strings.Contains(c.Reasons[ResourceVersionMatch], "deadline") {
		t.Fatalf("hanging /version: %s (%q)", c, c.Reasons[ResourceVersionMatch])
	}
	_ = s.Capabilities(context.Background())
	if calls.Load() != 1 {
		t.Fatalf("a timed-out /version was retried before the negative TTL: %d calls", calls.Load())
	}
}

func TestDetectorLogsBeliefChanges(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 2})
	ctx := klog.NewContext(context.Background(), logger)

	d, _, _ := newTestDetector(t)
	s := d.For("https://user:s3cret@h:6443", (&versionSource{raw: "v1.34.4"}).fn)
	_ = s.Capabilities(ctx)
	s.Observe(Observation{Capability: StreamingList, Support: No, Detail: "422 from sendInitialEvents"})
	_ = s.Capabilities(ctx)
	_ = s.Capabilities(ctx) // no change, no log

	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "s3cret") {
		t.Fatalf("credentials in logs:\n%s", all)
	}
	var streaming []string
	for _, l := range lines {
		if strings.Contains(l, `"capability"="streamingList"`) {
			streaming = append(streaming, l)
		}
	}
	if len(streaming) != 2 {
		t.Fatalf("want 2 streamingList belief logs (learned yes, observed no), got %d:\n%s", len(streaming), all)
	}
	if !strings.Contains(streaming[1], `"from"="yes"`) || !strings.Contains(streaming[1], `"to"="no"`) ||
		!strings.Contains(streaming[1], "422 from sendInitialEvents") {
		t.Errorf("change log lacks from/to/reason: %s", streaming[1])
	}
}

func TestStatic(t *testing.T) {
	ctx := context.Background()
	s := Static(Capabilities{
		Support:             map[Capability]Support{ResourceVersionMatch: Yes, StreamingList: No},
		TooLargeRVByMessage: false,
	})
	c := s.Capabilities(ctx)
	if c.Get(ResourceVersionMatch) != Yes || c.Get(StreamingList) != No || c.Basis[ResourceVersionMatch] != BasisStatic {
		t.Fatalf("static: %s basis=%v", c, c.Basis)
	}
	if c.TooLargeRVByMessage {
		t.Fatal("static TooLargeRVByMessage changed")
	}
	s.Observe(Observation{Capability: ResourceVersionMatch, Support: No, Detail: "Exact list served newer"})
	if got := s.Capabilities(ctx); got.Get(ResourceVersionMatch) != No || got.Basis[ResourceVersionMatch] != BasisObserved {
		t.Fatalf("an observation does not outrank Static: %s", got)
	}
	s.Observe(Observation{Capability: TooLargeRVMessage, Support: Yes})
	if !s.Capabilities(ctx).TooLargeRVByMessage {
		t.Fatal("observed tooLargeRVByMessage=yes not reflected in the bool")
	}
}

func TestStaticObservationExpires(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := newStatic(Capabilities{Support: map[Capability]Support{StreamingList: Yes}}, DetectorOptions{Clock: clk})
	s.Observe(Observation{Capability: StreamingList, Support: No})
	clk.SetTime(clk.Now().Add(DefaultObservationTTL))
	if got := s.Capabilities(context.Background()).Get(StreamingList); got != Yes {
		t.Fatalf("static observation did not expire: %s", got)
	}
}

func TestDetectorNilVersionFunction(t *testing.T) {
	d, _, _ := newTestDetector(t)
	c := d.For("h", nil).Capabilities(context.Background())
	if c.Get(ResourceVersionMatch) != Unknown || c.Reasons[ResourceVersionMatch] != "no version source" {
		t.Fatalf("nil version: %s %q", c, c.Reasons[ResourceVersionMatch])
	}
}

func TestVersionString(t *testing.T) {
	tests := []struct {
		info *version.Info
		want string
	}{
		{nil, ""},
		{&version.Info{GitVersion: "v1.27.3-eks-4f4795d", Major: "1", Minor: "27+"}, "v1.27.3-eks-4f4795d"},
		{&version.Info{GitVersion: "v0.0.0-master+$Format:%H$", Major: "1", Minor: "14+"}, "v1.14"},
		{&version.Info{GitVersion: "weird", Major: "1", Minor: "30"}, "v1.30"},
		{&version.Info{GitVersion: "weird"}, "weird"},
		{&version.Info{GitVersion: "v0.0.0-master+$Format:%H$"}, "v0.0.0-master+$Format:%H$"},
	}
	for _, tc := range tests {
		if got := versionString(tc.info); got != tc.want {
			t.Errorf("versionString(%+v) = %q, want %q", tc.info, got, tc.want)
		}
	}
}

func TestRedactHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://10.0.0.1:6443":         "https://10.0.0.1:6443",
		"https://admin:tok@h:6443/base": "https://h:6443/base",
		"127.0.0.1:6443":                "127.0.0.1:6443",
		"%zz@":                          "<unparsable host>",
	} {
		if got := redactHost(in); got != want {
			t.Errorf("redactHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForConfig(t *testing.T) {
	d := NewDetector(DetectorOptions{VersionTimeout: 2 * time.Second})
	if _, err := d.ForConfig(nil); err == nil {
		t.Fatal("ForConfig(nil) succeeded")
	}
	if _, err := d.ForConfig(&rest.Config{Host: "https://127.0.0.1:1", BearerToken: "tok3n",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not a pem")}}); err == nil {
		t.Fatal("ForConfig with an unusable CA succeeded")
	} else if strings.Contains(err.Error(), "tok3n") {
		t.Fatalf("token in error: %v", err)
	}
	// Nothing listens on port 1: the version fetch fails, capabilities are Unknown, nothing panics.
	s, err := d.ForConfig(&rest.Config{Host: "https://127.0.0.1:1", BearerToken: "tok3n"})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Capabilities(context.Background())
	if c.Get(ResourceVersionMatch) != Unknown {
		t.Fatalf("unreachable server: %s", c)
	}
	if r := c.Reasons[ResourceVersionMatch]; !strings.Contains(r, "GET /version failed") || strings.Contains(r, "tok3n") {
		t.Fatalf("reason %q", r)
	}
}
