package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
	"github.com/steadywatch/steadywatch/steadywatchtest"
)

// This file is the fourth client, "wire": reflector.New over
// lister.FromClientset, whose lists the SDK decodes itself and applies to
// the store object by object as they are decoded (lister.ItemByItem), a
// list answered in one response included. It talks HTTP to a front
// (httptest) that serves its steadywatchtest server as a kube-apiserver
// serves a resource: the faults the history sets reach it unchanged, as
// status codes, watch ERROR events and streams that end.

const clientWire = "wire" // reflector.New over lister.FromClientset, through HTTP

// kindWholeList: a one-response list whose items none reached the store
// before its body ended, so the client did not decode it item by item
// (lister.ItemByItem) but waited for the whole body.
const kindWholeList = "whole-list"

// heldTailTimeout bounds how long the front holds back the end of a list
// body for the client to apply one of its items first. Item by item, the
// first item arrives within milliseconds; a client that waits for the whole
// body never applies one, and the list is counted whole (kindWholeList).
const heldTailTimeout = 5 * time.Second

// front serves one steadywatchtest server over HTTP: the core group's
// configmaps, GET list and watch, JSON only.
//
//   - a list is the server's answer encoded as the apiserver encodes it
//     (kind and apiVersion, then metadata, then items); a one-response list
//     with items is written up to its last item and its end held back until
//     the client has applied one of them to its store (itemByItem), or has
//     given the answer up, or heldTailTimeout passes;
//   - a watch is a chunked stream of metav1.WatchEvent, flushed per event,
//     that ends when the server's watch ends (a cut, a fault, timeoutSeconds)
//     or the client goes;
//   - an error is the server's Status with its code (and Retry-After from
//     its details, as the apiserver sets it).
type front struct {
	srv   *cmServer
	hold  bool // hold back the end of one-response lists (see list)
	ts    *httptest.Server
	tr    *http.Transport
	codec runtime.Encoder

	// requests counts every HTTP request received, before anything is read
	// from it: what the wire saw.
	requests atomic.Int64
	// Of the one-response lists with items: itemByItem, an item reached the
	// store before the body's end was written; gaveUp, the client closed
	// the answer first (it rejected the list's head or an item); whole, the
	// end was written after heldTailTimeout with no item applied.
	itemByItem, gaveUp, whole atomic.Int64

	mu   sync.Mutex
	held *heldList // the list whose end is held back
}

// heldList is a list answer whose end is held back: want holds its items
// (namespace/name@resourceVersion); applied is closed when one of them
// reaches the store.
type heldList struct {
	want    map[string]bool
	applied chan struct{}
	once    sync.Once
}

func newFront(srv *cmServer) *front {
	f := &front{srv: srv, codec: scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion)}
	f.ts = httptest.NewServer(f)
	// A transport of its own, closed with the front (client-go's cached
	// transports would outlive it).
	f.tr = &http.Transport{}
	return f
}

// config is a client configuration for the front. The rate limiter is off:
// the other clients call their servers directly and meet none, and a
// client-go token bucket in real time would hold back requests the model
// counts against stock's.
func (f *front) config() *rest.Config {
	return &rest.Config{Host: f.ts.URL, QPS: -1, Transport: f.tr}
}

func (f *front) close() {
	f.ts.Close()
	f.tr.CloseIdleConnections()
}

// applied is told of every object the client's store adds or updates: one
// of the held list's items ends its hold.
func (f *front) applied(obj any) {
	key, rv, _, _, err := object(obj)
	if err != nil {
		return
	}
	f.mu.Lock()
	h := f.held
	f.mu.Unlock()
	if h != nil && h.want[key+"@"+strconv.FormatUint(rv, 10)] {
		h.once.Do(func() { close(h.applied) })
	}
}

func (f *front) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	f.requests.Add(1)
	ns, ok := configMapsPath(req.URL.Path)
	if !ok || req.Method != http.MethodGet {
		f.fail(w, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, req.URL.Path))
		return
	}
	var o metav1.ListOptions
	// client-go's parameter codec (metav1.ParameterCodec's scheme has no
	// conversion from url.Values).
	if err := scheme.ParameterCodec.DecodeParameters(req.URL.Query(), corev1.SchemeGroupVersion, &o); err != nil {
		f.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if o.Watch {
		f.watch(w, req, ns, o)
		return
	}
	f.list(w, req, ns, o)
}

