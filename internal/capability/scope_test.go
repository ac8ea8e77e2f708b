package capability

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/steadywatch/steadywatch/internal/reason"
)

var (
	coreV1   = schema.GroupVersion{Version: "v1"}
	appsV1   = schema.GroupVersion{Group: "apps", Version: "v1"}
	crdV1    = schema.GroupVersion{Group: "example.com", Version: "v1"}
	metricsB = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"} // an aggregated API
)

// foreignServer is a Server implemented outside this package: fixed
// capabilities and the observations it was given.
type foreignServer struct {
	mu   sync.Mutex
	caps Capabilities
	seen []Observation
}

func (f *foreignServer) Capabilities(context.Context) Capabilities {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.caps.Clone()
	for _, o := range f.seen {
		if c.Support == nil {
			c.Support = map[Capability]Support{}
		}
		c.Support[o.Capability] = o.Support
	}
	return c
}

func (f *foreignServer) Observe(o Observation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, o)
}

// scopedKinds are the three kinds of Server ForGroupVersion works on, each
// with StreamingList=yes and ResourceVersionMatch=yes as its host-wide base and
// a fake clock for the observations' TTL (ttl).
type serverKind struct {
	name string
	// make returns the host-wide server, the clock and the TTL of observations.
	make func(t *testing.T) (Server, *clocktesting.FakePassiveClock, time.Duration)
}

func scopedKinds() []serverKind {
	yes := map[Capability]Support{StreamingList: Yes, ResourceVersionMatch: Yes}
	return []serverKind{
		{"detector", func(t *testing.T) (Server, *clocktesting.FakePassiveClock, time.Duration) {
			d, clk, _ := newTestDetector(t)
			return d.For("https://h:6443", (&versionSource{raw: "v1.34.4"}).fn), clk, 5 * time.Minute
		}},
		{"static", func(t *testing.T) (Server, *clocktesting.FakePassiveClock, time.Duration) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			return newStatic(Capabilities{Support: yes}, DetectorOptions{Clock: clk}), clk, DefaultObservationTTL
		}},
		{"foreign", func(t *testing.T) (Server, *clocktesting.FakePassiveClock, time.Duration) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			f := &foreignServer{caps: Capabilities{Support: yes}}
			// What ForGroupVersion builds for a foreign Server, with a fake clock.
			set := newScopeSet(f, DetectorOptions{Clock: clk, ObservationTTL: time.Minute}.withDefaults(), "")
			return &view{set: set, gv: crdV1}, clk, time.Minute
		}},
	}
}

// forEachKind runs test once per kind of Server, as a subtest.
func forEachKind(t *testing.T, test func(t *testing.T, srv Server, clk *clocktesting.FakePassiveClock, ttl time.Duration)) {
	for _, kind := range scopedKinds() {
		t.Run(kind.name, func(t *testing.T) {
			srv, clk, ttl := kind.make(t)
			test(t, srv, clk, ttl)
		})
	}
}

