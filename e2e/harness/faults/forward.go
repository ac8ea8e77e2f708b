package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Request is one request as the proxy saw it.
type Request struct {
	Seq         int       // 1, 2, ... in arrival order (per Proxy, not reset by ResetRequests)
	Time        time.Time // arrival
	Proto       string    // client protocol, "HTTP/2.0" or "HTTP/1.1"
	Method      string
	Verb        string // derived like the apiserver (see Rule.Verb)
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Path        string
	UserAgent   string // the client's User-Agent header
	RawQuery    string // as received
	// ForwardedQuery is the query sent to the backend (RawQuery minus
	// stripped parameters); "" when the request was not forwarded.
	ForwardedQuery string
	Backend        int   // backend that answered; -1 if none (fault, unreachable)
	Tried          []int // backends tried, in order (Failover tries several)
	Status         int   // status sent to the client; 0 until headers are sent, and if none were
	// ContentEncoding is the Content-Encoding of the answer sent to the
	// client ("" for none): "gzip" where the backend compressed it (lists
	// over 128 KiB; on v1.37+ streaming lists, WatchListCompression) for a
	// client that accepts gzip.
	ContentEncoding string
	// Fault describes what the proxy did to this request, "" if nothing:
	// "rule 3: 410 Expired", "... as watch ERROR event", "stalled",
	// "dropped", "unreachable", joined by "; ".
	Fault    string
	Err      string        // upstream or stream error, if any
	Done     bool          // the exchange (for watches: the stream) has ended
	Duration time.Duration // arrival to end; 0 until Done
	// With stream faults set (StreamFaults): Events is how many watch
	// events were forwarded to the client, and InitialEventsEnd when the
	// backend's initial-events-end bookmark reached the proxy (forwarded,
	// stripped, dropped or cut at), i.e. right after the last initial event
	// was forwarded; zero if none did.
	Events           int
	InitialEventsEnd time.Time
}

// Requests returns a copy of the request log, oldest first (at most
// Options.MaxLoggedRequests entries). In-flight watches are included with
// Done=false.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Request, len(p.reqs))
	for i, r := range p.reqs {
		out[i] = *r
		out[i].Tried = append([]int(nil), r.Tried...)
	}
	return out
}

// ResetRequests empties the request log. Requests still in flight keep
// updating their (now unlisted) entries.
func (p *Proxy) ResetRequests() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = nil
}

func (p *Proxy) record(r *http.Request, info requestInfo) *Request {
	rec := &Request{
		Time: time.Now(), Proto: r.Proto, Method: r.Method,
		Verb: info.Verb, Resource: info.Resource, Subresource: info.Subresource,
		Namespace: info.Namespace, Name: info.Name,
		Path: r.URL.Path, UserAgent: r.UserAgent(), RawQuery: r.URL.RawQuery, Backend: -1,
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rec.Seq = p.nextSeq
	p.nextSeq++
	if len(p.reqs) >= p.o.MaxLoggedRequests {
		drop := min(len(p.reqs), p.o.MaxLoggedRequests/10+1)
		p.reqs = append(p.reqs[:0:0], p.reqs[drop:]...)
	}
	p.reqs = append(p.reqs, rec)
	return rec
}

// update mutates rec under the lock (it is shared with Requests).
func (p *Proxy) update(rec *Request, f func(*Request)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(rec)
}

func addFault(rec *Request, fault string) {
	if rec.Fault == "" {
		rec.Fault = fault
	} else {
		rec.Fault += "; " + fault
	}
}

// stream is one in-flight forwarded watch.
type stream struct {
	id     int
	rec    *Request
	cancel context.CancelFunc // aborts the upstream request
	ending endMode            // guarded by Proxy.mu
}

type endMode int

const (
	notEnding endMode = iota
	endAbrupt         // DropWatches: reset the client's stream
	endClean          // EndWatches: end the client's stream normally
)

// Watches returns how many forwarded watch streams are in flight.
func (p *Proxy) Watches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.streams)
}

