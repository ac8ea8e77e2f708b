package faults

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// ErrInvalidOptions is matched (errors.Is) by every error New returns for
// unusable Options.
var ErrInvalidOptions = errors.New("faults: invalid options")

// ErrCloseTimeout is returned (wrapped) by Close when in-flight requests did
// not finish within Options.CloseTimeout after all connections were closed.
var ErrCloseTimeout = errors.New("faults: in-flight requests did not finish")

// Options configures a Proxy. Backends and ServingCert are required; every
// other field's zero value is a safe default.
type Options struct {
	// Backends are the apiservers behind the proxy, as https://host:port
	// (a path prefix is kept). One backend makes a proxy, several a balancer
	// (see Pin, Alternate, Failover; the default is Pin(0)).
	Backends []*url.URL
	// BackendTLS is how to reach the backends; it must verify them (normally
	// RootCAs = the cluster CA). nil = the system roots. A client certificate
	// set here is the proxy's own identity towards the backends.
	BackendTLS *tls.Config
	// ServingCert is the proxy's own serving certificate for 127.0.0.1,
	// signed by the cluster CA so clients keep verifying.
	ServingCert tls.Certificate
	// Log receives one line per request and one per fault fired. Headers are
	// never logged (so neither is the bearer token). nil = discard.
	Log io.Writer

	// ListenAddr is where to listen; it must be a loopback IP.
	// "" = "127.0.0.1:0" (a free port).
	ListenAddr string
	// DialTimeout bounds connecting (TCP) to one backend. 0 = 5s.
	DialTimeout time.Duration
	// MaxRequestBodyBytes bounds a request body; bodies are buffered so that
	// Failover can replay them. Larger bodies are answered 413. 0 = 16 MiB.
	MaxRequestBodyBytes int64
	// MaxLoggedRequests bounds the Requests log; when it is full the oldest
	// tenth is dropped. 0 = 10000.
	MaxLoggedRequests int
	// UnreachableStatus is what the client gets when no backend could be
	// connected to. 0 = the client's stream is reset (HTTP/2 RST_STREAM, or
	// the HTTP/1.1 connection is closed), so it sees a transport error as it
	// would behind a TCP load balancer. Otherwise a Status with this code
	// (e.g. 502, 503) is sent.
	UnreachableStatus int
	// CloseTimeout bounds how long Close waits for handlers to return after
	// closing every connection and cancelling every upstream request.
	// 0 = 10s.
	CloseTimeout time.Duration
}

// Proxy is a running fault-injecting proxy. All methods are safe for
// concurrent use.
type Proxy struct {
	o        Options
	backends []*url.URL
	ln       net.Listener
	srv      *http.Server
	tr       *http.Transport
	url      string
	codec    *codec

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
	handlers  sync.WaitGroup

	mu           sync.Mutex
	closed       bool
	mode         balanceMode
	target       int    // pinned backend or failover primary
	rr           uint64 // next round-robin slot
	rules        []*ruleState
	nextRule     int
	strip        map[string]bool
	streamFaults StreamFaults
	listFaults   ListFaults
	expired      map[string]bool // resource versions expired by StreamFaults.ExpireInitialEventsEndRV
	streams      map[int]*stream
	nextStream   int
	stallUntil   time.Time
	stallCh      chan struct{} // closed and replaced whenever stallUntil changes
	// releaseStalled is closed by ResetStalled; nil until a Rule.Stall
	// holds a request.
	releaseStalled chan struct{}
	reqs           []*Request
	nextSeq        int

	logMu sync.Mutex
}

type balanceMode int

const (
	modePin balanceMode = iota
	modeAlternate
	modeFailover
)