// TestForGroupVersionScopesObservations: an observation through one
// group/version's view decides for that group/version only; the other views
// and the host-wide scope keep the host's belief. On today's main every
// observation is host-wide, so apps/v1's "no streaming lists" made core list.
func TestForGroupVersionScopesObservations(t *testing.T) {
	ctx := context.Background()
	forEachKind(t, func(t *testing.T, srv Server, _ *clocktesting.FakePassiveClock, _ time.Duration) {
		apps := ForGroupVersion(srv, appsV1)
		apps.Observe(Observation{Capability: StreamingList, Support: No, Detail: "watch with sendInitialEvents answered 422"})

		tests := []struct {
			scope   string
			server  Server
			want    Support
			basis   Basis
			wantGV  schema.GroupVersion
			inWhy   string
			notInGV bool
		}{
			{"apps/v1 (observed through)", apps, No, BasisObserved, appsV1, "observed for apps/v1: watch with sendInitialEvents answered 422", false},
			{"apps/v1 (a second view)", ForGroupVersion(ForGroupVersion(apps, coreV1), appsV1), No, BasisObserved, appsV1, "observed for apps/v1", false},
			{"core v1", ForGroupVersion(apps, coreV1), Yes, 0, coreV1, "", false},
			{"CRD group", ForGroupVersion(apps, crdV1), Yes, 0, crdV1, "", false},
			{"aggregated API", ForGroupVersion(apps, metricsB), Yes, 0, metricsB, "", false},
			{"host-wide (zero GroupVersion)", ForGroupVersion(apps, schema.GroupVersion{}), Yes, 0, schema.GroupVersion{}, "", true},
		}
		for _, tc := range tests {
			c := tc.server.Capabilities(ctx)
			if got := c.Get(StreamingList); got != tc.want {
				t.Errorf("%s: streamingList = %s, want %s (%s)", tc.scope, got, tc.want, c.Reasons[StreamingList])
			}
			if tc.basis == BasisObserved && c.Basis[StreamingList] != BasisObserved {
				t.Errorf("%s: basis %s, want observed", tc.scope, c.Basis[StreamingList])
			}
			if tc.basis != BasisObserved && c.Basis[StreamingList] == BasisObserved {
				t.Errorf("%s: another scope's observation leaked in: %s", tc.scope, c.Reasons[StreamingList])
			}
			if tc.want == Yes && c.Get(ResourceVersionMatch) != Yes {
				t.Errorf("%s: the host's base was lost: %s", tc.scope, c)
			}
			if c.GroupVersion != tc.wantGV {
				t.Errorf("%s: Capabilities.GroupVersion = %q, want %q", tc.scope, c.GroupVersion, tc.wantGV)
			}
			if !strings.Contains(c.Reasons[StreamingList], tc.inWhy) {
				t.Errorf("%s: reason %q lacks %q", tc.scope, c.Reasons[StreamingList], tc.inWhy)
			}
		}
		if f, ok := srv.(*view); ok {
			if inner := f.set.root.(*foreignServer); len(inner.seen) != 0 {
				t.Errorf("a view's observation was forwarded to the foreign host-wide server: %v", inner.seen)
			}
		}
	})
}

// TestForGroupVersionPrecedence: the view's own observation, else the
// host-wide observation, else the version; the host-wide scope never sees a
// view's observation.
func TestForGroupVersionPrecedence(t *testing.T) {
	ctx := context.Background()
	type obs struct {
		gv  schema.GroupVersion // zero: host-wide
		sup Support
	}
	tests := []struct {
		name      string
		obs       []obs
		wantHost  Support
		wantApps  Support
		wantCore  Support
		basisApps Basis
	}{
		{"version only", nil, Yes, Yes, Yes, BasisGateDefault},
		{"host-wide observation applies to every view", []obs{{schema.GroupVersion{}, No}}, No, No, No, BasisObserved},
		{"the view's own observation outranks the host-wide one", []obs{{schema.GroupVersion{}, No}, {appsV1, Yes}}, No, Yes, No, BasisObserved},
		{"order does not matter: the nearest scope wins", []obs{{appsV1, Yes}, {schema.GroupVersion{}, No}}, No, Yes, No, BasisObserved},
		{"a view's observation stays in its view", []obs{{appsV1, No}}, Yes, No, Yes, BasisObserved},
		{"Observe(Unknown) in the view falls back to the host-wide one", []obs{{schema.GroupVersion{}, No}, {appsV1, Yes}, {appsV1, Unknown}}, No, No, No, BasisObserved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, clk, _ := newTestDetector(t)
			host := d.For("h", (&versionSource{raw: "v1.34.4"}).fn)
			for _, o := range tc.obs {
				clk.SetTime(clk.Now().Add(time.Second))
				ForGroupVersion(host, o.gv).Observe(Observation{Capability: StreamingList, Support: o.sup})
			}
			if got := host.Capabilities(ctx).Get(StreamingList); got != tc.wantHost {
				t.Errorf("host-wide: %s, want %s", got, tc.wantHost)
			}
			apps := ForGroupVersion(host, appsV1).Capabilities(ctx)
			if got := apps.Get(StreamingList); got != tc.wantApps || apps.Basis[StreamingList] != tc.basisApps {
				t.Errorf("apps/v1: %s basis %s, want %s basis %s", got, apps.Basis[StreamingList], tc.wantApps, tc.basisApps)
			}
			if got := ForGroupVersion(host, coreV1).Capabilities(ctx).Get(StreamingList); got != tc.wantCore {
				t.Errorf("core v1: %s, want %s", got, tc.wantCore)
			}
		})
	}
}