// configMapsPath reads /api/v1/configmaps and /api/v1/namespaces/NS/configmaps.
func configMapsPath(p string) (ns string, ok bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "configmaps":
		return "", true
	case len(parts) == 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces" && parts[4] == "configmaps":
		return parts[3], true
	}
	return "", false
}

func (f *front) list(w http.ResponseWriter, req *http.Request, ns string, o metav1.ListOptions) {
	obj, err := f.srv.InNamespace(ns).List(req.Context(), o)
	if err != nil {
		f.fail(w, err)
		return
	}
	var body bytes.Buffer
	if err := f.codec.Encode(obj, &body); err != nil {
		f.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	items, _ := meta.ExtractList(obj)
	// ConfigMapList's items are its last field: its end is "]}".
	end := bytes.LastIndexByte(body.Bytes(), ']')
	if !f.hold || o.Limit != 0 || len(items) == 0 || end < 0 {
		// The limit=1 reads of the current resourceVersion are decoded
		// whole (their item is no page's); paginated lists are not held.
		_, _ = w.Write(body.Bytes())
		return
	}
	h := &heldList{want: map[string]bool{}, applied: make(chan struct{})}
	for _, it := range items {
		if key, rv, _, _, err := object(it); err == nil {
			h.want[key+"@"+strconv.FormatUint(rv, 10)] = true
		}
	}
	f.mu.Lock()
	f.held = h
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if f.held == h {
			f.held = nil
		}
		f.mu.Unlock()
	}()
	_, _ = w.Write(body.Bytes()[:end])
	http.NewResponseController(w).Flush()
	t := time.NewTimer(heldTailTimeout)
	defer t.Stop()
	select {
	case <-h.applied:
		f.itemByItem.Add(1)
	case <-req.Context().Done():
		f.gaveUp.Add(1)
		return
	case <-t.C:
		f.whole.Add(1)
	}
	_, _ = w.Write(body.Bytes()[end:])
}

func (f *front) watch(w http.ResponseWriter, req *http.Request, ns string, o metav1.ListOptions) {
	wi, err := f.srv.InNamespace(ns).Watch(req.Context(), o)
	if err != nil {
		f.fail(w, err)
		return
	}
	defer wi.Stop()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	var obj bytes.Buffer
	for {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return // the server's watch ended: so does the stream
			}
			obj.Reset()
			if err := f.codec.Encode(ev.Object, &obj); err != nil {
				return
			}
			if enc.Encode(metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: obj.Bytes()}}) != nil || rc.Flush() != nil {
				return
			}
		case <-req.Context().Done():
			return
		}
	}
}

// fail answers with err's Status, as the apiserver does.
func (f *front) fail(w http.ResponseWriter, err error) {
	var st metav1.Status
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st = as.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	var body bytes.Buffer
	if err := f.codec.Encode(&st, &body); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body.Bytes())
}

// wireStore is the checked store (store) of the wire client, telling the
// front of every object it applies.
type wireStore struct {
	store
	f *front
}

func (s wireStore) Add(obj any) error    { s.f.applied(obj); return s.store.Add(obj) }
func (s wireStore) Update(obj any) error { s.f.applied(obj); return s.store.Update(obj) }

// startWire builds the wire client on server c's front.
func (r *run) startWire(c string, chk *checker) (func(context.Context), error) {
	f := newFront(r.servers[c])
	f.hold = true
	r.fronts[c] = f
	cs, err := kubernetes.NewForConfig(f.config())
	if err != nil {
		return nil, err
	}
	cl, err := lister.FromClientset(cs, &corev1.ConfigMap{}, r.h.namespace)
	if err != nil {
		return nil, err
	}
	refl := reflector.New(cl, &corev1.ConfigMap{}, wireStore{store: newStore(chk), f: f}, knobs.WithReflector(reflector.Options{Lister: lister.Options{LabelSelector: r.h.selector}}, knobs.Reflector{Clock: r.clk}))
	return refl.Run, nil
}

// wireResult is what the wire client's front saw in one play.
type wireResult struct {
	itemByItem, gaveUp, whole int
}

func (f *front) result() wireResult {
	return wireResult{itemByItem: int(f.itemByItem.Load()), gaveUp: int(f.gaveUp.Load()), whole: int(f.whole.Load())}
}