// DropWatches aborts every in-flight forwarded watch stream now: the
// upstream request is cancelled and the client's stream is reset (HTTP/2
// RST_STREAM; on HTTP/1.1 the connection is closed), so the client sees it
// end abruptly, not with a clean end of stream. (client-go's StreamWatcher
// then delivers one watch.Error event, "unable to decode an event from the
// watch stream: stream error: ... INTERNAL_ERROR", and closes the result
// channel.) It returns how many streams were dropped. Watches answered by a
// rule are not in flight and not counted.
func (p *Proxy) DropWatches() int { return p.endWatches(endAbrupt, "dropped") }

// EndWatches ends every in-flight forwarded watch stream cleanly now, as the
// apiserver does when a watch's timeoutSeconds expire: the client reads a
// normal end of stream (client-go closes the result channel without an
// error event). It returns how many streams were ended.
func (p *Proxy) EndWatches() int { return p.endWatches(endClean, "ended") }

func (p *Proxy) endWatches(mode endMode, fault string) int {
	p.mu.Lock()
	var hit []*stream
	for _, st := range p.streams {
		if st.ending == notEnding {
			st.ending = mode
			addFault(st.rec, fault)
			hit = append(hit, st)
		}
	}
	p.mu.Unlock()
	for _, st := range hit {
		st.cancel()
		p.logf("req %d: watch %s", st.rec.Seq, fault)
	}
	return len(hit)
}

// StallWatches makes in-flight and new forwarded watch streams forward no
// bytes to their clients for d from now (for a new watch not even the
// response headers), then resume with whatever arrived meanwhile, in order.
// Connections stay open and backends keep streaming (subject to flow
// control). A later call replaces the deadline; d <= 0 resumes at once.
func (p *Proxy) StallWatches(d time.Duration) {
	p.mu.Lock()
	if d <= 0 {
		p.stallUntil = time.Time{}
	} else {
		p.stallUntil = time.Now().Add(d)
	}
	close(p.stallCh)
	p.stallCh = make(chan struct{})
	n := len(p.streams)
	p.mu.Unlock()
	if d > 0 {
		p.logf("stalling watches for %s (%d in flight)", d, n)
	} else {
		p.logf("watch stall lifted")
	}
}

// waitStall blocks while watches are stalled. It returns ctx's error if ctx
// ends first, or has ended when the stall is lifted: a stream dropped
// (DropWatches) just before the lift forwards none of what it held.
func (p *Proxy) waitStall(ctx context.Context, rec *Request) error {
	marked := false
	for {
		p.mu.Lock()
		until, changed := p.stallUntil, p.stallCh
		if !marked && time.Until(until) > 0 {
			if !strings.Contains(rec.Fault, "stalled") {
				addFault(rec, "stalled")
			}
			marked = true
		}
		p.mu.Unlock()
		d := time.Until(until)
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-changed:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

func (p *Proxy) track(rec *Request, cancel context.CancelFunc) *stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := &stream{id: p.nextStream, rec: rec, cancel: cancel}
	p.nextStream++
	p.streams[st.id] = st
	return st
}

func (p *Proxy) untrack(st *stream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.streams, st.id)
}

func (p *Proxy) ending(st *stream) endMode {
	if st == nil {
		return notEnding
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return st.ending
}

// enter registers a handler with Close; false once closing.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handlers.Add(1)
	return true
}

