package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// connRecorder is a listener that accepts connections, counts them and never
// answers; the connections stay open until the test ends.
type connRecorder struct {
	ln    net.Listener
	n     atomic.Int64
	mu    sync.Mutex
	conns []net.Conn
}

func newConnRecorder(t *testing.T) *connRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &connRecorder{ln: ln}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.n.Add(1)
			r.mu.Lock()
			r.conns = append(r.conns, c)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, c := range r.conns {
			_ = c.Close()
		}
	})
	return r
}

func (r *connRecorder) url() string { return "http://" + r.ln.Addr().String() }

// writeKubeconfig writes a kubeconfig naming server, namespace "default".
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
contexts:
- name: c
  context: {cluster: c, user: u, namespace: default}
current-context: c
users:
- name: u
  user: {token: t}
`, server)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type runResult struct {
	code        int
	out, errOut string
}

func runPlugin(t *testing.T, args ...string) runResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return runResult{code, out.String(), errOut.String()}
}

// oneErrorLine fails unless stderr is exactly one error line containing want,
// and a table on stdout does not repeat it (a JSON report keeps its "error"
// field: it is data, schemaVersion 1).
func oneErrorLine(t *testing.T, what string, r runResult, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.errOut, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "kubectl-steadywatch: error: ") || !strings.Contains(lines[0], want) {
		t.Errorf("%s: stderr %q, want one error line containing %q", what, r.errOut, want)
	}
	if !strings.HasPrefix(r.out, "{") && strings.Contains(r.out, want) {
		t.Errorf("%s: the error is also on stdout:\n%s", what, r.out)
	}
}

// Every bad flag or argument exits 2 with one error line, before any
// connection: the kubeconfig names a listener that counts connections.
func TestBadInputExit2WithoutConnecting(t *testing.T) {
	rec := newConnRecorder(t)
	kc := writeKubeconfig(t, rec.url())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--rv", "abc"}, `--rv "abc": not a resourceVersion`},
		{[]string{"list", "--rv", "-5"}, `--rv "-5": not a resourceVersion`},
		{[]string{"list", "--match", "Exact", "--rv", "012"}, `--rv "012": not a resourceVersion`},
		{[]string{"list", "--match", "Sometimes"}, `--match "Sometimes": want MostRecent, Any, NotOlderThan or Exact`},
		{[]string{"list", "--match", "Exact"}, "invalid list query"},
		{[]string{"list", "--match", "MostRecent", "--rv", "5"}, "--match MostRecent takes no --rv"},
		{[]string{"list", "--limit", "-1"}, "--limit must be >= 0"},
		{[]string{"list", "--limit", "x"}, `invalid argument "x" for "--limit"`},
		{[]string{"list", "-l", "a in ("}, `--selector "a in ("`},
		{[]string{"list", "--resource", ""}, "--resource is required"},
		{[]string{"list", "-o", "yaml"}, `unsupported output format "yaml"`},
		{[]string{"list", "--request-timeout", "soon"}, `--request-timeout "soon": want a duration`},
		{[]string{"sync", "--request-timeout", "-1s"}, `--request-timeout "-1s": must not be negative`},
		{[]string{"sync", "--timeout", "-1s"}, "--timeout must be >= 0"},
		{[]string{"sync", "-l", "!!"}, `--selector "!!"`},
		{[]string{"sync", "extra-arg"}, `unknown command "extra-arg"`},
		{[]string{"probe", "-o", "yaml"}, `unsupported output format "yaml"`},
		{[]string{"probe", "--bookmark-timeout", "1s"}, "--bookmark-timeout must be at least 3s"},
		{[]string{"probe", "--stream-timeout", "0s"}, "must be positive"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		r := runPlugin(t, append([]string{"--kubeconfig", kc}, tc.args...)...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, r.code, exitUsage, r.errOut)
		}
		oneErrorLine(t, fmt.Sprint(tc.args), r, tc.want)
	}
	if n := rec.n.Load(); n != 0 {
		t.Errorf("%d connection(s) to the server for bad input, want none", n)
	}
}

// With no kubeconfig anywhere the plugin says where it looked and connects
// nowhere (client-go's last resort would be http://localhost:8080).
func TestNoKubeconfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	t.Setenv("KUBECONFIG", missing)
	r := runPlugin(t, "list")
	if r.code != exitUsage {
		t.Errorf("KUBECONFIG=%s: exit %d, want %d", missing, r.code, exitUsage)
	}
	oneErrorLine(t, "KUBECONFIG missing", r, "no kubeconfig found: looked at $KUBECONFIG ("+missing+": no such file)")
	for _, want := range []string{"(not read: $KUBECONFIG is set)", "in-cluster ($KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT not set)", "pass --kubeconfig FILE"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("message lacks %q: %s", want, r.errOut)
		}
	}

	r = runPlugin(t, "sync", "--kubeconfig", empty)
	if r.code != exitUsage {
		t.Errorf("--kubeconfig %s: exit %d, want %d", empty, r.code, exitUsage)
	}
	oneErrorLine(t, "empty --kubeconfig", r, "no kubeconfig found: looked at --kubeconfig "+empty+" (no cluster in it), in-cluster (")

	// A kubeconfig with a cluster but no current-context (client-go would
	// try http://localhost:8080): refused, naming its contexts.
	rec0 := newConnRecorder(t)
	noCtx := strings.Replace(readFile(t, writeKubeconfig(t, rec0.url())), "current-context: c\n", "", 1)
	noCtxPath := filepath.Join(dir, "no-context")
	if err := os.WriteFile(noCtxPath, []byte(noCtx), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runPlugin(t, "list", "--kubeconfig", noCtxPath)
	if r.code != exitUsage || rec0.n.Load() != 0 {
		t.Errorf("no current-context: exit %d, %d connection(s); want %d and none", r.code, rec0.n.Load(), exitUsage)
	}
	oneErrorLine(t, "no current-context", r, "kubeconfig "+noCtxPath+": no current-context; pass --context NAME (contexts: c)")

	// --server alone is enough to connect (here to a listener that counts).
	rec := newConnRecorder(t)
	r = runPlugin(t, "list", "--server", rec.url(), "--request-timeout", "200ms")
	if r.code != exitFailure || rec.n.Load() == 0 {
		t.Errorf("--server without kubeconfig: exit %d, %d connection(s); want exit 1 after connecting", r.code, rec.n.Load())
	}
}

func TestVersion(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runPlugin(t, args...)
		if r.code != exitOK || r.errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.errOut)
		}
		for _, want := range []string{"kubectl-steadywatch ", "\n  steadywatch ", "\n  client-go   ", "\n  go          go1."} {
			if !strings.Contains(r.out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, r.out)
			}
		}
	}
	if r := runPlugin(t, "version", "extra"); r.code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", r.code, exitUsage)
	}
}

// A server that accepts the connection and never answers fails the command
// after --request-timeout, and the default is not 0.
func TestRequestTimeout(t *testing.T) {
	rec := newConnRecorder(t)
	kc := writeKubeconfig(t, rec.url())
	start := time.Now()
	r := runPlugin(t, "--kubeconfig", kc, "list", "--request-timeout", "300ms")
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d", r.code, exitFailure)
	}
	oneErrorLine(t, "silent server", r, "no answer within --request-timeout (300ms)")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with --request-timeout 300ms", d)
	}
	f := newCLI(io.Discard, io.Discard).global.Lookup("request-timeout")
	if f == nil || f.DefValue != defaultRequestTimeout || defaultRequestTimeout == "0" {
		t.Errorf("--request-timeout default %v, want %s (not 0)", f, defaultRequestTimeout)
	}
}

// requestTimeout bounds a watch until its headers and any other request
// until its body is read.
func TestRequestTimeoutRoundTripper(t *testing.T) {
	const d = 200 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
			_, _ = io.WriteString(w, "event")
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: &requestTimeout{rt: http.DefaultTransport, d: d}}

	resp, err := client.Get(srv.URL + "/list")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !errors.Is(err, ErrRequestTimeout) {
		t.Errorf("list body read: %v, want ErrRequestTimeout", err)
	}

	resp, err = client.Get(srv.URL + "/watch?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The stimulus: the stream stays quiet for longer than the timeout.
	time.Sleep(3 * d)
	release <- struct{}{}
	b := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, b); err != nil || string(b) != "event" {
		t.Errorf("watch read after %v of quiet: %q %v, want the event", 3*d, b, err)
	}
}

func TestHelpShowsOwnFlagsFirst(t *testing.T) {
	r := runPlugin(t, "list", "--help")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	own, conn := strings.Index(r.out, "\nFlags:\n"), strings.Index(r.out, "\nConnection flags")
	if own < 0 || conn < own || !strings.Contains(r.out[own:conn], "--rv") {
		t.Errorf("help does not show list's own flags before the connection flags:\n%s", r.out)
	}
	if strings.Contains(r.out, "--as-group") || strings.Contains(r.out, "--client-key") {
		t.Errorf("help lists every kubeconfig flag:\n%s", r.out)
	}
	r = runPlugin(t, "options")
	if r.code != exitOK || !strings.Contains(r.out, "--as-group") || !strings.Contains(r.out, "--client-key") {
		t.Errorf("options: exit %d, output lacks the kubeconfig flags:\n%s", r.code, r.out)
	}
}

// fakeAPIServer answers /version, the core discovery documents, and every
// configmaps request with list(w, r).
func fakeAPIServer(t *testing.T, list http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, s string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, s)
	}
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
	})
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`)
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["list","watch"],"shortNames":["cm"]}]}`)
	})
	mux.HandleFunc("/api/v1/namespaces/default/configmaps", list)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A list the server refuses with 400 exits 2 (the request as given is
// wrong) and its error is printed once.
func TestServerRefusesListExit2Once(t *testing.T) {
	var lists atomic.Int64
	srv := fakeAPIServer(t, func(w http.ResponseWriter, _ *http.Request) {
		lists.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"invalid resource version: refused by the fake","reason":"BadRequest","code":400}`)
	})
	kc := writeKubeconfig(t, srv.URL)
	for _, args := range [][]string{{"list", "--rv", "5"}, {"list", "--rv", "5", "-o", "json"}} {
		r := runPlugin(t, append([]string{"--kubeconfig", kc}, args...)...)
		t.Logf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.out, r.errOut)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitUsage)
		}
		oneErrorLine(t, fmt.Sprint(args), r, "refused by the fake")
	}
	if lists.Load() == 0 {
		t.Error("no list reached the server")
	}
}

