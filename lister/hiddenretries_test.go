package lister_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/lister"
)

// Every retry client-go's REST client makes inside one request (the list in
// fallback.NoHiddenRetries), against a server that counts the requests on
// the wire, through the SDK's own adapters built the usual way (no
// NoHiddenRetries): each request is sent once, each one the lister sends is
// in Record.Requests, and the caller gets a fast, typed error.

// answer answers with code and, unless ra is "", a Retry-After header.
func answer(code int, ra string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		st := apierrors.NewGenericServerResponse(code, "GET", schema.GroupResource{Resource: "configmaps"}, "", "busy", 0, true).ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q,"reason":%q,"code":%d}`, st.Message, st.Reason, code)
	}
}

// adapters builds each of the SDK's own Clients for ConfigMaps from cfg,
// with clients built the usual way.
func adapters(t *testing.T, cfg *rest.Config) map[string]lister.Client {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	typed, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "default")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := lister.FromRESTClient(lister.RESTResource{Client: cs.CoreV1().RESTClient(), Resource: "configmaps", Namespace: "default", List: &corev1.ConfigMapList{}})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := lister.FromDynamicConfig(cfg, gvr, "default")
	if err != nil {
		t.Fatal(err)
	}
	md, err := lister.FromMetadataConfig(cfg, gvr, "default")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]lister.Client{"FromClientset": typed, "FromRESTClient": rc, "FromDynamicConfig": dyn, "FromMetadataConfig": md}
}

// quick is a Policy whose own retries are fast: two retries, 1ms apart, and
// a server's Retry-After capped at 50ms.
var quick = knobs.WithLister(lister.Options{}, knobs.Lister{Policy: policy.Policy{
	MaxRetryAfter: 50 * time.Millisecond,
	Backoff:       policy.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Jitter: -1, MaxRetries: 2},
}})

// A 429 or 5xx with any Retry-After client-go parses (zero, negative,
// huge) is retried by client-go up to 10 times inside one request (11 on
// the wire per request, the huge one sleeping until the caller's deadline).
// The lister's own retries are the only ones: 3 requests, all in
// Record.Requests, each wait capped by Policy.MaxRetryAfter.
func TestListSendsEachRequestOnce(t *testing.T) {
	for _, c := range []struct {
		code int
		ra   string
		is   func(error) bool
	}{
		{429, "0", apierrors.IsTooManyRequests},
		{503, "-1", apierrors.IsServiceUnavailable},
		{429, "3600", apierrors.IsTooManyRequests},
		{500, "1", apierrors.IsInternalError},
	} {
		cfg, n := testfake.WireServer(t, false, answer(c.code, c.ra))
		for name, client := range adapters(t, cfg) {
			t.Run(fmt.Sprintf("%d Retry-After %s/%s", c.code, c.ra, name), func(t *testing.T) {
				n.Store(0)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				begin := time.Now()
				_, rec, err := lister.New(client, quick).List(ctx, lister.MostRecent())
				took := time.Since(begin)
				if got, sent := int(n.Load()), len(rec.Requests); got != 3 || sent != 3 {
					t.Fatalf("%d requests on the wire, %d in Record.Requests; want 3 and 3 (the lister's own retries only)", got, sent)
				}
				var le *lister.Error
				if !errors.As(err, &le) || !c.is(err) || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("error %v (%T); want a *lister.Error wrapping the server's %d", err, err, c.code)
				}
				if took > 3*time.Second {
					t.Fatalf("took %v: a wait was not capped", took)
				}
			})
		}
	}
}

// A watch whose connection fails (EOF; a TCP reset; HTTP/2 connection lost
// mid-request) is retried by client-go up to 10 times 1s apart, after which
// it returns an empty watch and no error. The SDK's adapters send it once
// and fail with a *fallback.ConnectionLostError.
func TestWatchConnectionFailureSentOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		h2   bool
		h    http.HandlerFunc
	}{
		{"EOF", false, testfake.HangUp},
		{"connection reset", false, testfake.ResetConn},
		{"HTTP/2 connection lost", true, testfake.HangUp},
	} {
		cfg, n := testfake.WireServer(t, c.h2, c.h)
		for name, client := range adapters(t, cfg) {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				n.Store(0)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				begin := time.Now()
				w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
				if w != nil {
					w.Stop()
				}
				if got := n.Load(); got != 1 {
					t.Fatalf("%d requests on the wire; want 1", got)
				}
				if !errors.Is(err, fallback.ErrConnectionLost) || engine.Classify(err) != vocab.Transport {
					t.Fatalf("watch = %v, %v; want a *fallback.ConnectionLostError (class transport)", w, err)
				}
				if took := time.Since(begin); took > 2*time.Second {
					t.Fatalf("took %v", took)
				}
			})
		}
	}
}

// A watch answered 429 or 5xx with a Retry-After is not retried inside
// client-go either; the caller gets the server's error at once.
func TestWatchRetryAfterSentOnce(t *testing.T) {
	for _, ra := range []string{"0", "-1", "3600"} {
		cfg, n := testfake.WireServer(t, false, answer(http.StatusTooManyRequests, ra))
		for name, client := range adapters(t, cfg) {
			t.Run("Retry-After "+ra+"/"+name, func(t *testing.T) {
				n.Store(0)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				begin := time.Now()
				_, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
				if got := n.Load(); got != 1 || !apierrors.IsTooManyRequests(err) {
					t.Fatalf("%d requests, error %v; want 1 and the 429", got, err)
				}
				if took := time.Since(begin); took > 2*time.Second {
					t.Fatalf("took %v", took)
				}
			})
		}
	}
}

// Inside the functions of a client the SDK did not build (FromFuncs over a
// typed client built the usual way), client-go retries a list on its own.
// The retries that would loop (at once after a 429 with Retry-After 0, or
// every second after a connection reset) are ended as client-go starts
// them, and the lister retries after its own backoff, with an error that
// says why. Over HTTP/1.1 and HTTP/2.
func TestUsersClientsLoopingRetriesAreCut(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		for _, c := range []struct {
			name      string
			h         http.HandlerFunc
			transport bool // the cut reads as a connection failure, not a status
		}{
			{"429 Retry-After 0", answer(http.StatusTooManyRequests, "0"), false},
			{"429 Retry-After -1", answer(http.StatusTooManyRequests, "-1"), false},
			{"connection reset", testfake.HangUp, true},
		} {
			t.Run(fmt.Sprintf("%s h2=%v", c.name, h2), func(t *testing.T) {
				cfg, n := testfake.WireServer(t, h2, c.h)
				cms := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")
				_, rec, err := lister.New(lister.FromFuncs(cms.List, cms.Watch), quick).List(context.Background(), lister.MostRecent())
				if err == nil || !strings.Contains(err.Error(), "client-go's REST client was sending the request again") {
					t.Fatalf("error %v; want the cut's", err)
				}
				var ne net.Error
				if isNet := errors.As(err, &ne); isNet != c.transport || apierrors.IsServiceUnavailable(err) == c.transport {
					t.Fatalf("error %v: net.Error %v, 503 %v; want a connection failure %v", err, isNet, apierrors.IsServiceUnavailable(err), c.transport)
				}
				// The cut ends the retry as client-go starts it: before it
				// is written, or (the transport races the context) as it is.
				total := 0
				for _, r := range rec.Requests {
					if r.WireRequests > 2 {
						t.Errorf("WireRequests %d; want at most 2 (client-go's own retry ended as it started; 11 without)", r.WireRequests)
					}
					total += r.WireRequests
				}
				if got := int(n.Load()); len(rec.Requests) < 2 || got > total {
					t.Fatalf("server saw %d requests, Record has %d taking %d; want the lister's own retry, and no request uncounted", got, len(rec.Requests), total)
				}
			})
		}
	}

	// Through NoHiddenRetries there is one request on the wire per request.
	cfg, n := testfake.WireServer(t, false, answer(http.StatusTooManyRequests, "0"))
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	_, rec, err := lister.New(lister.FromFuncs(cms.List, cms.Watch), quick).List(context.Background(), lister.MostRecent())
	if got := n.Load(); got != 3 || rec.Requests[0].WireRequests != 1 || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("NoHiddenRetries: %d on the wire, Record %+v, %v; want 3, 1 each, the 429", got, rec.Requests, err)
	}
}

// A retry client-go makes after the server's Retry-After of a second or
// more is left to it, and counted: the answer it ends with is the
// server's, and the retries it took are charged to the lister's budget.
func TestUsersClientsWaitingRetriesAreCounted(t *testing.T) {
	var calls atomic.Int32
	cfg, n := testfake.WireServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			answer(http.StatusTooManyRequests, "1")(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`)
	})
	cms := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")
	_, rec, err := lister.New(lister.FromFuncs(cms.List, cms.Watch), quick).List(context.Background(), lister.MostRecent())
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 || len(rec.Requests) != 1 || rec.Requests[0].WireRequests != 2 {
		t.Fatalf("server saw %d, Record %+v; want 2 on the wire in one request (client-go's retry after Retry-After 1)", got, rec.Requests)
	}
}