// hopHeaders are connection-specific and never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = append([]string(nil), vv...)
	}
	for _, f := range src["Connection"] {
		for _, k := range strings.Split(f, ",") {
			dst.Del(strings.TrimSpace(k))
		}
	}
	for _, k := range hopHeaders {
		dst.Del(k)
	}
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		panic(http.ErrAbortHandler)
	}
	defer p.handlers.Done()

	info := parseRequestInfo(r.Method, r.URL)
	rec := p.record(r, info)
	defer func() {
		p.mu.Lock()
		rec.Done = true
		rec.Duration = time.Since(rec.Time)
		line := fmt.Sprintf("req %d %s %s %s?%s verb=%s resource=%s backend=%d status=%d dur=%s",
			rec.Seq, rec.Proto, rec.Method, rec.Path, rec.RawQuery, rec.Verb, rec.Resource,
			rec.Backend, rec.Status, rec.Duration.Round(time.Microsecond))
		if rec.ForwardedQuery != rec.RawQuery && rec.Backend >= 0 {
			line += " forwarded-query=" + rec.ForwardedQuery
		}
		if rec.Fault != "" {
			line += " fault=[" + rec.Fault + "]"
		}
		if rec.Err != "" {
			line += " err=" + rec.Err
		}
		p.mu.Unlock()
		p.logf("%s", line)
	}()

	if r.Header.Get("Upgrade") != "" {
		st := unproxied(http.StatusNotImplemented, "faults: protocol upgrades are not proxied")
		p.writeStatus(w, negotiate(r.Header.Get("Accept")), st)
		p.update(rec, func(rec *Request) { rec.Status = http.StatusNotImplemented })
		return
	}
	if rv, ok := p.expiredWatch(info, r.URL.Query()); ok {
		fault := "expired initial-events-end RV " + rv + " as watch ERROR event"
		p.answer(w, r, info, 0, expiredRule(rv), func(status int, _ string) {
			p.update(rec, func(rec *Request) { rec.Status = status; addFault(rec, fault) })
		})
		p.logf("req %d: %s", rec.Seq, fault)
		return
	}
	if id, rule, ok := p.fire(info, r.URL.Query()); ok {
		var fault string
		p.answer(w, r, info, id, rule, func(status int, f string) {
			fault = f
			p.update(rec, func(rec *Request) { rec.Status = status; addFault(rec, fault) })
		})
		p.logf("req %d: fired %s", rec.Seq, fault)
		return
	}
	p.forward(w, r, rec, info)
}

func unproxied(code int, msg string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: defaultReason(code), Code: int32(code),
	}
}