// TestForGroupVersionVersionBaseIsPerHost: every view of a host answers from
// the one /version of that host, fetched once, and an in-place upgrade reaches
// every view after VersionTTL.
func TestForGroupVersionVersionBaseIsPerHost(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	src := &versionSource{raw: "v1.18.19"}
	host := d.For("https://a:6443", src.fn)
	gvs := []schema.GroupVersion{coreV1, appsV1, crdV1, metricsB}
	ForGroupVersion(host, crdV1).Observe(Observation{Capability: StreamingList, Support: Yes})

	check := func(when string, want Support, minor int) {
		t.Helper()
		for _, gv := range gvs {
			c := ForGroupVersion(host, gv).Capabilities(ctx)
			if c.Get(ResourceVersionMatch) != want || c.Basis[ResourceVersionMatch] != BasisVersion || c.Version.Minor != minor {
				t.Errorf("%s, %s: resourceVersionMatch=%s basis %s version %s, want %s from v1.%d",
					when, gv, c.Get(ResourceVersionMatch), c.Basis[ResourceVersionMatch], c.Version, want, minor)
			}
			if c.TooLargeRVByMessage { // v1.18.19 and v1.36.3 both set the ResourceVersionTooLarge cause
				t.Errorf("%s, %s: TooLargeRVByMessage = true", when, gv)
			}
		}
	}
	check("v1.18.19", No, 18)
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("/version fetched %d times for %d views, want once per host", n, len(gvs))
	}
	src.set("v1.36.3", nil)
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	check("after an upgrade and VersionTTL", Yes, 36)
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("/version fetched %d times, want 2", n)
	}
}

// TestForGroupVersionObservationsExpire: a "no streaming lists" belief in a
// view expires after the observation TTL, so the resource streams again.
func TestForGroupVersionObservationsExpire(t *testing.T) {
	ctx := context.Background()
	for _, kind := range scopedKinds() {
		t.Run(kind.name, func(t *testing.T) {
			srv, clk, ttl := kind.make(t)
			apps := ForGroupVersion(srv, appsV1)
			apps.Observe(Observation{Capability: StreamingList, Support: No, Detail: "initial-events-end bookmark never came"})
			steps := []struct {
				after time.Duration
				want  Support
			}{
				{0, No},
				{ttl - time.Second, No},
				{time.Second, Yes}, // exactly ttl after the observation
				{time.Hour, Yes},
			}
			for i, st := range steps {
				clk.SetTime(clk.Now().Add(st.after))
				c := apps.Capabilities(ctx)
				if got := c.Get(StreamingList); got != st.want {
					t.Fatalf("step %d (+%s): streamingList = %s, want %s (%s)", i, st.after, got, st.want, c.Reasons[StreamingList])
				}
				if st.want == Yes && c.Basis[StreamingList] == BasisObserved {
					t.Fatalf("step %d: basis still observed after expiry", i)
				}
			}
		})
	}
}

