package faults

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/certs"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fakeAPI is a minimal TLS HTTP/2 apiserver stand-in serving configmaps in
// JSON: list, get, create, and watches whose events the test pushes. It is a
// fake for HTTP plumbing only; real apiserver behaviour is proven in e2e.
type fakeAPI struct {
	idx  int
	addr string // fixed after the first start so it can be restarted
	cert tls.Certificate

	mu       sync.Mutex
	srv      *http.Server
	done     chan struct{}
	got      []gotReq
	watchers map[int]chan string
	nextW    int
	ended    chan int // watch ids whose handler returned
	// lateEnds (lagEnds): a watch whose request ended stays open (counted
	// by openWatches) until the next watch starts; closed and replaced then.
	lateEnds chan struct{}
}

type gotReq struct {
	Proto, Method, Path, RawQuery string
	Header                        http.Header
	Body                          string
}

func newFakeAPI(t *testing.T, idx int, cert tls.Certificate) *fakeAPI {
	t.Helper()
	b := &fakeAPI{idx: idx, addr: "127.0.0.1:0", cert: cert, watchers: map[int]chan string{}, ended: make(chan int, 100)}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)
	return b
}

func (b *fakeAPI) url() *url.URL { return &url.URL{Scheme: "https", Host: b.addr} }

func (b *fakeAPI) start() error {
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err = net.Listen("tcp", b.addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // port still held by the previous instance
	}
	if err != nil {
		return fmt.Errorf("fake backend %d listen: %w", b.idx, err)
	}
	srv := &http.Server{
		Handler:   http.HandlerFunc(b.serve),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{b.cert}, MinVersion: tls.VersionTLS12},
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.addr = ln.Addr().String()
	b.srv, b.done = srv, done
	b.mu.Unlock()
	go func() { defer close(done); _ = srv.ServeTLS(ln, "", "") }()
	return nil
}

func (b *fakeAPI) stop() {
	b.mu.Lock()
	srv, done := b.srv, b.done
	b.srv = nil
	if b.lateEnds != nil {
		close(b.lateEnds)
		b.lateEnds = nil
	}
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
		<-done
	}
}

func (b *fakeAPI) requests() []gotReq {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]gotReq(nil), b.got...)
}

func (b *fakeAPI) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = nil
}

// send pushes one watch event line to every open watch and returns how many
// received it.
func (b *fakeAPI) send(eventType, name, rv string) int {
	line := fmt.Sprintf(`{"type":%q,"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","resourceVersion":%q}}}`+"\n", eventType, name, rv)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.watchers {
		ch <- line
	}
	return len(b.watchers)
}

// lagEnds makes the backend notice the end of a watch late: a watch whose
// request ended (the proxy closed its stream) stays open until the next
// watch starts, as when the backend is slow to see a stream reset under
// load. Without it the end is noticed whenever the HTTP/2 server delivers
// it, which the test cannot order against what its client sees.
func (b *fakeAPI) lagEnds() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lateEnds = make(chan struct{})
}

// watchMark marks the watches started so far, for openSince.
func (b *fakeAPI) watchMark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nextW
}

// openSince returns how many watches started after mark are open: unlike
// a difference of openWatches, it does not count a watch that ends
// meanwhile (one the proxy closed, which the backend may notice late).
func (b *fakeAPI) openSince(mark int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for id := range b.watchers {
		if id >= mark {
			n++
		}
	}
	return n
}

func (b *fakeAPI) openWatches() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.watchers)
}

func (b *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.got = append(b.got, gotReq{Proto: r.Proto, Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)})
	b.mu.Unlock()
	w.Header().Set("X-Backend", fmt.Sprint(b.idx))
	info := parseRequestInfo(r.Method, r.URL)
	switch {
	case info.Verb == "watch":
		b.serveWatch(w, r)
	case info.Verb == "list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[{"metadata":{"name":"from-backend-%d","namespace":"default","resourceVersion":"10"}}]}`, 100+b.idx, b.idx)
	case info.Verb == "get" && info.Resource == "configmaps":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","resourceVersion":"10"}}`, info.Name)
	case info.Verb == "create":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}
}

func (b *fakeAPI) serveWatch(w http.ResponseWriter, r *http.Request) {
	ch := make(chan string, 16)
	b.mu.Lock()
	if b.lateEnds != nil {
		close(b.lateEnds) // the watches that ended before this one may go
		b.lateEnds = make(chan struct{})
	}
	id := b.nextW
	b.nextW++
	b.watchers[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		late := b.lateEnds
		b.mu.Unlock()
		if late != nil {
			<-late
		}
		b.mu.Lock()
		delete(b.watchers, id)
		b.mu.Unlock()
		b.ended <- id
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case line := <-ch:
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
			_ = rc.Flush()
		}
	}
}

// env is a proxy in front of n fake backends, with a CA-verified client-go
// config pointed at the proxy.
type env struct {
	ca       *certs.CA
	backends []*fakeAPI
	proxy    *Proxy
	cfg      *rest.Config
	cs       *kubernetes.Clientset
	log      *syncBuffer
}

const testToken = "s3cr3t-token-must-not-leak"

func newEnv(t *testing.T, n int, mutate func(*Options)) *env {
	t.Helper()
	ca, err := certs.NewCA("faults-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Serving("serving")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ca: ca, log: &syncBuffer{}}
	var urls []*url.URL
	for i := 0; i < n; i++ {
		b := newFakeAPI(t, i, cert)
		e.backends = append(e.backends, b)
		urls = append(urls, b.url())
	}
	o := Options{Backends: urls, BackendTLS: ca.ClientTLS(), ServingCert: cert, Log: e.log}
	if mutate != nil {
		mutate(&o)
	}
	e.proxy, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.proxy.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e.cfg = e.proxy.Config(&rest.Config{
		BearerToken:     testToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM},
		QPS:             -1,
		ContentConfig:   rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"},
	})
	e.cs, err = kubernetes.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// clientset returns a clientset using protobuf (with JSON as fallback), as
// controllers usually do.
func (e *env) protoClientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cfg := rest.CopyConfig(e.cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