// A sync that cannot list exits 1 with one error line that carries the
// server's reason; client-go's default handler no longer logs every retry.
func TestSyncNotSyncedOneError(t *testing.T) {
	var klogOut bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&klogOut)
	defer klog.LogToStderr(true)
	srv := fakeAPIServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps is forbidden: User \"u\" cannot list resource \"configmaps\"","reason":"Forbidden","code":403}`)
	})
	kc := writeKubeconfig(t, srv.URL)
	// 3s: the command's bound, not a claim on speed; the first refused list
	// reached the error handler only after 1s in a loaded -race run.
	r := runPlugin(t, "--kubeconfig", kc, "sync", "--timeout", "3s")
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d", r.code, exitFailure)
	}
	oneErrorLine(t, "sync forbidden", r, `configmaps not synced within --timeout 3s; last error: `)
	if !strings.Contains(r.errOut, `cannot list resource \"configmaps\"`) && !strings.Contains(r.errOut, `cannot list resource "configmaps"`) {
		t.Errorf("the error line lacks the server's reason: %s", r.errOut)
	}
	klog.Flush()
	if strings.Contains(klogOut.String(), "forbidden") {
		t.Errorf("the list error was also logged:\n%s", klogOut.String())
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --resource takes kubectl's short names: "cm" is resolved through
// discovery's shortNames to configmaps, and the list reaches the server.
func TestResourceShortName(t *testing.T) {
	var lists atomic.Int64
	srv := fakeAPIServer(t, func(w http.ResponseWriter, _ *http.Request) {
		lists.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`)
	})
	kc := writeKubeconfig(t, srv.URL)
	r := runPlugin(t, "--kubeconfig", kc, "list", "--resource", "cm", "-o", "json")
	if r.code != exitOK || lists.Load() == 0 {
		t.Fatalf("list --resource cm: exit %d, %d list(s)\nstdout: %s\nstderr: %s", r.code, lists.Load(), r.out, r.errOut)
	}
	if !strings.Contains(r.out, `"resource": "configmaps"`) && !strings.Contains(r.out, `"resource":"configmaps"`) {
		t.Errorf("list --resource cm did not list configmaps:\n%s", r.out)
	}
}
