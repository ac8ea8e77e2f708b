// Package prometheus adapts steadywatch's metrics.Recorder to Prometheus
// (github.com/prometheus/client_golang): one collector per Recorder method,
// registered on a Registerer the caller owns.
//
// It is for exporting what steadywatch's listers and reflectors did ("why did
// my informer relist?"). It is not a general Kubernetes client metrics
// adapter (client-go's own rest/workqueue metrics are separate) and it
// registers nothing on the global default registry unless you pass it.
//
// Metric names, with the default namespace "steadywatch" (all labelled by
// "name", the reflector or lister name):
//
//	steadywatch_lists_total{name,semantic,outcome}            counter: list calls (all pages) by semantic and outcome
//	steadywatch_fallbacks_total{name,reason}                  counter: KEP-2523 fallbacks taken, by reason code
//	steadywatch_relists_total{name,cause}                     counter: reflector relists, by cause
//	steadywatch_watch_restarts_total{name,reason}             counter: watch restarts, by reason
//	steadywatch_bookmarks_total{name}                         counter: BOOKMARK events received
//	steadywatch_items{name}                                   gauge:   objects the reflector's store reflects
//	steadywatch_resource_version_last_advance_timestamp_seconds{name}  gauge: Unix time of the last resourceVersion advance
//	steadywatch_consistency_checks_total{name,result}         counter: consistency checks by result (ok, mismatch, error)
//	steadywatch_transitions_total{name,from,to,reason}        counter: reflector state machine transitions
//	steadywatch_store_resource_version{name}                  gauge:   the resourceVersion a store reflects (KEP-5647's store_resource_version)
//	steadywatch_read_wait_seconds{name,outcome}               histogram: reads that waited for the cache to hold the reader's own write, by how they ended (cache, server)
//	steadywatch_read_fallbacks_total{name,reason}             counter: reads answered by the server instead of the cache, by reason (bound, incomparable)
//
// The staleness of a reflector is time() minus the timestamp, computed where
// it is queried (Prometheus' convention: export when something happened, not
// how long ago), e.g. an alert on
//
//	time() - steadywatch_resource_version_last_advance_timestamp_seconds > 600
//
// Label cardinality is bounded: semantic, outcome, reason, cause, result and
// states are small fixed sets chosen by steadywatch; name is chosen by the user.
package prometheus

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/steadywatch/steadywatch/metrics"
)

// defaultNamespace is the metric namespace used when New is given "".
const defaultNamespace = "steadywatch"

// recorder implements metrics.Recorder with Prometheus collectors. It is safe
// for concurrent use.
type recorder struct {
	lists             *prometheus.CounterVec
	fallbacks         *prometheus.CounterVec
	relists           *prometheus.CounterVec
	watchRestarts     *prometheus.CounterVec
	bookmarks         *prometheus.CounterVec
	items             *prometheus.GaugeVec
	lastAdvance       *timestampCollector
	consistencyChecks *prometheus.CounterVec
	transitions       *prometheus.CounterVec
	gateWaits         *prometheus.CounterVec
	gateWaitSeconds   *prometheus.CounterVec
	gateShared        *prometheus.CounterVec
	gateOverdue       *prometheus.CounterVec
	storeRV           *prometheus.GaugeVec
	readWait          *prometheus.HistogramVec
	readFallbacks     *prometheus.CounterVec
}

var _ metrics.Recorder = (*recorder)(nil)

// New returns a metrics.Recorder that exports what it records to
// Prometheus, with its collectors registered on reg. Pass it as the Metrics
// option of every lister, reflector and client. A collector that is
// already registered with an identical description (for example a second
// Recorder on the same registry and namespace) is reused, so two Recorders
// on one registry share counters. namespace "" means "steadywatch". A nil
// reg registers nothing.
//
// New panics if registration fails for another reason (a conflicting metric
// of the same name), like prometheus.MustRegister.
func New(reg prometheus.Registerer, namespace string) metrics.Recorder {
	r, err := newRecorder(reg, namespace)
	if err != nil {
		panic(err)
	}
	return r
}

