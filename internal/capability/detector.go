package capability

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/metrics"
)

// Defaults used for zero DetectorOptions fields.
const (
	DefaultVersionTTL      = 10 * time.Minute
	DefaultVersionErrorTTL = 30 * time.Second
	DefaultVersionTimeout  = 10 * time.Second
	DefaultObservationTTL  = 10 * time.Minute
)

// DetectorOptions configures a Detector. The zero value is a safe default.
type DetectorOptions struct {
	// VersionTTL is how long a fetched /version is trusted before it is fetched
	// again (servers get upgraded in place). Zero means DefaultVersionTTL (10 min).
	VersionTTL time.Duration
	// VersionErrorTTL is how long after a failed /version fetch the detector waits
	// before trying again; meanwhile it answers from what it knew before (Unknown
	// on a first failure) without contacting the server, so a broken /version is
	// not hammered. Zero means DefaultVersionErrorTTL (30 s).
	VersionErrorTTL time.Duration
	// VersionTimeout bounds one /version fetch so that a hanging server cannot
	// hold up a list. Zero means DefaultVersionTimeout (10 s).
	VersionTimeout time.Duration
	// ObservationTTL is how long an observed behaviour outranks the version, in
	// every scope (host-wide and per group/version). Every belief expires,
	// a "No" as much as a "Yes": a "no streaming lists" learned from one
	// refusal must not make a long-lived informer list instead of stream for
	// its whole life once the cluster enables the WatchList gate, is upgraded
	// in place, or its aggregated apiserver is fixed. After expiry the version
	// decides again, and the next request verifies it and is observed.
	//
	// Zero means DefaultObservationTTL (10 min): a wrong belief costs at most
	// one re-verification per scope every 10 minutes (a 422 answered at once,
	// or one wait of the lister's streaming-list guard on a server that ignores
	// sendInitialEvents), which is nothing next to an informer's relists, and a
	// fixed server streams again within 10 minutes. Shorter re-learns faster;
	// longer trusts one answer longer.
	//
	// Expiry is seen by callers that ask again: client-go's reflector reads its
	// ListerWatcher's IsWatchListSemanticsUnSupported once, when it is built,
	// so a ListerWatcher handed to client-go must also decide per request (try
	// the stream, fall back when it is refused) and not only through that flag.
	ObservationTTL time.Duration
	// Clock is the time source for all TTLs; nil means the real clock.
	Clock clock.PassiveClock
	// Metrics counts belief changes as Fallback(name, reason), where reason is
	// one of ReasonCodes ("compat:<capability>=<support>") and name is
	// MetricsNameFor the scope: "compat" for the host-wide beliefs (reported
	// once per host, whichever view asks), "compat/apps/v1" when a
	// group/version view's own observations change its belief (it departs
	// from, or returns to, the host-wide one). The host is not a label; it is
	// logged. Nil means metrics.Nop.
	Metrics metrics.Recorder
}

func (o DetectorOptions) withDefaults() DetectorOptions {
	if o.VersionTTL <= 0 {
		o.VersionTTL = DefaultVersionTTL
	}
	if o.VersionErrorTTL <= 0 {
		o.VersionErrorTTL = DefaultVersionErrorTTL
	}
	if o.VersionTimeout <= 0 {
		o.VersionTimeout = DefaultVersionTimeout
	}
	if o.ObservationTTL <= 0 {
		o.ObservationTTL = DefaultObservationTTL
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.Metrics = metricsnop.Or(o.Metrics)
	return o
}

// Detector keeps what is known about each apiserver, keyed by host: the parsed
// /version (with its own TTL), host-wide behaviour observations, and
// behaviour observations per API group/version (ForGroupVersion); observations
// outrank the version and expire. It is safe for concurrent use; share one per
// process.
type Detector struct {
	opts  DetectorOptions
	mu    sync.Mutex
	hosts map[string]*hostState
}

// NewDetector returns a Detector; see DetectorOptions for the defaults.
func NewDetector(o DetectorOptions) *Detector {
	return &Detector{opts: o.withDefaults(), hosts: make(map[string]*hostState)}
}

// For returns the host-wide Server for host; ForGroupVersion(server, gv) gives
// the view of one group/version. All Servers for the same host share their
// version cache and observations; the latest non-nil version function given
// for a host is the one used. version is called (bounded by
// VersionTimeout) the first time capabilities are needed and again after
// VersionTTL; its errors never reach callers: they yield Unknown capabilities
// until a retry after VersionErrorTTL succeeds. A nil version function means
// the version stays unknown and only observations count.
func (d *Detector) For(host string, version func(ctx context.Context) (string, error)) Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.hosts[host]
	if !ok {
		s = newHostState(host, d.opts)
		d.hosts[host] = s
	}
	if version != nil {
		s.mu.Lock()
		s.versionFn = version
		s.mu.Unlock()
	}
	return s
}