// errCleanEnd unwinds forward to end a stream normally (EndWatches).
var errCleanEnd = errors.New("faults: clean end of stream")

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, rec *Request, info requestInfo) {
	defer func() {
		if v := recover(); v != nil && v != errCleanEnd {
			panic(v)
		}
	}()
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, p.o.MaxRequestBodyBytes+1))
		if err != nil {
			p.update(rec, func(rec *Request) { rec.Err = "reading request body: " + err.Error() })
			panic(http.ErrAbortHandler)
		}
		if int64(len(b)) > p.o.MaxRequestBodyBytes {
			st := unproxied(http.StatusRequestEntityTooLarge, fmt.Sprintf("faults: request body exceeds %d bytes", p.o.MaxRequestBodyBytes))
			p.writeStatus(w, negotiate(r.Header.Get("Accept")), st)
			p.update(rec, func(rec *Request) { rec.Status = http.StatusRequestEntityTooLarge })
			return
		}
		body = b
	}
	// ctx ends when the client goes away, on Close (base context), or when
	// DropWatches cancels this stream.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var st *stream
	var sf StreamFaults
	if info.Verb == "watch" {
		st = p.track(rec, cancel)
		defer p.untrack(st)
		sf = p.currentStreamFaults()
	}
	fq := p.forwardQuery(r.URL.RawQuery, sf.WatchTimeout)
	p.update(rec, func(rec *Request) { rec.ForwardedQuery = fq })
	lf := p.listFaultsFor(info, r)
	headersSent := false
	abort := func(err error) {
		if headersSent && p.ending(st) == endClean {
			// EndWatches: a normal end of stream. (A stream whose
			// response had not started yet is reset instead.)
			panic(errCleanEnd)
		}
		p.update(rec, func(rec *Request) {
			if rec.Err == "" && err != nil {
				rec.Err = err.Error()
			}
		})
		// Reset the client's stream so it sees an abrupt end.
		panic(http.ErrAbortHandler)
	}

	var resp *http.Response
	var lastErr error
	for _, i := range p.route() {
		if ctx.Err() != nil {
			break
		}
		out, err := p.outRequest(ctx, r, i, fq, body)
		if err != nil {
			abort(err)
		}
		if sf.active() || lf.active() {
			// Stream and list faults read the answer: ask for it uncompressed
			// (the apiserver gzips watch streams for clients that accept it).
			out.Header.Del("Accept-Encoding")
		}
		p.update(rec, func(rec *Request) { rec.Tried = append(rec.Tried, i) })
		resp, err = p.tr.RoundTrip(out)
		if err == nil {
			p.update(rec, func(rec *Request) { rec.Backend = i })
			break
		}
		lastErr = fmt.Errorf("backend %d: %w", i, err)
		if ctx.Err() == nil {
			p.logf("req %d: backend %d unreachable: %v", rec.Seq, i, err)
		}
	}
	if resp == nil {
		if ctx.Err() == nil {
			p.update(rec, func(rec *Request) { addFault(rec, "unreachable") })
			if p.o.UnreachableStatus != 0 {
				p.update(rec, func(rec *Request) { rec.Status = p.o.UnreachableStatus; rec.Err = lastErr.Error() })
				p.writeStatus(w, negotiate(r.Header.Get("Accept")), unproxied(p.o.UnreachableStatus, "faults: no backend reachable"))
				return
			}
		}
		abort(lastErr)
	}
	defer resp.Body.Close()

	if st != nil {
		if err := p.waitStall(ctx, rec); err != nil {
			abort(err)
		}
	}
	if lf.active() && p.rewriteList(w, r, resp, rec, lf) {
		return
	}
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	headersSent = true
	p.update(rec, func(rec *Request) {
		rec.Status, rec.ContentEncoding = resp.StatusCode, resp.Header.Get("Content-Encoding")
	})
	rc := http.NewResponseController(w)
	if st != nil {
		_ = rc.Flush()
		if sf.active() && resp.StatusCode == http.StatusOK {
			media := watchMedia(resp.Header.Get("Content-Type"))
			ce := resp.Header.Get("Content-Encoding")
			if media != "" && (ce == "" || ce == "identity") {
				p.forwardEvents(ctx, w, rc, resp.Body, rec, st, sf, media, abort)
				return
			}
			p.logf("req %d: stream faults skipped: watch Content-Type %q, Content-Encoding %q (want JSON or protobuf, uncompressed)", rec.Seq, resp.Header.Get("Content-Type"), ce)
		}
	}

	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if st != nil {
				if err := p.waitStall(ctx, rec); err != nil {
					abort(err)
				}
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				// The client is gone; nothing left to tell it.
				p.update(rec, func(rec *Request) { rec.Err = "writing to client: " + werr.Error() })
				return
			}
			_ = rc.Flush()
		}
		if p.bodyEnded(rerr, st, rec, abort) {
			return
		}
	}
}

// bodyEnded reports whether a read of a backend's answer ended it (io.EOF);
// on any other error it aborts the client's stream (abruptly, without the
// error, when the proxy ended the stream abruptly).
func (p *Proxy) bodyEnded(rerr error, st *stream, rec *Request, abort func(error)) bool {
	if rerr == io.EOF {
		return true
	}
	if rerr != nil {
		if p.ending(st) == endAbrupt {
			abort(nil)
		}
		abort(fmt.Errorf("reading from backend %d: %w", rec.Backend, rerr))
	}
	return false
}

// outRequest builds the request to backend i: same method, path and headers
// (Authorization, Accept, Content-Type, User-Agent ... unchanged, minus
// hop-by-hop headers), query fq, body replayable for failover.
func (p *Proxy) outRequest(ctx context.Context, r *http.Request, i int, fq string, body []byte) (*http.Request, error) {
	b := p.backends[i]
	u := *b
	u.Path = strings.TrimSuffix(b.Path, "/") + r.URL.Path
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(b.EscapedPath(), "/") + r.URL.RawPath
	} else {
		u.RawPath = ""
	}
	u.RawQuery = fq
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("faults: build request to backend %d: %w", i, err)
	}
	copyHeader(out.Header, r.Header)
	if _, ok := r.Header["User-Agent"]; !ok {
		out.Header["User-Agent"] = nil // do not let net/http add its own
	}
	out.ContentLength = int64(len(body))
	if body == nil {
		out.Body = http.NoBody
		out.ContentLength = 0
	}
	return out, nil
}