// New validates o, listens on o.ListenAddr with TLS (ALPN h2 and http/1.1)
// and serves until Close.
func New(o Options) (*Proxy, error) {
	if len(o.Backends) == 0 {
		return nil, fmt.Errorf("%w: no backends", ErrInvalidOptions)
	}
	backends := make([]*url.URL, len(o.Backends))
	for i, b := range o.Backends {
		if b == nil || b.Host == "" || (b.Scheme != "https" && b.Scheme != "http") {
			return nil, fmt.Errorf("%w: backend %d is not an http(s)://host URL", ErrInvalidOptions, i)
		}
		c := *b
		c.RawQuery, c.Fragment = "", ""
		backends[i] = &c
	}
	if len(o.ServingCert.Certificate) == 0 {
		return nil, fmt.Errorf("%w: no serving certificate", ErrInvalidOptions)
	}
	if o.BackendTLS != nil && o.BackendTLS.InsecureSkipVerify {
		return nil, fmt.Errorf("%w: BackendTLS must verify the backends", ErrInvalidOptions)
	}
	if o.ListenAddr == "" {
		o.ListenAddr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: ListenAddr: %v", ErrInvalidOptions, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: ListenAddr %q is not a loopback IP", ErrInvalidOptions, o.ListenAddr)
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.MaxRequestBodyBytes <= 0 {
		o.MaxRequestBodyBytes = 16 << 20
	}
	if o.MaxLoggedRequests <= 0 {
		o.MaxLoggedRequests = 10000
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 10 * time.Second
	}
	if o.UnreachableStatus != 0 && (o.UnreachableStatus < 400 || o.UnreachableStatus > 599) {
		return nil, fmt.Errorf("%w: UnreachableStatus %d is not 0 or 4xx/5xx", ErrInvalidOptions, o.UnreachableStatus)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	cd, err := newCodec()
	if err != nil {
		return nil, err
	}

	var backendTLS *tls.Config
	if o.BackendTLS != nil {
		backendTLS = o.BackendTLS.Clone()
	} else {
		backendTLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       backendTLS,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		DisableCompression:    true, // pass the client's Accept-Encoding and the encoded body through
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		HTTP2:                 &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}

	ln, err := net.Listen("tcp", o.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("faults: listen on %s: %w", o.ListenAddr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		o:         o,
		backends:  backends,
		ln:        ln,
		tr:        tr,
		url:       "https://" + ln.Addr().String(),
		codec:     cd,
		ctx:       ctx,
		cancel:    cancel,
		serveDone: make(chan struct{}),
		streams:   map[int]*stream{},
		stallCh:   make(chan struct{}),
		nextRule:  1,
		nextSeq:   1,
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          log.New(&lineWriter{p: p}, "", 0),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{o.ServingCert},
			NextProtos:   []string{"h2", "http/1.1"},
		},
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: withConn,
		// kube-apiserver's default --http2-max-streams-per-connection.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
	go func() {
		defer close(p.serveDone)
		// ServeTLS enables HTTP/2 on the TLS listener; it returns
		// http.ErrServerClosed after Close.
		if err := p.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logf("serve: %v", err)
		}
	}()
	return p, nil
}

// URL is the proxy's base URL, https://127.0.0.1:PORT.
func (p *Proxy) URL() string { return p.url }

// Config returns a copy of base pointed at the proxy. Since the proxy's
// serving certificate is signed by the cluster CA, base's CA data stays
// valid. The bearer token is forwarded to the backends; a client
// certificate in base would only authenticate to the proxy, not to them.
func (p *Proxy) Config(base *rest.Config) *rest.Config {
	c := rest.CopyConfig(base)
	c.Host = p.url
	return c
}

// Close stops listening, resets every in-flight stream (watches included),
// cancels every upstream request and waits (up to Options.CloseTimeout) for
// the request handlers to return. It is idempotent: later calls return the
// first call's result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.cancel()
		err := p.srv.Close()
		<-p.serveDone
		done := make(chan struct{})
		go func() { p.handlers.Wait(); close(done) }()
		t := time.NewTimer(p.o.CloseTimeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			err = errors.Join(err, fmt.Errorf("%w within %s", ErrCloseTimeout, p.o.CloseTimeout))
		}
		p.tr.CloseIdleConnections()
		p.closeErr = err
	})
	return p.closeErr
}

// Pin sends all new requests to backend i. It panics if i is out of range
// (a test bug). In-flight requests and streams are not moved.
func (p *Proxy) Pin(i int) {
	p.checkBackend(i)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.target = modePin, i
}

