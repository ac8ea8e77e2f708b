package faults

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestInjectedErrorsClassifyLikeRealOnes asserts that client-go, over JSON
// and over protobuf, classifies every injected error exactly as it would the
// apiserver's own.
func TestInjectedErrorsClassifyLikeRealOnes(t *testing.T) {
	e := newEnv(t, 1, nil)
	for _, media := range []string{"json", "protobuf"} {
		cs := e.cs
		if media == "protobuf" {
			cs = e.protoClientset(t)
		}
		t.Run(media, func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			list := func() error {
				// MaxRetries(0): client-go would otherwise honour Retry-After itself.
				return cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").MaxRetries(0).Do(ctx).Error()
			}
			cases := []struct {
				name  string
				rule  Rule
				check func(error) string
			}{
				{"410 default reason Expired", Rule{Verb: "list", Resource: "configmaps", Status: 410}, func(err error) string {
					if !apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || apierrors.ReasonForError(err) != metav1.StatusReasonExpired {
						return "want IsResourceExpired, reason Expired"
					}
					return ""
				}},
				{"410 reason Gone", Rule{Verb: "list", Status: 410, Reason: metav1.StatusReasonGone}, func(err error) string {
					if !apierrors.IsGone(err) {
						return "want IsGone"
					}
					return ""
				}},
				{"429 Retry-After", Rule{Verb: "list", Status: 429, RetryAfterSeconds: 3}, func(err error) string {
					if s, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTooManyRequests(err) || !ok || s != 3 {
						return "want IsTooManyRequests with SuggestsClientDelay 3"
					}
					return ""
				}},
				{"504 too large RV", Rule{Verb: "list", Status: 504, RetryAfterSeconds: 1, Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}, func(err error) string {
					s, ok := apierrors.SuggestsClientDelay(err)
					if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) || !ok || s != 1 ||
						!strings.Contains(err.Error(), "Too large resource version") {
						return "want IsTimeout, cause ResourceVersionTooLarge, delay 1, message 'Too large resource version'"
					}
					return ""
				}},
				{"500", Rule{Verb: "list", Status: 500}, func(err error) string {
					if !apierrors.IsInternalError(err) {
						return "want IsInternalError"
					}
					return ""
				}},
				{"422 with message", Rule{Verb: "list", Status: 422, Message: "resourceVersionMatch is forbidden"}, func(err error) string {
					if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "resourceVersionMatch is forbidden") {
						return "want IsInvalid with the message"
					}
					return ""
				}},
			}
			for _, c := range cases {
				id := e.proxy.Inject(c.rule)
				err := list()
				e.proxy.Remove(id)
				if err == nil {
					t.Errorf("%s: no error", c.name)
					continue
				}
				if msg := c.check(err); msg != "" {
					t.Errorf("%s: %s; got %T %v (reason %q)", c.name, msg, err, err, apierrors.ReasonForError(err))
				}
			}
			e.backends[0].reset()
			if err := list(); err != nil {
				t.Fatalf("after removing the rules the list must reach the backend: %v", err)
			}
			// The injected errors above were negotiated on this Accept header.
			if b := e.backends[0].requests(); len(b) != 1 || (media == "protobuf") != strings.HasPrefix(b[0].Header.Get("Accept"), mediaProtobuf) {
				t.Fatalf("client did not ask for %s: %+v", media, b)
			}

			// A 410 on a watch as an HTTP error.
			id := e.proxy.Inject(Rule{Verb: "watch", Resource: "configmaps", Status: 410})
			_, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: "5"})
			e.proxy.Remove(id)
			if !apierrors.IsResourceExpired(err) {
				t.Errorf("watch 410: want IsResourceExpired, got %v", err)
			}

			// A 410 as an ERROR event inside a 200 watch stream.
			e.proxy.Inject(Rule{Verb: "watch", Resource: "configmaps", Status: 410, Count: 1, AsWatchEvent: true})
			w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: "5"})
			if err != nil {
				t.Fatalf("watch with 410 event: the watch call itself must succeed: %v", err)
			}
			ev, ok := recv(t, w.ResultChan(), 5*time.Second)
			if !ok || ev.Type != watch.Error {
				t.Fatalf("want one ERROR event, got %v %#v", ok, ev)
			}
			if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) {
				t.Errorf("ERROR event: want IsResourceExpired, got %v", err)
			}
			if _, ok := recv(t, w.ResultChan(), 5*time.Second); ok {
				t.Errorf("the stream must end after the ERROR event")
			}
			w.Stop()
		})
	}
}

