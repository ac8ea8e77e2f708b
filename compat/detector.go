package compat

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/metrics"
)

// DetectorOptions configures a Detector. The zero value is the default.
type DetectorOptions struct {
	// VersionTTL is how long a fetched /version is trusted before it is
	// fetched again (servers get upgraded in place). Zero means 10 min. A
	// failed fetch is retried after 30 s; each fetch is bounded by 10 s.
	VersionTTL time.Duration
	// ObservationTTL is how long behaviour the SDK observed (for example a
	// streaming list refused with 422) outranks what the version says, a
	// "no" as much as a "yes": after it the next request verifies again.
	// Zero means 10 min.
	ObservationTTL time.Duration
	// Metrics counts belief changes as Fallback(name, reason): reason is one
	// of the "compat:..." fallback.ReasonCode values (docs/reasons.md), name is "compat" for a host's beliefs and
	// "compat/<group>/<version>" for one group/version's. Nil means none.
	Metrics metrics.Recorder
}

// Detector keeps what is known about each apiserver, keyed by host: its
// /version and the behaviour the SDK observed, per API group/version, each
// with an expiry. It is safe for concurrent use; share one per process.
type Detector struct {
	d *capability.Detector
}

// NewDetector returns a Detector; see DetectorOptions for the defaults.
func NewDetector(o DetectorOptions) *Detector {
	return &Detector{d: capability.NewDetector(capability.DetectorOptions{
		VersionTTL:     o.VersionTTL,
		ObservationTTL: o.ObservationTTL,
		Metrics:        o.Metrics,
	})}
}

// ForConfig returns the Server for cfg.Host, for lister.Options.Server and
// the other options that take one. It reads GET /version with cfg's
// transport and credentials the first time capabilities are needed, without
// client-go's hidden retries; a failed read gives conservative (unknown)
// capabilities, never an error. It fails only when no discovery client can
// be built from cfg.
func (d *Detector) ForConfig(cfg *rest.Config) (Server, error) {
	return d.d.ForConfig(cfg)
}

// Server is what the SDK knows about one apiserver: its version's
// capabilities and the behaviour observed since. Get one from
// Detector.ForConfig and pass it to the SDK's options; its methods are the
// SDK's own (their types are internal), so a Server is built only by this
// package.
type Server interface {
	// Capabilities returns the current beliefs about the server.
	Capabilities(ctx context.Context) capability.Capabilities
	// Observe records observed behaviour, which outranks the version until
	// it expires (DetectorOptions.ObservationTTL).
	Observe(o capability.Observation)
}
