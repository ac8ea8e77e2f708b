package capability

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/steadywatch/steadywatch/metrics"
)

// ScopedServer is a Server that keeps behaviour observations per API
// group/version itself. Detector and Static servers, and every view
// ForGroupVersion returns, implement it; ForGroupVersion uses the method
// instead of wrapping the server. A foreign Server may implement it to keep
// its own per-group/version evidence.
type ScopedServer interface {
	Server
	// ForGroupVersion returns the view of the server for gv, as the package
	// function ForGroupVersion documents; the zero GroupVersion returns the
	// host-wide server.
	ForGroupVersion(gv schema.GroupVersion) Server
}

// ForGroupVersion returns the view of s for one API group/version: gv's own
// resources, as served by that host. Core is schema.GroupVersion{Version:
// "v1"}; "apps/v1", each aggregated API and each CRD group/version are scopes
// of their own, because different servers (or different code paths) may serve
// them: one aggregated apiserver that ignores sendInitialEvents must not make
// every other resource of the host list instead of stream.
//
// The view's Observe records for gv only. Its Capabilities are, per
// capability, the first of:
//  1. gv's own live observation (recorded through this view or any other view
//     of the same host and gv);
//  2. the host-wide live observation (recorded through the unscoped Server,
//     for callers not yet scoped, or for evidence about the whole host);
//  3. the host's version-derived (or Static) belief, which stays per host:
//     /version is fetched once per host whatever the number of views.
//
// Observations of other group/versions never apply; the unscoped Server does
// not see any group/version's observations. Capabilities.GroupVersion tells
// which scope answered. Every view is cheap (two words): call
// ForGroupVersion per request or once per lister, as convenient.
//
// For a Server from a Detector or Static, views of the same host and gv share
// their observations. ForGroupVersion of a view re-scopes it (a view of the
// same host for the new gv). The zero GroupVersion returns the host-wide
// Server. A foreign Server that is not a ScopedServer is wrapped: the wrapper
// asks s for the host-wide beliefs and keeps per-group/version observations
// itself, with DefaultObservationTTL and the real clock, shared by the views
// derived from it (ForGroupVersion of the wrapper); two calls of
// ForGroupVersion on the same foreign s do not share them. Observe on such a
// view is not forwarded to s, and its belief changes are logged, not counted
// (there is no Recorder to count them with). A nil s gives nil.
func ForGroupVersion(s Server, gv schema.GroupVersion) Server {
	if ss, ok := s.(ScopedServer); ok {
		return ss.ForGroupVersion(gv)
	}
	if gv.Empty() || s == nil {
		return s
	}
	return &view{set: newScopeSet(s, DetectorOptions{}.withDefaults(), ""), gv: gv}
}

// scopeState is one group/version's observations and the deviations from the
// host-wide beliefs last reported for it.
type scopeState struct {
	obs  obsSet
	dev  map[Capability]Support // capabilities whose belief differed from the host-wide one when last asked
	last map[Capability]Support // the scope's beliefs when last asked (the "from" of a change)
}

// scopeSet holds the group/version scopes of one host. root answers the
// host-wide beliefs (and reports their changes itself).
type scopeSet struct {
	root    Server
	ttl     time.Duration
	clock   clock.PassiveClock
	metrics metrics.Recorder
	host    string // redacted, for logs; "" when not known (a foreign Server)

	mu     sync.Mutex
	scopes map[schema.GroupVersion]*scopeState
}

func newScopeSet(root Server, o DetectorOptions, host string) *scopeSet {
	return &scopeSet{root: root, ttl: o.ObservationTTL, clock: o.Clock, metrics: o.Metrics, host: host,
		scopes: map[schema.GroupVersion]*scopeState{}}
}

// view is one group/version of one host; it implements ScopedServer.
type view struct {
	set *scopeSet
	gv  schema.GroupVersion
}

var _ ScopedServer = (*view)(nil)

// ForGroupVersion implements ScopedServer: a view of the same host for gv.
func (v *view) ForGroupVersion(gv schema.GroupVersion) Server {
	if gv.Empty() {
		return v.set.root
	}
	return &view{set: v.set, gv: gv}
}

// Observe implements Server for the view's group/version only.
func (v *view) Observe(o Observation) {
	v.set.mu.Lock()
	defer v.set.mu.Unlock()
	st := v.set.scopes[v.gv]
	if st == nil {
		if o.Support == Unknown {
			return
		}
		st = &scopeState{obs: obsSet{}, dev: map[Capability]Support{}}
		v.set.scopes[v.gv] = st
	}
	st.obs.record(o, v.set.clock.Now())
}