// ForConfig returns the Server for cfg.Host, fetching the version through
// discovery (GET /version) with cfg's transport, TLS settings and credentials,
// without client-go's hidden retries (fallback.NoHiddenRetries): a 429/5xx
// with any Retry-After, and a connection that ends without an answer (EOF,
// reset, HTTP/2 connection lost), is one request and one answer, and the
// version is read again after expiry. It fails only when no discovery client can be built from cfg.
func (d *Detector) ForConfig(cfg *rest.Config) (Server, error) {
	if cfg == nil {
		return nil, errors.New("compat: ForConfig: nil rest.Config")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(fallback.NoHiddenRetries(cfg))
	if err != nil {
		return nil, fmt.Errorf("compat: discovery client for %s: %w", redactHost(cfg.Host), err)
	}
	return d.For(cfg.Host, func(ctx context.Context) (string, error) {
		info, err := dc.ServerVersionWithContext(ctx)
		if err != nil {
			return "", err
		}
		return versionString(info), nil
	}), nil
}

// versionString picks the string to parse from a /version answer: gitVersion,
// or "v<major>.<minor>" built from the major and minor fields (which some
// providers suffix with "+", e.g. "14+") when gitVersion says nothing usable.
func versionString(info *version.Info) string {
	if info == nil {
		return ""
	}
	if v, err := ParseVersion(info.GitVersion); err == nil && !v.IsZero() {
		return info.GitVersion
	}
	major := strings.TrimSuffix(strings.TrimSpace(info.Major), "+")
	minor := strings.TrimSuffix(strings.TrimSpace(info.Minor), "+")
	if major == "" || minor == "" {
		return info.GitVersion
	}
	alt := "v" + major + "." + minor
	if v, err := ParseVersion(alt); err == nil && !v.IsZero() {
		return alt
	}
	return info.GitVersion
}

// Static returns a Server with fixed capabilities, for tests and for users who
// know their server. Capabilities without a Basis get BasisStatic and a
// "static" reason. Observe still works and outranks the given capabilities
// until DefaultObservationTTL passes; ForGroupVersion views of a Static server
// keep their observations per group/version over the same fixed base, as a
// Detector's do.
func Static(c Capabilities) Server {
	return newStatic(c, DetectorOptions{})
}

func newStatic(c Capabilities, o DetectorOptions) *hostState {
	c = c.Clone()
	c.ensureMaps()
	c.GroupVersion = schema.GroupVersion{} // a Static server is a host-wide scope
	for k := range c.Support {
		if _, ok := c.Basis[k]; !ok {
			c.Basis[k] = BasisStatic
		}
		if c.Reasons[k] == "" {
			c.Reasons[k] = "static"
		}
	}
	s := newHostState("static", o.withDefaults())
	s.static = &c
	return s
}

// hostState is one apiserver's cache: its host-wide scope, which implements
// Server, and its group/version scopes (see ForGroupVersion).
type hostState struct {
	host string // as given; scoped.host is it redacted, for display
	opts DetectorOptions

	mu        sync.Mutex
	versionFn func(ctx context.Context) (string, error)
	static    *Capabilities // non-nil for Static servers

	fetched   bool      // a fetch has completed at least once (successfully or not)
	nextFetch time.Time // no fetch before this time
	known     bool      // version holds a successfully fetched and parsed version
	version   Version
	why       string        // why the version is unknown or stale; "" when fresh
	inflight  chan struct{} // closed when the running fetch ends

	obs      obsSet                 // host-wide observations
	reported map[Capability]Support // host-wide beliefs last returned, to detect changes

	scoped *scopeSet // the group/version scopes
}

var _ ScopedServer = (*hostState)(nil)

func newHostState(host string, o DetectorOptions) *hostState {
	s := &hostState{host: host, opts: o, obs: obsSet{}, reported: map[Capability]Support{}}
	s.scoped = newScopeSet(s, o, redactHost(host))
	return s
}

// ForGroupVersion implements ScopedServer: the view of this host for gv (the
// host-wide server itself for the zero GroupVersion).
func (s *hostState) ForGroupVersion(gv schema.GroupVersion) Server {
	if gv.Empty() {
		return s
	}
	return &view{set: s.scoped, gv: gv}
}

// Observe implements Server for the host-wide scope. A later observation
// replaces an earlier one for the same capability at once; Support Unknown
// forgets it.
func (s *hostState) Observe(o Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obs.record(o, s.opts.Clock.Now())
}

// Capabilities implements Server for the host-wide scope: the version-derived
// (or Static) beliefs overlaid with the host-wide observations. It never
// fails; see DetectorOptions for when it contacts the server.
func (s *hostState) Capabilities(ctx context.Context) Capabilities {
	base := s.base(ctx)

	s.mu.Lock()
	c := s.obs.overlay(base, s.opts.Clock.Now(), s.opts.ObservationTTL, "")
	var changes []change
	for k, sup := range c.Support {
		if prev := s.reported[k]; prev != sup {
			changes = append(changes, change{k, prev, sup})
			s.reported[k] = sup
		}
	}
	for k, prev := range s.reported {
		if _, ok := c.Support[k]; !ok && prev != Unknown {
			changes = append(changes, change{k, prev, Unknown})
			s.reported[k] = Unknown
		}
	}
	s.mu.Unlock()

	report(ctx, s.opts.Metrics, s.scoped.host, schema.GroupVersion{}, changes, c.Reasons)
	return c // base's private copy: nothing else holds its maps
}

// base returns the capabilities from the version (or the static ones),
// fetching /version when the cache has expired. The result is a private copy.
func (s *hostState) base(ctx context.Context) Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.static != nil {
			return s.static.Clone()
		}
		now := s.opts.Clock.Now()
		if s.versionFn == nil || (s.fetched && now.Before(s.nextFetch)) {
			return s.fromCacheLocked()
		}
		if ch := s.inflight; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				s.mu.Lock()
				continue
			case <-ctx.Done():
				s.mu.Lock()
				return s.fromCacheLocked()
			}
		}
		ch := make(chan struct{})
		s.inflight = ch
		fn := s.versionFn
		s.mu.Unlock()
		raw, callerGone, err := fetch(ctx, fn, s.opts.VersionTimeout)
		s.mu.Lock()
		s.inflight = nil
		close(ch)
		if !callerGone {
			s.recordLocked(raw, err)
		} // else the caller gave up: that says nothing about the server, keep the cache as it was.
		return s.fromCacheLocked()
	}
}

