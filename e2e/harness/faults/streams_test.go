package faults

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// openWatch starts a client-go watch through the proxy and waits until it
// is established at the backend.
func (e *env) openWatch(t *testing.T, b int) watch.Interface {
	t.Helper()
	mark := e.backends[b].watchMark()
	w, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 60*time.Second), metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	testfake.WaitFor(t, "watch at backend", func() bool { return e.backends[b].openSince(mark) == 1 })
	return w
}

func wantEvent(t *testing.T, w watch.Interface, name string) {
	t.Helper()
	ev, ok := recv(t, w.ResultChan(), 5*time.Second)
	if !ok || ev.Type != watch.Added {
		t.Fatalf("want ADDED %s, got %v %#v", name, ok, ev)
	}
	if got := ev.Object.(metav1.Object).GetName(); got != name {
		t.Fatalf("want %s, got %s", name, got)
	}
}

func TestDropWatchesEndsStreamsAbruptly(t *testing.T) {
	e := newEnv(t, 1, nil)
	w1 := e.openWatch(t, 0)
	w2 := e.openWatch(t, 0)
	if n := e.backends[0].send("ADDED", "a", "11"); n != 2 {
		t.Fatalf("backend has %d watches", n)
	}
	wantEvent(t, w1, "a")
	wantEvent(t, w2, "a")
	if n := e.proxy.Watches(); n != 2 {
		t.Fatalf("Watches() = %d", n)
	}

	if n := e.proxy.DropWatches(); n != 2 {
		t.Fatalf("DropWatches() = %d, want 2", n)
	}
	for _, w := range []watch.Interface{w1, w2} {
		// client-go reports the reset as one Error event, then closes.
		ev, ok := recv(t, w.ResultChan(), 5*time.Second)
		if !ok || ev.Type != watch.Error || !strings.Contains(apierrors.FromObject(ev.Object).Error(), "INTERNAL_ERROR") {
			t.Fatalf("want an Error event for the reset stream, got %v %#v", ok, ev)
		}
		if _, ok := recv(t, w.ResultChan(), 5*time.Second); ok {
			t.Fatal("result channel must close after a drop")
		}
	}
	// The upstream watches were cancelled too.
	testfake.WaitFor(t, "backend watches to end", func() bool { return e.backends[0].openWatches() == 0 })
	testfake.WaitFor(t, "proxy streams to end", func() bool { return e.proxy.Watches() == 0 })
	for _, r := range e.proxy.Requests() {
		if r.Verb == "watch" && (r.Fault != "dropped" || !r.Done) {
			t.Errorf("watch log entry: %+v", r)
		}
	}
	if n := e.proxy.DropWatches(); n != 0 {
		t.Errorf("second DropWatches() = %d", n)
	}
	// New watches work after a drop.
	w3 := e.openWatch(t, 0)
	e.backends[0].send("ADDED", "b", "12")
	wantEvent(t, w3, "b")
}

// TestDropWatchesOnTheWire reads the raw stream: over HTTP/2 the body ends
// with a stream reset, over HTTP/1.1 with an unexpected EOF, never io.EOF.
func TestDropWatchesOnTheWire(t *testing.T) {
	e := newEnv(t, 1, nil)
	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: e.ca.ClientTLS(), ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		hc := &http.Client{Transport: tr}
		req, _ := http.NewRequestWithContext(ctxT(t, 20*time.Second), "GET", e.proxy.URL()+"/api/v1/namespaces/default/configmaps?watch=1", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if (resp.ProtoMajor == 2) != h2 {
			t.Fatalf("want h2=%v, got %s", h2, resp.Proto)
		}
		testfake.WaitFor(t, "watch at backend", func() bool { return e.backends[0].openWatches() == 1 })
		e.backends[0].send("ADDED", "a", "11")
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"a"`) {
			t.Fatalf("first event: %q %v", line, err)
		}
		if n := e.proxy.DropWatches(); n != 1 {
			t.Fatalf("DropWatches() = %d", n)
		}
		_, err = io.ReadAll(br)
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("h2=%v: the stream must end abruptly, got err=%v", h2, err)
		}
		t.Logf("h2=%v: client saw %v", h2, err)
		resp.Body.Close()
		tr.CloseIdleConnections()
		testfake.WaitFor(t, "backend watch to end", func() bool { return e.backends[0].openWatches() == 0 })
	}
}

func TestEndWatchesEndsStreamsCleanly(t *testing.T) {
	e := newEnv(t, 1, nil)
	w := e.openWatch(t, 0)
	e.backends[0].send("ADDED", "a", "11")
	wantEvent(t, w, "a")
	if n := e.proxy.EndWatches(); n != 1 {
		t.Fatalf("EndWatches() = %d", n)
	}
	// A clean end: the channel closes without an Error event.
	if ev, ok := recv(t, w.ResultChan(), 5*time.Second); ok {
		t.Fatalf("want a clean close, got %v %#v", ev.Type, ev.Object)
	}
	testfake.WaitFor(t, "backend watch to end", func() bool { return e.backends[0].openWatches() == 0 })
}

func TestStallWatches(t *testing.T) {
	e := newEnv(t, 1, nil)
	w := e.openWatch(t, 0)
	e.backends[0].send("ADDED", "a", "11")
	wantEvent(t, w, "a")

	// Stall "forever", then lift it explicitly.
	e.proxy.StallWatches(time.Hour)
	e.backends[0].send("ADDED", "b", "12")
	e.backends[0].send("ADDED", "c", "13")
	noRecv(t, w.ResultChan(), 400*time.Millisecond, "event during stall")

	// A watch opened during the stall gets not even its response headers.
	opened := make(chan error, 1)
	go func() {
		w2, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 30*time.Second), metav1.ListOptions{ResourceVersion: "10"})
		if err == nil {
			w2.Stop()
		}
		opened <- err
	}()
	testfake.WaitFor(t, "second watch at backend", func() bool { return e.backends[0].openWatches() == 2 })
	select {
	case err := <-opened:
		t.Fatalf("watch call returned during the stall: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if e.proxy.Watches() != 2 {
		t.Fatalf("Watches() = %d", e.proxy.Watches())
	}

	e.proxy.StallWatches(0)
	wantEvent(t, w, "b") // in order, nothing lost
	wantEvent(t, w, "c")
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second watch did not start after the stall was lifted")
	}

	// A timed stall resumes by itself after d.
	const d = 700 * time.Millisecond
	start := time.Now()
	e.proxy.StallWatches(d)
	e.backends[0].send("ADDED", "d", "14")
	wantEvent(t, w, "d")
	if el := time.Since(start); el < d-50*time.Millisecond || el > d+2*time.Second {
		t.Errorf("event after %s, want about %s", el, d)
	}
	var stalled int
	for _, r := range e.proxy.Requests() {
		if r.Verb == "watch" && strings.Contains(r.Fault, "stalled") {
			stalled++
		}
	}
	if stalled != 2 {
		t.Errorf("want both watches marked stalled, log: %+v", e.proxy.Requests())
	}

	// Drop works on a stalled stream.
	e.proxy.StallWatches(time.Hour)
	e.backends[0].send("ADDED", "e", "15")
	if n := e.proxy.DropWatches(); n != 1 {
		t.Fatalf("DropWatches() = %d", n)
	}
	for {
		if _, ok := recv(t, w.ResultChan(), 5*time.Second); !ok {
			break
		}
	}
	e.proxy.StallWatches(0)
}