// Capabilities implements Server: the host-wide beliefs overlaid with the
// view's own live observations.
func (v *view) Capabilities(ctx context.Context) Capabilities {
	host := v.set.root.Capabilities(ctx).Clone()
	host.ensureMaps()
	host.GroupVersion = schema.GroupVersion{}

	v.set.mu.Lock()
	c := host.Clone()
	c.GroupVersion = v.gv
	var changes []change
	if st := v.set.scopes[v.gv]; st != nil {
		c = st.obs.overlay(c, v.set.clock.Now(), v.set.ttl, v.gv.String())
		changes = st.deviations(host, c)
		if len(st.obs) == 0 && len(st.dev) == 0 {
			delete(v.set.scopes, v.gv) // nothing left to remember: keep the map bounded
		}
	}
	v.set.mu.Unlock()

	report(ctx, v.set.metrics, v.set.host, v.gv, changes, c.Reasons)
	return c
}

// deviations returns the changes of the scope's own beliefs (c) that its
// observations make: a belief that changed and now differs, or differed, from
// the host-wide one (host). Changes of the host-wide beliefs themselves (an
// upgrade, a host-wide observation) are reported by the host-wide scope, once
// per host, and not again by every view.
func (st *scopeState) deviations(host, c Capabilities) []change {
	cur := map[Capability]Support{}
	for k, sup := range c.Support {
		if host.Support[k] != sup {
			cur[k] = sup
		}
	}
	from := func(k Capability) Support {
		if sup, ok := st.last[k]; ok {
			return sup
		}
		return host.Support[k]
	}
	var changes []change
	add := func(k Capability, to Support) {
		if f := from(k); f != to {
			changes = append(changes, change{k, f, to})
		}
	}
	for k, sup := range cur {
		if old, ok := st.dev[k]; !ok || old != sup {
			add(k, sup)
		}
	}
	for k := range st.dev {
		if _, ok := cur[k]; !ok {
			add(k, c.Support[k])
		}
	}
	st.dev = cur
	st.last = maps.Clone(c.Support)
	return changes
}

type observed struct {
	support Support
	detail  string
	at      time.Time
}

// obsSet is one scope's observations, by capability.
type obsSet map[Capability]observed

// record keeps o, replacing any earlier observation of the same capability;
// Support Unknown forgets it.
func (m obsSet) record(o Observation, now time.Time) {
	if o.Support == Unknown {
		delete(m, o.Capability)
		return
	}
	m[o.Capability] = observed{support: o.Support, detail: o.Detail, at: now}
}

// overlay returns c (a private copy with non-nil maps, modified in place)
// with the live observations of m applied, deleting the expired ones from m.
// scope names the group/version in reasons; "" for the host-wide scope.
func (m obsSet) overlay(c Capabilities, now time.Time, ttl time.Duration, scope string) Capabilities {
	for k, o := range m {
		if now.Sub(o.at) >= ttl {
			delete(m, k)
			continue
		}
		was := c.Support[k]
		c.Support[k] = o.support
		c.Basis[k] = BasisObserved
		reason := "observed"
		if scope != "" {
			reason += " for " + scope
		}
		detail := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(o.detail, "observed"), ":"))
		if detail != "" {
			reason += ": " + detail
		}
		if was != o.support {
			from := c.Reasons[k]
			if from == "" {
				from = "nothing"
			}
			reason += fmt.Sprintf(" (overrides %s from %s)", was, from)
		}
		c.Reasons[k] = reason
	}
	if sup, ok := c.Support[TooLargeRVMessage]; ok {
		c.TooLargeRVByMessage = sup != No
	}
	return c
}

// change is one belief change to log and count.
type change struct {
	k        Capability
	from, to Support
}

// report logs (V(2)) and counts the changes of one scope; gv is zero for the
// host-wide scope. host is the redacted host ("" when unknown).
func report(ctx context.Context, rec metrics.Recorder, host string, gv schema.GroupVersion, changes []change, reasons map[Capability]string) {
	if len(changes) == 0 {
		return
	}
	log := klog.FromContext(ctx).V(2)
	name := MetricsNameFor(gv)
	for _, ch := range changes {
		if log.Enabled() {
			kv := []any{"capability", string(ch.k), "from", ch.from.String(), "to", ch.to.String(), "reason", reasons[ch.k]}
			if host != "" {
				kv = append(kv, "host", host)
			}
			if !gv.Empty() {
				kv = append(kv, "groupVersion", gv.String())
			}
			log.Info("apiserver capability belief changed", kv...)
		}
		rec.Fallback(name, string(reasonFor(ch.k, ch.to)))
	}
}

// ensureMaps makes the maps of c non-nil (a foreign Server may leave them nil).
func (c *Capabilities) ensureMaps() {
	if c.Support == nil {
		c.Support = map[Capability]Support{}
	}
	if c.Reasons == nil {
		c.Reasons = map[Capability]string{}
	}
	if c.Basis == nil {
		c.Basis = map[Capability]Basis{}
	}
}