// TestForGroupVersionForgetsEmptyScopes: scopes whose observations expired
// are dropped, so the number of remembered scopes stays bounded.
func TestForGroupVersionForgetsEmptyScopes(t *testing.T) {
	ctx := context.Background()
	d, clk, _ := newTestDetector(t)
	host := d.For("h", (&versionSource{raw: "v1.34.4"}).fn).(*hostState)
	for i := 0; i < 20; i++ {
		v := ForGroupVersion(host, schema.GroupVersion{Group: fmt.Sprintf("g%d.example.com", i), Version: "v1"})
		v.Observe(Observation{Capability: StreamingList, Support: No})
		_ = v.Capabilities(ctx)
	}
	ForGroupVersion(host, appsV1).Observe(Observation{Capability: StreamingList, Support: Unknown}) // nothing to forget: no scope made
	if n := scopeCount(host.scoped); n != 20 {
		t.Fatalf("%d scopes, want 20", n)
	}
	clk.SetTime(clk.Now().Add(time.Hour))
	for i := 0; i < 20; i++ {
		_ = ForGroupVersion(host, schema.GroupVersion{Group: fmt.Sprintf("g%d.example.com", i), Version: "v1"}).Capabilities(ctx)
	}
	if n := scopeCount(host.scoped); n != 0 {
		t.Fatalf("%d scopes remembered after every observation expired, want 0", n)
	}
}

func scopeCount(s *scopeSet) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.scopes)
}

// TestForGroupVersionMetricsAndLogs: the host-wide scope reports its belief
// changes once under "compat"; a view reports under "compat/<gv>" only when
// its belief departs from or returns to the host's; every reason is a
// declared ReasonCode; no host and no credentials in labels or logs.
func TestForGroupVersionMetricsAndLogs(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 2}))

	d, clk, rec := newTestDetector(t)
	host := d.For("https://user:s3cret@h:6443", (&versionSource{raw: "v1.34.4"}).fn)
	apps, core := ForGroupVersion(host, appsV1), ForGroupVersion(host, coreV1)

	_ = apps.Capabilities(ctx) // first answer: the host-wide scope learns the version
	_ = core.Capabilities(ctx) // no change: nothing reported
	first := rec.take()
	if len(first) != len(AllCapabilities) {
		t.Fatalf("first answer reported %d changes, want one per capability:\n%s", len(first), strings.Join(first, "\n"))
	}
	for _, f := range first {
		if !strings.HasPrefix(f, MetricsName+" compat:") {
			t.Errorf("first-learning change %q not under the host-wide name %q", f, MetricsName)
		}
	}

	apps.Observe(Observation{Capability: StreamingList, Support: No, Detail: "422"})
	for i := 0; i < 3; i++ {
		_ = apps.Capabilities(ctx)
		_ = core.Capabilities(ctx)
	}
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	_ = apps.Capabilities(ctx)
	want := []string{
		"compat/apps/v1 compat:streamingList=no",  // departs from the host's yes
		"compat/apps/v1 compat:streamingList=yes", // expired: back to the host's yes
	}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Errorf("view metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// An unlisted capability never becomes a label of its own.
	host.Observe(Observation{Capability: "somethingElse", Support: Yes})
	_ = host.Capabilities(ctx)
	if got := rec.take(); !slices.Equal(got, []string{"compat compat:unlisted-capability"}) {
		t.Errorf("unlisted capability: %v", got)
	}

	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "s3cret") {
		t.Fatalf("credentials in logs:\n%s", all)
	}
	var viewLines int
	for _, l := range lines {
		if strings.Contains(l, `"groupVersion"="apps/v1"`) {
			viewLines++
			if !strings.Contains(l, `"host"="https://h:6443"`) {
				t.Errorf("view log without the redacted host: %s", l)
			}
		}
	}
	if viewLines != 2 {
		t.Errorf("%d apps/v1 log lines, want 2:\n%s", viewLines, all)
	}
}

