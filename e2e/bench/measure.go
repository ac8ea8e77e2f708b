package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// netCounter counts what one client process exchanges with the apiserver:
// bytes read from its TCP connections (the wire: TLS records, gzip where
// the server compressed), response body bytes after decompression (what the
// decoder reads), and one record per request. It never records headers, so
// the bearer token cannot leak into the results.
type netCounter struct {
	wireIn   atomic.Int64
	wireOut  atomic.Int64
	bodyIn   atomic.Int64
	mu       sync.Mutex
	requests []requestRecord
	epoch    time.Time
}

type requestRecord struct {
	AtMs     float64 `json:"at_ms"` // since the counter's epoch
	Method   string  `json:"method"`
	Path     string  `json:"path"`
	Query    string  `json:"query"`
	Status   int     `json:"status"`
	Encoding string  `json:"encoding,omitempty"` // Content-Encoding as received ("" when the transport decompressed)
	Type     string  `json:"type,omitempty"`     // Content-Type
	Body     int64   `json:"body_bytes"`         // decoded body bytes read by the client
}

func newNetCounter() *netCounter { return &netCounter{epoch: time.Now()} }

// instrument returns a copy of cfg whose connections and responses are counted.
func (n *netCounter) instrument(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: n}, nil
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingRT{rt: rt, n: n} })
	return cfg
}

// reset zeroes the counters and the request log and restarts the epoch.
func (n *netCounter) reset() {
	n.wireIn.Store(0)
	n.wireOut.Store(0)
	n.bodyIn.Store(0)
	n.mu.Lock()
	n.requests = nil
	n.epoch = time.Now()
	n.mu.Unlock()
}

// wireStats is what a netCounter counted, as the results carry it.
type wireStats struct {
	WireIn     int64           `json:"wire_in_bytes"`
	WireOut    int64           `json:"wire_out_bytes"`
	BodyIn     int64           `json:"body_in_bytes"`
	Requests   map[string]int  `json:"requests"`
	RequestLog []requestRecord `json:"request_log,omitempty"`
}

// stats returns the counts and the request log so far, the requests
// classified (classifyRequests).
func (n *netCounter) stats() wireStats {
	wi, wo, bi, reqs := n.snapshot()
	return wireStats{WireIn: wi, WireOut: wo, BodyIn: bi, Requests: classifyRequests(reqs), RequestLog: reqs}
}

func (n *netCounter) snapshot() (wireIn, wireOut, bodyIn int64, reqs []requestRecord) {
	n.mu.Lock()
	reqs = append([]requestRecord(nil), n.requests...)
	n.mu.Unlock()
	return n.wireIn.Load(), n.wireOut.Load(), n.bodyIn.Load(), reqs
}

type countingConn struct {
	net.Conn
	n *netCounter
}

func (c *countingConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.n.wireIn.Add(int64(k))
	return k, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	k, err := c.Conn.Write(p)
	c.n.wireOut.Add(int64(k))
	return k, err
}

type countingRT struct {
	rt http.RoundTripper
	n  *netCounter
}

func (t *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.mu.Lock()
	at := time.Since(t.n.epoch)
	t.n.mu.Unlock()
	resp, err := t.rt.RoundTrip(req)
	rec := &requestRecord{AtMs: float64(at.Microseconds()) / 1000, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery}
	if err == nil {
		rec.Status = resp.StatusCode
		rec.Encoding = resp.Header.Get("Content-Encoding")
		rec.Type = resp.Header.Get("Content-Type")
		resp.Body = &countingBody{ReadCloser: resp.Body, n: t.n, rec: rec}
	}
	t.n.mu.Lock()
	t.n.requests = append(t.n.requests, *rec)
	idx := len(t.n.requests) - 1
	t.n.mu.Unlock()
	if err == nil {
		resp.Body.(*countingBody).idx = idx
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n   *netCounter
	rec *requestRecord
	idx int
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.bodyIn.Add(int64(k))
	b.n.mu.Lock()
	if b.idx < len(b.n.requests) {
		b.n.requests[b.idx].Body += int64(k)
	}
	b.n.mu.Unlock()
	return k, err
}

// heapSampler records the peak of live+unswept heap objects
// (runtime/metrics /memory/classes/heap/objects:bytes) sampled every
// interval, and the number of GC cycles.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

const heapObjects = "/memory/classes/heap/objects:bytes"

func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapSampler(interval time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.peak.Store(heapNow())
	go func() {
		defer close(h.done)
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > h.peak.Load() {
					h.peak.Store(v)
				}
			}
		}
	}()
	return h
}

// finish stops sampling (taking one last sample) and returns the peak.
func (h *heapSampler) finish() uint64 {
	close(h.stop)
	<-h.done
	if v := heapNow(); v > h.peak.Load() {
		h.peak.Store(v)
	}
	return h.peak.Load()
}

// retainedHeap is the heap still in use after a full GC: what the caller
// keeps (the informer's store), without garbage.
func retainedHeap() uint64 {
	runtime.GC()
	return heapNow()
}

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