// A watch through a user's client whose connection fails: client-go's REST
// client would retry it on its own (11 requests, 1s apart) and then return
// an empty watch and no error; its retry is ended, and the lister returns
// a *fallback.ConnectionLostError.
// A function that returns an empty watch without any HTTP is left alone.
func TestUsersWatchLostConnectionIsAnError(t *testing.T) {
	cfg, n := testfake.WireServer(t, false, testfake.HangUp)
	cms := kubernetes.NewForConfigOrDie(fallback.NoHiddenRetries(cfg)).CoreV1().ConfigMaps("default")
	begin := time.Now()
	_, err := lister.FromFuncs(cms.List, cms.Watch).Watch(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
	if got := n.Load(); got != 1 || !errors.Is(err, fallback.ErrConnectionLost) || time.Since(begin) > 2*time.Second {
		t.Fatalf("NoHiddenRetries: %d requests, %v; want 1 and a *fallback.ConnectionLostError at once", got, err)
	}
	if testing.Short() {
		t.Skip("client-go's 10 retries 1s apart")
	}
	// A client built the usual way retries every second on its own: the
	// retry is ended as it starts (written or not: net/http races it).
	n.Store(0)
	cms = kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default")
	_, err = lister.FromFuncs(cms.List, cms.Watch).Watch(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
	if got := n.Load(); got > 2 || !errors.Is(err, fallback.ErrConnectionLost) {
		t.Fatalf("plain client: %d requests, %v; want at most 2 (client-go's 11 without the cut) and a *fallback.ConnectionLostError", got, err)
	}

	empty := func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewEmptyWatch(), nil }
	list := func(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error) {
		return &corev1.ConfigMapList{}, nil
	}
	if w, err := lister.FromFuncs(list, empty).Watch(context.Background(), metav1.ListOptions{}); err != nil || w == nil {
		t.Fatalf("a function's own empty watch: %v, %v; want it unchanged", w, err)
	}
}