// Alternate sends new requests round robin over all backends, one request
// each, starting again at backend 0 (0, 1, ..., n-1, 0, ...). Requests
// answered by a fault rule do not take a turn. A request whose backend is
// unreachable is not retried elsewhere (see Failover).
func (p *Proxy) Alternate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.rr = modeAlternate, 0
}

// Failover sends every new request to primary; when connecting to it fails
// (connection refused or reset, dial or TLS handshake timeout: no HTTP
// response at all), the same request is sent to primary+1, then primary+2,
// ... (wrapping, each backend once). A backend that answers, whatever the
// status, is not failed over. Each request starts again at primary, so the
// proxy returns to it as soon as it answers again. It panics if primary is
// out of range.
func (p *Proxy) Failover(primary int) {
	p.checkBackend(primary)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.target = modeFailover, primary
}

func (p *Proxy) checkBackend(i int) {
	if i < 0 || i >= len(p.backends) {
		panic(fmt.Sprintf("faults: backend index %d out of range [0,%d)", i, len(p.backends)))
	}
}

// route returns the backends to try for one request, in order.
func (p *Proxy) route() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.backends)
	switch p.mode {
	case modeAlternate:
		i := int(p.rr % uint64(n))
		p.rr++
		return []int{i}
	case modeFailover:
		order := make([]int, n)
		for k := range order {
			order[k] = (p.target + k) % n
		}
		return order
	default:
		return []int{p.target}
	}
}

// StripParams removes the named query parameters from every request
// forwarded from now on, to emulate a server that ignores them (e.g.
// "resourceVersionMatch", "sendInitialEvents"). It replaces any earlier set;
// StripParams() with no names stops stripping. Rules match the query as
// received, before stripping.
func (p *Proxy) StripParams(names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(names) == 0 {
		p.strip = nil
		return
	}
	p.strip = make(map[string]bool, len(names))
	for _, n := range names {
		p.strip[n] = true
	}
}

// forwardQuery drops stripped parameters from raw and, with watchTimeout
// > 0, caps its timeoutSeconds (StreamFaults.WatchTimeout), keeping every
// other byte (order, encoding) as received.
func (p *Proxy) forwardQuery(raw string, watchTimeout time.Duration) string {
	p.mu.Lock()
	strip := p.strip
	p.mu.Unlock()
	if watchTimeout <= 0 && (len(strip) == 0 || raw == "") {
		return raw
	}
	var params []string
	if raw != "" {
		params = strings.Split(raw, "&")
	}
	limit := int64(max(watchTimeout/time.Second, 1))
	kept := make([]string, 0, len(params)+1)
	for _, kv := range params {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		switch {
		case strip[k]:
			continue
		case watchTimeout > 0 && k == "timeoutSeconds":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n < limit {
				limit = n
			}
			continue
		}
		kept = append(kept, kv)
	}
	if watchTimeout > 0 {
		kept = append(kept, "timeoutSeconds="+strconv.FormatInt(limit, 10))
	}
	return strings.Join(kept, "&")
}

// lineWriter routes net/http's own error log into Options.Log.
type lineWriter struct{ p *Proxy }

func (w *lineWriter) Write(b []byte) (int, error) {
	w.p.logf("http: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func (p *Proxy) logf(format string, args ...any) {
	if p.o.Log == io.Discard {
		return
	}
	line := time.Now().Format("15:04:05.000000") + " faults " + p.ln.Addr().String() + ": " + fmt.Sprintf(format, args...) + "\n"
	p.logMu.Lock()
	defer p.logMu.Unlock()
	_, _ = io.WriteString(p.o.Log, line)
}

// connKey is the context key of a request's client connection (withConn).
type connKey struct{}

// withConn keeps each client connection in its requests' context, for
// Rule.Reset.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// resetConn closes the client connection of a request's context with a TCP
// reset (SO_LINGER 0) where it is a TCP connection, else plainly.
func resetConn(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(net.Conn)
	if !ok {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}