// newRecorder is New returning the registration error instead of panicking.
func newRecorder(reg prometheus.Registerer, namespace string) (*recorder, error) {
	if namespace == "" {
		namespace = defaultNamespace
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	r := &recorder{
		lists:         counter("lists_total", "List calls (all pages of one list), by requested resourceVersion semantic and outcome.", "name", "semantic", "outcome"),
		fallbacks:     counter("fallbacks_total", "KEP-2523 fallbacks taken, by reason code.", "name", "reason"),
		relists:       counter("relists_total", "Reflector relists, by cause.", "name", "cause"),
		watchRestarts: counter("watch_restarts_total", "Watch restarts, by reason.", "name", "reason"),
		bookmarks:     counter("bookmarks_total", "BOOKMARK watch events received.", "name"),
		items:         gauge("items", "Objects the reflector's store reflects.", "name"),
		lastAdvance: &timestampCollector{
			desc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "resource_version_last_advance_timestamp_seconds"),
				"Unix time at which the reflector's resourceVersion last advanced.", []string{"name"}, nil),
			at: map[string]time.Time{},
		},
		consistencyChecks: counter("consistency_checks_total", "Consistency checks of a reflector's store against an Exact list, by result (ok, mismatch, error).", "name", "result"),
		transitions:       counter("transitions_total", "Reflector state machine transitions.", "name", "from", "to", "reason"),
		gateWaits:         counter("list_gate_waits_total", "Collection reads that waited for a listgate.Gate slot.", "name"),
		gateWaitSeconds:   counter("list_gate_wait_seconds_total", "Seconds collection reads waited for a listgate.Gate slot.", "name"),
		gateShared:        counter("list_gate_shared_total", "Lists answered by another reader's identical request through a listgate.Gate.", "name"),
		gateOverdue:       counter("list_gate_overdue_total", "Collection reads that held a listgate.Gate slot longer than its hold bound (stuck or slow) and stopped counting against its slots.", "name"),
		storeRV:           gauge("store_resource_version", "The resourceVersion a store reflects (as a number; versions longer than 15 digits keep their last 15, as client-go's store_resource_version).", "name"),
		readWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "read_wait_seconds",
			Help:    "Seconds a read waited for the cache to hold the reader's own write, by outcome (cache: it caught up; server: read from the server).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"name", "outcome"}),
		readFallbacks: counter("read_fallbacks_total", "Reads answered by the server instead of the cache, by reason (bound, incomparable).", "name", "reason"),
	}
	if reg == nil {
		return r, nil
	}
	var errs []error
	for _, c := range r.collectors() {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				errs = append(errs, err)
				continue
			}
			r.adopt(c, are.ExistingCollector)
		}
	}
	return r, errors.Join(errs...)
}

// collectors returns the recorder's collectors, one per Recorder method
// (ListGateWait has two: the waits and the seconds waited).
func (r *recorder) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.lists, r.fallbacks, r.relists, r.watchRestarts, r.bookmarks,
		r.items, r.lastAdvance, r.consistencyChecks, r.transitions, r.gateWaits, r.gateWaitSeconds, r.gateShared, r.gateOverdue,
		r.storeRV, r.readWait, r.readFallbacks}
}

// adopt replaces a freshly created collector by the one already registered.
func (r *recorder) adopt(mine, existing prometheus.Collector) {
	for _, p := range []**prometheus.CounterVec{&r.lists, &r.fallbacks, &r.relists, &r.watchRestarts, &r.bookmarks, &r.consistencyChecks, &r.transitions, &r.gateWaits, &r.gateWaitSeconds, &r.gateShared, &r.gateOverdue, &r.readFallbacks} {
		if prometheus.Collector(*p) == mine {
			if e, ok := existing.(*prometheus.CounterVec); ok {
				*p = e
			}
			return
		}
	}
	if mine == prometheus.Collector(r.readWait) {
		if e, ok := existing.(*prometheus.HistogramVec); ok {
			r.readWait = e
		}
		return
	}
	for _, p := range []**prometheus.GaugeVec{&r.items, &r.storeRV} {
		if prometheus.Collector(*p) != mine {
			continue
		}
		if e, ok := existing.(*prometheus.GaugeVec); ok {
			*p = e
		}
		return
	}
	if mine == prometheus.Collector(r.lastAdvance) {
		if e, ok := existing.(*timestampCollector); ok {
			r.lastAdvance = e
		}
	}
}

