package faults

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listFrom lists configmaps through the proxy and returns which backend
// answered (the fake names its item after itself) or the error.
func (e *env) listFrom(t *testing.T) (string, error) {
	t.Helper()
	l, err := e.cs.CoreV1().ConfigMaps("default").List(ctxT(t, 20*time.Second), metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	return l.Items[0].Name, nil
}

func (e *env) backendsOfLast(n int) (backends []int, tried [][]int) {
	reqs := e.proxy.Requests()
	for _, r := range reqs[len(reqs)-n:] {
		backends = append(backends, r.Backend)
		tried = append(tried, r.Tried)
	}
	return
}

func TestBalancerModes(t *testing.T) {
	e := newEnv(t, 3, nil)
	mustList := func(want string) {
		t.Helper()
		got, err := e.listFrom(t)
		if err != nil || got != want {
			t.Fatalf("want %s, got %q, %v", want, got, err)
		}
	}
	// Default: Pin(0).
	mustList("from-backend-0")
	mustList("from-backend-0")

	e.proxy.Pin(2)
	for i := 0; i < 3; i++ {
		mustList("from-backend-2")
	}
	if b, _ := e.backendsOfLast(3); !reflect.DeepEqual(b, []int{2, 2, 2}) {
		t.Errorf("pinned log: %v", b)
	}

	e.proxy.Alternate()
	for i := 0; i < 6; i++ {
		mustList("from-backend-" + string(rune('0'+i%3)))
	}
	// Faulted requests do not take a turn.
	id := e.proxy.Inject(Rule{Verb: "list", Status: 500, Count: 1})
	if _, err := e.cs.CoreV1().ConfigMaps("default").List(ctxT(t, 5*time.Second), metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("want injected 500: %v", err)
	}
	e.proxy.Remove(id)
	mustList("from-backend-0")

	e.proxy.Failover(1)
	mustList("from-backend-1")
	if _, tried := e.backendsOfLast(1); !reflect.DeepEqual(tried, [][]int{{1}}) {
		t.Errorf("failover to a live primary tries only it: %v", tried)
	}

	e.proxy.Failover(0)
	e.backends[0].stop()
	mustList("from-backend-1")
	e.backends[1].stop()
	mustList("from-backend-2")
	if b, tried := e.backendsOfLast(2); !reflect.DeepEqual(b, []int{1, 2}) || !reflect.DeepEqual(tried, [][]int{{0, 1}, {0, 1, 2}}) {
		t.Errorf("failover log: backends %v tried %v", b, tried)
	}
	// The primary answers again: back to it.
	if err := e.backends[0].start(); err != nil {
		t.Fatal(err)
	}
	mustList("from-backend-0")

	// Pinned to a dead backend: the client sees a transport error, not a
	// Status, and the log says unreachable.
	e.proxy.Pin(1)
	err := e.cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").MaxRetries(0).Do(ctxT(t, 10*time.Second)).Error()
	if err == nil || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown {
		t.Fatalf("want a transport error, got %v", err)
	}
	reqs := e.proxy.Requests()
	if last := reqs[len(reqs)-1]; last.Fault != "unreachable" || last.Backend != -1 || !strings.Contains(last.Err, "backend 1") {
		t.Errorf("log: %+v", last)
	}
}

func TestUnreachableStatus(t *testing.T) {
	e := newEnv(t, 1, func(o *Options) { o.UnreachableStatus = http.StatusServiceUnavailable })
	e.backends[0].stop()
	err := e.cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").MaxRetries(0).Do(ctxT(t, 10*time.Second)).Error()
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("want 503 ServiceUnavailable, got %v", err)
	}
}

func TestFailoverReplaysBodies(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.proxy.Failover(0)
	e.backends[0].stop()
	body := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"replayed"}}`)
	res := e.cs.CoreV1().RESTClient().Post().Namespace("default").Resource("configmaps").Body(body).Do(ctxT(t, 10*time.Second))
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
	got := e.backends[1].requests()
	if len(got) != 1 || got[0].Body != string(body) {
		t.Fatalf("backend 1 got %+v", got)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	e := newEnv(t, 1, nil)
	good := e.proxy.o
	cases := map[string]func(*Options){
		"no backends":       func(o *Options) { o.Backends = nil },
		"bad backend":       func(o *Options) { o.Backends = []*url.URL{{Scheme: "ftp", Host: "x"}} },
		"no cert":           func(o *Options) { o.ServingCert.Certificate = nil },
		"insecure":          func(o *Options) { o.BackendTLS = e.ca.ClientTLS(); o.BackendTLS.InsecureSkipVerify = true },
		"not loopback":      func(o *Options) { o.ListenAddr = "0.0.0.0:0" },
		"bad unreachable":   func(o *Options) { o.UnreachableStatus = 200 },
		"hostname not IP":   func(o *Options) { o.ListenAddr = "localhost:0" },
		"listen addr junk":  func(o *Options) { o.ListenAddr = "junk" },
		"nil backend entry": func(o *Options) { o.Backends = []*url.URL{nil} },
	}
	for name, mutate := range cases {
		o := good
		mutate(&o)
		if p, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			if p != nil {
				p.Close()
			}
			t.Errorf("%s: want ErrInvalidOptions, got %v", name, err)
		}
	}
}

// TestCloseEndsEverything: Close with open and stalled watches returns
// promptly, is idempotent, ends the clients' streams and leaves no goroutine
// behind (proxy, fake backends and clients all accounted for).
func TestCloseEndsEverything(t *testing.T) {
	before := goroutines()
	func() {
		e := newEnv(t, 2, nil)
		w := e.openWatch(t, 0)
		e.proxy.Alternate()
		e.proxy.StallWatches(time.Hour)
		stalled := make(chan error, 1)
		go func() {
			_, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 30*time.Second), metav1.ListOptions{})
			stalled <- err
		}()
		testfake.WaitFor(t, "stalled watch at a backend", func() bool { return e.proxy.Watches() == 2 })

		start := time.Now()
		if err := e.proxy.Close(); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("Close took %s", el)
		}
		if err := e.proxy.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		t.Logf("Close took %s", time.Since(start))
		for {
			if _, ok := recv(t, w.ResultChan(), 5*time.Second); !ok {
				break
			}
		}
		select {
		case err := <-stalled:
			if err == nil {
				t.Error("the stalled watch call must fail when the proxy closes")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("stalled watch call still blocked after Close")
		}
		if _, err := e.listFrom(t); err == nil {
			t.Error("requests after Close must fail")
		}
		for _, b := range e.backends {
			b.stop()
			testfake.WaitFor(t, "backend watches to end", func() bool { return b.openWatches() == 0 })
		}
	}()
	// Everything started since `before` must end: the proxy's server, handler
	// and transport goroutines, the fake backends, and client connections
	// (the server closed them).
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaked := newGoroutines(before)
		if len(leaked) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goroutines returns the stacks of all goroutines by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := strings.Cut(string(g), "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(head, "goroutine "), " ")
		out[id] = string(g)
	}
	return out
}

// newGoroutines lists goroutines not in before, except this test's own.
func newGoroutines(before map[string]string) []string {
	var leaked []string
	for id, g := range goroutines() {
		if _, ok := before[id]; ok || strings.Contains(g, "TestCloseEndsEverything") || strings.Contains(g, "runtime.Stack") {
			continue
		}
		leaked = append(leaked, g)
	}
	return leaked
}