// fetch calls fn with a bounded context. callerGone is true when the failure is
// due to the caller's own context ending, which says nothing about the server.
func fetch(ctx context.Context, fn func(context.Context) (string, error), timeout time.Duration) (raw string, callerGone bool, err error) {
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err = fn(fctx)
	if err != nil && ctx.Err() != nil {
		return "", true, err
	}
	return raw, false, err
}

func (s *hostState) recordLocked(raw string, err error) {
	now := s.opts.Clock.Now()
	s.fetched = true
	if err != nil {
		s.nextFetch = now.Add(s.opts.VersionErrorTTL)
		if s.known {
			s.why = fmt.Sprintf("kept after GET /version failed: %v", err)
		} else {
			s.why = fmt.Sprintf("GET /version failed: %v", err)
		}
		return
	}
	s.nextFetch = now.Add(s.opts.VersionTTL)
	v, perr := ParseVersion(raw)
	switch {
	case perr != nil:
		s.known, s.version = false, Version{}
		s.why = perr.Error()
	case v.IsZero():
		s.known, s.version = false, Version{}
		s.why = fmt.Sprintf("server version %q carries no release number (unstamped build)", raw)
	default:
		s.known, s.version, s.why = true, v, ""
	}
}

func (s *hostState) fromCacheLocked() Capabilities {
	if !s.known {
		c := FromVersion(Version{})
		why := s.why
		switch {
		case s.versionFn == nil:
			why = "no version source"
		case !s.fetched:
			why = "server version not fetched yet"
		}
		for k := range c.Reasons {
			c.Reasons[k] = why
		}
		return c
	}
	c := FromVersion(s.version)
	if s.why != "" {
		for k, r := range c.Reasons {
			c.Reasons[k] = r + " (" + s.why + ")"
		}
	}
	return c
}

// redactHost removes user information from a URL-shaped host so that it can be
// logged and used as a metrics label.
func redactHost(host string) string {
	if !strings.Contains(host, "@") {
		return host
	}
	u, err := url.Parse(host)
	if err != nil || u.User == nil {
		return "<unparsable host>"
	}
	u.User = nil
	return u.String()
}