// List implements metrics.Recorder.
func (r *recorder) List(name, semantic, outcome string) {
	r.lists.WithLabelValues(name, semantic, outcome).Inc()
}

// ListGateWait implements metrics.Recorder.
func (r *recorder) ListGateWait(name string, waited time.Duration) {
	r.gateWaits.WithLabelValues(name).Inc()
	r.gateWaitSeconds.WithLabelValues(name).Add(waited.Seconds())
}

// ListGateShared implements metrics.Recorder.
func (r *recorder) ListGateShared(name string) { r.gateShared.WithLabelValues(name).Inc() }

// ListGateOverdue implements metrics.Recorder.
func (r *recorder) ListGateOverdue(name string) { r.gateOverdue.WithLabelValues(name).Inc() }

// StoreResourceVersion implements metrics.Recorder. A version that is
// not a number is not recorded.
func (r *recorder) StoreResourceVersion(name, resourceVersion string) {
	if len(resourceVersion) > 15 {
		resourceVersion = resourceVersion[len(resourceVersion)-15:]
	}
	if n, err := strconv.ParseInt(resourceVersion, 10, 64); err == nil {
		r.storeRV.WithLabelValues(name).Set(float64(n))
	}
}

// ReadWait implements metrics.Recorder.
func (r *recorder) ReadWait(name string, waited time.Duration, outcome string) {
	r.readWait.WithLabelValues(name, outcome).Observe(waited.Seconds())
}

// ReadFallback implements metrics.Recorder.
func (r *recorder) ReadFallback(name, reason string) {
	r.readFallbacks.WithLabelValues(name, reason).Inc()
}

// Fallback implements metrics.Recorder.
func (r *recorder) Fallback(name, reason string) { r.fallbacks.WithLabelValues(name, reason).Inc() }

// Relist implements metrics.Recorder.
func (r *recorder) Relist(name, cause string) { r.relists.WithLabelValues(name, cause).Inc() }

// WatchRestart implements metrics.Recorder.
func (r *recorder) WatchRestart(name, reason string) {
	r.watchRestarts.WithLabelValues(name, reason).Inc()
}

// Bookmark implements metrics.Recorder.
func (r *recorder) Bookmark(name string) { r.bookmarks.WithLabelValues(name).Inc() }

// Items implements metrics.Recorder.
func (r *recorder) Items(name string, n int) { r.items.WithLabelValues(name).Set(float64(n)) }

// ResourceVersionAdvanced implements metrics.Recorder.
func (r *recorder) ResourceVersionAdvanced(name string, at time.Time) {
	r.lastAdvance.set(name, at)
}

// ConsistencyCheck implements metrics.Recorder.
func (r *recorder) ConsistencyCheck(name, result string) {
	r.consistencyChecks.WithLabelValues(name, result).Inc()
}

// Transition implements metrics.Recorder.
func (r *recorder) Transition(name, from, to, reason string) {
	r.transitions.WithLabelValues(name, from, to, reason).Inc()
}

// timestampCollector exports, per name, the Unix time of the newest time it
// was given: a report older than one already seen (two goroutines reporting
// out of order) does not move it back.
type timestampCollector struct {
	desc *prometheus.Desc

	mu sync.Mutex
	at map[string]time.Time
}

func (c *timestampCollector) set(name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.at[name]; !ok || at.After(prev) {
		c.at[name] = at
	}
}

func (c *timestampCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *timestampCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, at := range c.at {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(at.UnixNano())/1e9, name)
	}
}