func TestBeliefReasonCodesAreTheClosedSet(t *testing.T) {
	codes := reason.By(reason.Compat)
	if len(codes) != 3*len(AllCapabilities)+1 {
		t.Fatalf("%d reason codes, want %d", len(codes), 3*len(AllCapabilities)+1)
	}
	for _, k := range AllCapabilities {
		for _, s := range []Support{Unknown, Yes, No} {
			got := reasonFor(k, s)
			if want := reason.Code("compat:" + string(k) + "=" + s.String()); got != want {
				t.Errorf("reasonFor(%s, %s) = %q, want %q", k, s, got, want)
			}
			if !slices.Contains(codes, got) {
				t.Errorf("reasonFor(%s, %s) = %q is not one of the compat reason codes", k, s, got)
			}
		}
	}
	tests := []struct {
		k    Capability
		s    Support
		want reason.Code
	}{
		{"notDeclared", Yes, "compat:unlisted-capability"},
		{"", No, "compat:unlisted-capability"},
		{StreamingList, Support(42), "compat:streamingList=unknown"},
	}
	for _, tc := range tests {
		if got := reasonFor(tc.k, tc.s); got != tc.want {
			t.Errorf("reasonFor(%q, %d) = %q, want %q", tc.k, tc.s, got, tc.want)
		}
	}
}

func TestMetricsNameFor(t *testing.T) {
	for gv, want := range map[schema.GroupVersion]string{
		{}:     "compat",
		coreV1: "compat/v1",
		appsV1: "compat/apps/v1",
		crdV1:  "compat/example.com/v1",
	} {
		if got := MetricsNameFor(gv); got != want {
			t.Errorf("MetricsNameFor(%q) = %q, want %q", gv, got, want)
		}
	}
}

// TestForGroupVersionForeignServer: a Server implemented elsewhere is
// wrapped; the wrapper keeps per-scope observations, derived views share
// them, the zero GroupVersion and a nil server come back unchanged.
func TestForGroupVersionForeignServer(t *testing.T) {
	ctx := context.Background()
	f := &foreignServer{caps: Capabilities{Support: map[Capability]Support{StreamingList: Yes}}}
	if got := ForGroupVersion(f, schema.GroupVersion{}); got != Server(f) {
		t.Fatalf("zero GroupVersion: %T, want the server itself", got)
	}
	if got := ForGroupVersion(nil, appsV1); got != nil {
		t.Fatalf("nil server: %T, want nil", got)
	}
	apps := ForGroupVersion(f, appsV1)
	apps.Observe(Observation{Capability: StreamingList, Support: No})
	core := ForGroupVersion(apps, coreV1)
	if got := core.Capabilities(ctx).Get(StreamingList); got != Yes {
		t.Fatalf("core view of a foreign server: %s", got)
	}
	if got := ForGroupVersion(core, appsV1).Capabilities(ctx).Get(StreamingList); got != No {
		t.Fatalf("a view derived from the wrapper does not share its observations: %s", got)
	}
	if ForGroupVersion(core, schema.GroupVersion{}) != Server(f) {
		t.Fatal("the zero GroupVersion of a wrapper view is not the foreign server")
	}
	// Host-wide evidence given to the foreign server reaches views without their own.
	f.Observe(Observation{Capability: StreamingList, Support: No})
	if got := core.Capabilities(ctx).Get(StreamingList); got != No {
		t.Fatalf("foreign host-wide belief not seen by the view: %s", got)
	}
	// A foreign Capabilities with nil maps does not panic.
	empty := ForGroupVersion(&foreignServer{}, appsV1)
	empty.Observe(Observation{Capability: WatchBookmarks, Support: Yes})
	if got := empty.Capabilities(ctx).Get(WatchBookmarks); got != Yes {
		t.Fatalf("nil-map foreign server: %s", got)
	}
}