// TestErrorBodiesAreNegotiated checks the wire form: protobuf Status (with the
// k8s envelope) and length-prefixed protobuf watch events when the client
// prefers protobuf, JSON otherwise, and the Retry-After header.
func TestErrorBodiesAreNegotiated(t *testing.T) {
	e := newEnv(t, 1, nil)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: e.ca.ClientTLS(), ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	get := func(path, accept string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", e.proxy.URL()+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	e.proxy.Inject(Rule{Verb: "list", Status: 429, RetryAfterSeconds: 2})
	e.proxy.Inject(Rule{Verb: "watch", Status: 410, AsWatchEvent: true})

	resp, b := get("/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf, application/json")
	if resp.StatusCode != 429 || resp.Header.Get("Content-Type") != mediaProtobuf || resp.Header.Get("Retry-After") != "2" || !bytes.HasPrefix(b, []byte("k8s\x00")) {
		t.Errorf("protobuf list error: %d %q Retry-After %q body %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), b)
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("proxy must speak HTTP/2, got %s", resp.Proto)
	}
	resp, b = get("/api/v1/namespaces/default/configmaps", "application/json")
	if resp.StatusCode != 429 || resp.Header.Get("Content-Type") != mediaJSON ||
		!strings.HasPrefix(string(b), `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure"`) || !strings.Contains(string(b), `"code":429`) ||
		!strings.Contains(string(b), `"retryAfterSeconds":2`) {
		t.Errorf("json list error: %d %q body %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	resp, b = get("/api/v1/namespaces/default/configmaps?watch=1", "application/json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != mediaJSON ||
		!strings.HasPrefix(string(b), `{"type":"ERROR","object":{"kind":"Status"`) || !strings.HasSuffix(string(b), "}\n") || strings.Count(string(b), "\n") != 1 {
		t.Errorf("json watch event: %d %q body %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	resp, b = get("/api/v1/namespaces/default/configmaps?watch=1", "application/vnd.kubernetes.protobuf;q=1, application/json;q=0.5")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf;stream=watch" || len(b) < 4 ||
		int(b[0])<<24|int(b[1])<<16|int(b[2])<<8|int(b[3]) != len(b)-4 || !bytes.Contains(b, []byte("k8s\x00")) {
		t.Errorf("protobuf watch event: %d %q body %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

// TestClientGoHonoursInjectedRetryAfter shows that a Count-limited 429 with
// Retry-After is absorbed by client-go's own retry, after the delay, as with
// a real server.
func TestClientGoHonoursInjectedRetryAfter(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.Inject(Rule{Verb: "list", Resource: "configmaps", Status: 429, RetryAfterSeconds: 1, Count: 1})
	start := time.Now()
	l, err := e.cs.CoreV1().ConfigMaps("default").List(ctxT(t, 20*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("client-go should have retried after 1s: %v", err)
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("retried after %s, before the Retry-After of 1s", el)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "from-backend-0" {
		t.Errorf("list not from backend: %+v", l.Items)
	}
	reqs := e.proxy.Requests()
	if len(reqs) != 2 || reqs[0].Status != 429 || !strings.HasPrefix(reqs[0].Fault, "rule 1: 429 TooManyRequests") || reqs[0].Backend != -1 ||
		reqs[1].Status != 200 || reqs[1].Fault != "" || reqs[1].Backend != 0 {
		t.Errorf("requests: %+v", reqs)
	}
	if len(e.proxy.Rules()) != 0 {
		t.Errorf("a Count=1 rule must disarm after firing: %+v", e.proxy.Rules())
	}
}

func TestRuleMatching(t *testing.T) {
	e := newEnv(t, 1, nil)
	ctx := ctxT(t, 20*time.Second)
	cm := e.cs.CoreV1().ConfigMaps("default")
	e.proxy.Inject(Rule{Verb: "list", Resource: "configmaps", Query: map[string]string{"resourceVersionMatch": "Exact"}, Status: 410})
	e.proxy.Inject(Rule{Verb: "list", Query: map[string]string{"continue": ""}, Status: 410})
	e.proxy.Inject(Rule{Verb: "get", Resource: "configmaps", Namespace: "other", Status: 404})
	e.proxy.Inject(Rule{Verb: "create", Resource: "configmaps", Status: 500, Count: 2})

	if _, err := cm.List(ctx, metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
		t.Errorf("NotOlderThan must pass: %v", err)
	}
	if _, err := cm.List(ctx, metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
		t.Errorf("Exact must get 410: %v", err)
	}
	if _, err := cm.List(ctx, metav1.ListOptions{Limit: 1, Continue: "tok"}); !apierrors.IsResourceExpired(err) {
		t.Errorf("continue (any value) must get 410: %v", err)
	}
	if _, err := cm.Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Errorf("get in default must pass: %v", err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("other").Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get in other must 404: %v", err)
	}
	newCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "default"}}
	for i := 0; i < 2; i++ {
		if _, err := cm.Create(ctx, newCM, metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
			t.Errorf("create %d must 500: %v", i, err)
		}
	}
	if _, err := cm.Create(ctx, newCM, metav1.CreateOptions{}); err != nil {
		t.Errorf("third create must pass (Count 2): %v", err)
	}
	e.proxy.ClearRules()
	if _, err := cm.List(ctx, metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}); err != nil {
		t.Errorf("after ClearRules: %v", err)
	}
}

// TestForwardingIsTransparent: headers reach the backend unchanged over
// HTTP/2 on both legs, the token never reaches the log, bodies pass through.
func TestForwardingIsTransparent(t *testing.T) {
	e := newEnv(t, 1, nil)
	ctx := ctxT(t, 20*time.Second)
	e.cfg.UserAgent = "faults-test/1.0"
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "echo" || got.Data["k"] != "v" {
		t.Errorf("body did not round-trip: %+v", got)
	}
	b := e.backends[0].requests()
	if len(b) != 1 {
		t.Fatalf("backend requests: %+v", b)
	}
	h := b[0].Header
	if h.Get("Authorization") != "Bearer "+testToken || h.Get("User-Agent") != "faults-test/1.0" ||
		h.Get("Content-Type") != "application/json" || h.Get("Accept") != "application/json" {
		t.Errorf("headers changed: %v", h)
	}
	if b[0].Proto != "HTTP/2.0" {
		t.Errorf("proxy->backend must be HTTP/2, got %s", b[0].Proto)
	}
	reqs := e.proxy.Requests()
	if len(reqs) != 1 || reqs[0].Proto != "HTTP/2.0" || reqs[0].Verb != "create" || reqs[0].Status != 201 || !reqs[0].Done {
		t.Errorf("request log: %+v", reqs)
	}
	if strings.Contains(e.log.String(), testToken) || !strings.Contains(e.log.String(), "verb=create") {
		t.Errorf("log must have the request and never the token:\n%s", e.log.String())
	}
}

func TestStripParams(t *testing.T) {
	e := newEnv(t, 1, nil)
	ctx := ctxT(t, 20*time.Second)
	cm := e.cs.CoreV1().ConfigMaps("default")
	e.proxy.StripParams("resourceVersionMatch", "sendInitialEvents")

	if _, err := cm.List(ctx, metav1.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	sendInitial := true
	w, err := cm.Watch(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: &sendInitial, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	e.proxy.StripParams()
	if _, err := cm.List(ctx, metav1.ListOptions{ResourceVersion: "7", ResourceVersionMatch: metav1.ResourceVersionMatchExact}); err != nil {
		t.Fatal(err)
	}

	b := e.backends[0].requests()
	if len(b) != 3 {
		t.Fatalf("backend got %d requests", len(b))
	}
	for i, r := range b[:2] {
		if strings.Contains(r.RawQuery, "resourceVersionMatch") || strings.Contains(r.RawQuery, "sendInitialEvents") {
			t.Errorf("request %d: stripped params reached the backend: %s", i, r.RawQuery)
		}
	}
	if !strings.Contains(b[0].RawQuery, "resourceVersion=7") || !strings.Contains(b[0].RawQuery, "limit=10") {
		t.Errorf("other params must pass: %s", b[0].RawQuery)
	}
	if !strings.Contains(b[1].RawQuery, "watch=true") || !strings.Contains(b[1].RawQuery, "allowWatchBookmarks=true") {
		t.Errorf("watch params must pass: %s", b[1].RawQuery)
	}
	if !strings.Contains(b[2].RawQuery, "resourceVersionMatch=Exact") {
		t.Errorf("after StripParams() nothing is stripped: %s", b[2].RawQuery)
	}
	reqs := e.proxy.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[0].RawQuery, "resourceVersionMatch=Exact") || strings.Contains(reqs[0].ForwardedQuery, "resourceVersionMatch") ||
		reqs[0].ForwardedQuery != b[0].RawQuery || reqs[1].Verb != "watch" || reqs[2].ForwardedQuery != reqs[2].RawQuery {
		t.Errorf("request log: %+v", reqs)
	}
}

func recv(t *testing.T, ch <-chan watch.Event, d time.Duration) (watch.Event, bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-timer.C:
		t.Fatalf("no watch event or close within %s", d)
		return watch.Event{}, false
	}
}

// noRecv asserts nothing arrives on ch within d (a bounded negative check).
func noRecv(t *testing.T, ch <-chan watch.Event, d time.Duration, what string) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		t.Fatalf("%s: got %v %v", what, ev.Type, ok)
	case <-timer.C:
	}
}

func TestRequestLogIsBounded(t *testing.T) {
	e := newEnv(t, 1, func(o *Options) { o.MaxLoggedRequests = 20 })
	for i := 0; i < 45; i++ {
		if _, err := e.listFrom(t); err != nil {
			t.Fatal(err)
		}
	}
	reqs := e.proxy.Requests()
	if len(reqs) == 0 || len(reqs) > 20 || reqs[len(reqs)-1].Seq != 45 {
		t.Fatalf("log holds %d entries, last %+v", len(reqs), reqs[len(reqs)-1])
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Seq != reqs[i-1].Seq+1 {
			t.Fatalf("log not contiguous at %d: %d after %d", i, reqs[i].Seq, reqs[i-1].Seq)
		}
	}
	e.proxy.ResetRequests()
	if n := len(e.proxy.Requests()); n != 0 {
		t.Fatalf("after ResetRequests: %d", n)
	}
}

// TestResetAndRawRetryAfter: Rule.Reset closes the client's connection
// without an answer (client-go sees a transport error, never a status), and
// Rule.RetryAfter sends its header verbatim.
func TestResetAndRawRetryAfter(t *testing.T) {
	e := newEnv(t, 1, nil)
	ctx := ctxT(t, 20*time.Second)
	cfg := rest.CopyConfig(e.cfg)
	cfg.Dial = (&net.Dialer{}).DialContext // a transport of its own
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.Inject(Rule{Verb: "list", Resource: "configmaps", Reset: true, Count: 1})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.proxy.URL()+"/api/v1/namespaces/default/configmaps", nil)
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a reset request got an answer: %d", resp.StatusCode)
	}
	reqs := e.proxy.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Fault, "connection reset") || reqs[0].Backend != -1 {
		t.Errorf("requests: %+v", reqs)
	}

	e.proxy.Inject(Rule{Verb: "list", Resource: "configmaps", Status: 429, RetryAfter: "-1", Count: 1})
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, e.proxy.URL()+"/api/v1/namespaces/default/configmaps", nil)
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "-1" {
		t.Errorf("got %d Retry-After %q, want 429 -1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestResetStalled: a request a Rule.Stall holds keeps being held after the
// rule is removed, until ResetStalled resets its connection.
func TestResetStalled(t *testing.T) {
	e := newEnv(t, 1, nil)
	ctx := ctxT(t, 20*time.Second)
	cfg := rest.CopyConfig(e.cfg)
	cfg.Dial = (&net.Dialer{}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := e.proxy.Inject(Rule{Verb: "list", Resource: "configmaps", Stall: true})
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.proxy.URL()+"/api/v1/namespaces/default/configmaps", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	testfake.WaitFor(t, "the request is held", func() bool { return len(e.proxy.Requests()) == 1 })
	e.proxy.Remove(id)
	select {
	case err := <-errc:
		t.Fatalf("answered after the rule was removed, before ResetStalled: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	e.proxy.ResetStalled()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a reset request got an answer")
		}
	case <-ctx.Done():
		t.Fatal("still held after ResetStalled")
	}
	testfake.WaitFor(t, "the request is logged as reset", func() bool {
		r := e.proxy.Requests()
		return len(r) == 1 && r[0].Done && strings.Contains(r[0].Fault, "connection reset")
	})
}

func TestWatchTimeoutCapsWhatTheBackendIsAsked(t *testing.T) {
	e := newEnv(t, 1, nil)
	ctx := ctxT(t, 20*time.Second)
	cm := e.cs.CoreV1().ConfigMaps("default")
	long, short := int64(300), int64(2)
	e.proxy.SetStreamFaults(StreamFaults{WatchTimeout: 4 * time.Second})
	for _, o := range []metav1.ListOptions{{TimeoutSeconds: &long}, {TimeoutSeconds: &short}, {}} {
		w, err := cm.Watch(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
	}
	if _, err := cm.List(ctx, metav1.ListOptions{TimeoutSeconds: &long}); err != nil {
		t.Fatal(err)
	}
	e.proxy.SetStreamFaults(StreamFaults{})
	w, err := cm.Watch(ctx, metav1.ListOptions{TimeoutSeconds: &long})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()

	b := e.backends[0].requests()
	want := []string{"timeoutSeconds=4", "timeoutSeconds=2", "timeoutSeconds=4", "timeoutSeconds=300", "timeoutSeconds=300"}
	if len(b) != len(want) {
		t.Fatalf("backend got %d requests, want %d", len(b), len(want))
	}
	for i, r := range b {
		if got := strings.Count(r.RawQuery, "timeoutSeconds="); got != 1 || !strings.Contains(r.RawQuery, want[i]) {
			t.Errorf("request %d (%s %s): want %s once, got %q", i, r.Method, r.Path, want[i], r.RawQuery)
		}
		if i < 3 && !strings.Contains(r.RawQuery, "watch=true") {
			t.Errorf("request %d: the other parameters must pass: %q", i, r.RawQuery)
		}
	}
}