func (w wireResult) String() string {
	return fmt.Sprintf("%d one-response lists applied item by item, %d given up by the client, %d read whole", w.itemByItem, w.gaveUp, w.whole)
}

// TestWireFront checks that the front serves its server as it answers:
// watch events in order until the server ends the watch, lists, and the
// faults the model sets (410 on lists and inside watches, the lagging
// member's 504 with its Retry-After) as the apiserver sends them.
func TestWireFront(t *testing.T) {
	srv := steadywatchtest.New[*corev1.ConfigMap, *corev1.ConfigMapList](steadywatchtest.Options{})
	srv.Advance(1)
	f := newFront(srv)
	defer f.close()
	cs, err := kubernetes.NewForConfig(f.config())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := lister.FromClientset(cs, &corev1.ConfigMap{}, "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm := func(ns, name, tier string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"tier": tier}}}
	}
	mustApply := func(obj *corev1.ConfigMap) {
		if _, err := srv.Apply(obj); err != nil {
			t.Fatal(err)
		}
	}

	// A watch: the server's events in order, then a cut ends the stream.
	w, err := cl.Watch(ctx, metav1.ListOptions{ResourceVersion: srv.ResourceVersion(), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(cm("a", "x", "blue"))
	mustApply(cm("b", "x", "blue")) // another namespace
	mustApply(cm("a", "x", "green"))
	if err := srv.Delete("a", "x"); err != nil {
		t.Fatal(err)
	}
	srv.Bookmark()
	srv.Close()
	var got []string
	for ev := range w.ResultChan() {
		m, err := meta.Accessor(ev.Object)
		if err != nil {
			t.Fatalf("%s event with %T", ev.Type, ev.Object)
		}
		got = append(got, fmt.Sprintf("%s %s@%s", ev.Type, m.GetName(), m.GetResourceVersion()))
	}
	if want := []string{"ADDED x@2", "MODIFIED x@4", "DELETED x@5", "BOOKMARK @5"}; !slices.Equal(got, want) {
		t.Errorf("watch events %q, want %q", got, want)
	}

	// A list: the server's items at its resourceVersion.
	mustApply(cm("a", "y", "blue"))
	obj, err := cl.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*corev1.ConfigMapList); len(l.Items) != 1 || l.Items[0].Name != "y" || l.ResourceVersion != srv.ResourceVersion() {
		t.Errorf("list %v at %q, want [y] at %q", l.Items, l.ResourceVersion, srv.ResourceVersion())
	}

	// 410 on a list that names a resourceVersion.
	rv := srv.ResourceVersion()
	srv.SetFaults(steadywatchtest.Faults{GoneOnLists: true})
	if _, err := cl.List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
		t.Errorf("list under GoneOnLists: %v, want a 410", err)
	}

	// 410 inside a watch: an ERROR event with the Status, then the end.
	srv.SetFaults(steadywatchtest.Faults{GoneOnEveryWatch: true})
	w, err = cl.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for ev := range w.ResultChan() {
		s := string(ev.Type)
		if st, ok := ev.Object.(*metav1.Status); ok {
			s += fmt.Sprintf(" %d", st.Code)
		}
		got = append(got, s)
	}
	if want := []string{"ERROR 410"}; !slices.Equal(got, want) {
		t.Errorf("watch under GoneOnEveryWatch: %q, want %q", got, want)
	}

	// A lagging member answers a list newer than its cache with 504 and
	// Retry-After: 1, in the header as in the Status.
	srv.SetFaults(steadywatchtest.Faults{Lagging: 2})
	o := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	_, err = cl.List(ctx, o)
	if d, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTimeout(err) || !ok || d != 1 {
		t.Errorf("list from a lagging member: %v (delay %d, %v), want a 504 asking for 1s", err, d, ok)
	}
	q, err := scheme.ParameterCodec.EncodeParameters(&o, corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.tr.RoundTrip(httptest.NewRequestWithContext(ctx, http.MethodGet, f.ts.URL+"/api/v1/namespaces/a/configmaps?"+q.Encode(), nil).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("lagging member's answer: %d, Retry-After %q; want 504, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n, logged := f.requests.Load(), len(srv.Requests()); int(n) != logged {
		t.Errorf("the front received %d requests, the server logged %d", n, logged)
	}
}