// TestForGroupVersionConcurrent runs views of several group/versions, the
// host-wide scope and expiry concurrently (go test -race); each view's belief
// only ever reflects its own scope's observations.
func TestForGroupVersionConcurrent(t *testing.T) {
	ctx := context.Background()
	forEachKind(t, func(t *testing.T, srv Server, clk *clocktesting.FakePassiveClock, _ time.Duration) {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gv := schema.GroupVersion{Group: fmt.Sprintf("g%d.example.com", g%3), Version: "v1"}
				v := ForGroupVersion(srv, gv)
				for i := 0; i < 300; i++ {
					switch g % 3 {
					case 0: // only ever observes no
						v.Observe(Observation{Capability: StreamingList, Support: No})
						if got := v.Capabilities(ctx).Get(StreamingList); got != No {
							errs <- fmt.Errorf("%s: %s right after observing no", gv, got)
							return
						}
					case 1: // only reads: the host's yes, never another scope's no
						if got := v.Capabilities(ctx).Get(StreamingList); got != Yes {
							errs <- fmt.Errorf("%s (never observed): %s", gv, got)
							return
						}
					case 2: // re-scopes, reads the host-wide scope, forgets
						_ = ForGroupVersion(v, appsV1).Capabilities(ctx).String()
						_ = ForGroupVersion(v, schema.GroupVersion{}).Capabilities(ctx)
						v.Observe(Observation{Capability: StreamingList, Support: Unknown})
					}
				}
			}()
		}
		wg.Add(1)
		go func() { // the clock moves (less than the TTL) while others read
			defer wg.Done()
			for i := 0; i < 300; i++ {
				clk.SetTime(clk.Now().Add(time.Millisecond))
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestForGroupVersionReportsOnlyItsOwnChanges: a view counts a change only
// when its own observations change its belief; a change of the host-wide
// belief is counted once, under "compat", however many views see it.
func TestForGroupVersionReportsOnlyItsOwnChanges(t *testing.T) {
	ctx := context.Background()
	d, clk, rec := newTestDetector(t)     // observation TTL 5 min, version TTL 10 min
	src := &versionSource{raw: "v1.33.5"} // WatchList off by default: streamingList=no
	host := d.For("h", src.fn)
	apps, core := ForGroupVersion(host, appsV1), ForGroupVersion(host, coreV1)
	_ = apps.Capabilities(ctx)
	rec.take()

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"apps observes what the host believes: nothing changes", func() {
			apps.Observe(Observation{Capability: StreamingList, Support: No})
		}, nil},
		{"apps observes yes: apps departs", func() {
			apps.Observe(Observation{Capability: StreamingList, Support: Yes})
		}, []string{"compat/apps/v1 " + "compat:streamingList=yes"}},
		{"host-wide yes: the host changes, apps (already yes) does not", func() {
			clk.SetTime(clk.Now().Add(time.Minute))
			host.Observe(Observation{Capability: StreamingList, Support: Yes})
		}, []string{"compat " + "compat:streamingList=yes"}},
		{"apps' observation expires: apps stays yes through the host-wide one", func() {
			clk.SetTime(clk.Now().Add(4 * time.Minute))
		}, nil},
		{"the host-wide observation expires: counted once for the host", func() {
			clk.SetTime(clk.Now().Add(time.Minute))
		}, []string{"compat " + "compat:streamingList=no"}},
		{"an in-place upgrade to v1.34: counted once for the host", func() {
			src.set("v1.34.4", nil)
			clk.SetTime(clk.Now().Add(10 * time.Minute))
		}, []string{"compat " + "compat:streamingList=yes"}},
	}
	for _, st := range steps {
		st.do()
		for i := 0; i < 2; i++ {
			_ = apps.Capabilities(ctx)
			_ = core.Capabilities(ctx)
		}
		if got := rec.take(); !slices.Equal(got, st.want) {
			t.Errorf("%s: counted %q, want %q", st.name, got, st.want)
		}
	}
}
