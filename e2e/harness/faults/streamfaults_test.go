package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/testfake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// sendBookmark pushes a BOOKMARK at rv to every open watch, with the
// initial-events-end annotation if end, and returns how many received it.
func (b *fakeAPI) sendBookmark(rv string, end bool) int {
	ann := ""
	if end {
		ann = `,"annotations":{"k8s.io/initial-events-end":"true"}`
	}
	line := fmt.Sprintf(`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":%q%s}}}`+"\n", rv, ann)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.watchers {
		ch <- line
	}
	return len(b.watchers)
}

// streamingList opens a client-go watch like a streaming list's (bookmarks
// allowed) through the proxy and waits until the backend serves it.
func (e *env) streamingList(t *testing.T) watch.Interface {
	t.Helper()
	mark := e.backends[0].watchMark()
	w, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 60*time.Second), metav1.ListOptions{
		AllowWatchBookmarks: true, SendInitialEvents: ptr(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	testfake.WaitFor(t, "watch at backend", func() bool { return e.backends[0].openSince(mark) == 1 })
	return w
}

func ptr[T any](v T) *T { return &v }

// wantBookmark receives one event and checks it is a BOOKMARK at rv with
// (or without) the initial-events-end annotation.
func wantBookmark(t *testing.T, w watch.Interface, rv string, end bool) {
	t.Helper()
	ev, ok := recv(t, w.ResultChan(), 5*time.Second)
	if !ok || ev.Type != watch.Bookmark {
		t.Fatalf("want BOOKMARK %s, got %v %#v", rv, ok, ev)
	}
	m := ev.Object.(metav1.Object)
	if m.GetResourceVersion() != rv || (m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true") != end {
		t.Fatalf("want BOOKMARK rv=%s initial-events-end=%v, got rv=%s annotations=%v", rv, end, m.GetResourceVersion(), m.GetAnnotations())
	}
}

// wantCleanEnd asserts the result channel closes without an Error event.
func wantCleanEnd(t *testing.T, w watch.Interface) {
	t.Helper()
	if ev, ok := recv(t, w.ResultChan(), 5*time.Second); ok {
		t.Fatalf("want a clean end of stream, got %v %#v", ev.Type, ev.Object)
	}
}

func watchFaults(e *env) []string {
	var out []string
	for _, r := range e.proxy.Requests() {
		if r.Verb == "watch" {
			out = append(out, r.Fault)
		}
	}
	return out
}

func TestStreamFaultsDropBookmarks(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.SetStreamFaults(StreamFaults{DropBookmarks: true})
	w := e.streamingList(t)
	e.backends[0].send("ADDED", "a", "11")
	e.backends[0].sendBookmark("11", false)
	e.backends[0].sendBookmark("12", true)
	e.backends[0].send("ADDED", "b", "13")
	wantEvent(t, w, "a")
	wantEvent(t, w, "b") // both bookmarks are gone, the events after them are not
	if f := watchFaults(e); len(f) != 1 || f[0] != "bookmarks dropped" {
		t.Errorf("watch faults %q, want [bookmarks dropped]", f)
	}
	// The events are read, so the stream is asked for uncompressed (a real
	// apiserver gzips watch streams for clients that accept it).
	got := e.backends[0].requests()
	if len(got) != 1 || got[0].Header.Get("Accept-Encoding") != "" {
		t.Errorf("backend got %d requests, Accept-Encoding %q; want 1 without it", len(got), got[0].Header.Get("Accept-Encoding"))
	}

	// StreamFaults{} restores plain forwarding for new streams.
	e.proxy.SetStreamFaults(StreamFaults{})
	w.Stop()
	testfake.WaitFor(t, "backend watch to end", func() bool { return e.backends[0].openWatches() == 0 })
	w2 := e.streamingList(t)
	e.backends[0].sendBookmark("14", true)
	wantBookmark(t, w2, "14", true)
}

func TestStreamFaultsStripInitialEventsEnd(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.SetStreamFaults(StreamFaults{StripInitialEventsEnd: true})
	w := e.streamingList(t)
	e.backends[0].send("ADDED", "a", "11")
	e.backends[0].sendBookmark("11", false)
	e.backends[0].sendBookmark("12", true)
	wantEvent(t, w, "a")
	wantBookmark(t, w, "11", false)
	wantBookmark(t, w, "12", false) // kept, with its resourceVersion, without the annotation
	if f := watchFaults(e); len(f) != 1 || f[0] != "initial-events-end stripped" {
		t.Errorf("watch faults %q", f)
	}
}

func TestStreamFaultsCutBeforeInitialEventsEnd(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.SetStreamFaults(StreamFaults{CutBeforeInitialEventsEnd: true})
	for round := 0; round < 2; round++ { // every time
		w := e.streamingList(t)
		e.backends[0].send("ADDED", "a", "11")
		e.backends[0].sendBookmark("11", false) // an ordinary bookmark passes
		e.backends[0].sendBookmark("12", true)
		wantEvent(t, w, "a")
		wantBookmark(t, w, "11", false)
		wantCleanEnd(t, w)
		testfake.WaitFor(t, "backend watch to end", func() bool { return e.backends[0].openWatches() == 0 })
	}
	if f := watchFaults(e); len(f) != 2 || f[0] != "cut before initial-events-end" || f[1] != f[0] {
		t.Errorf("watch faults %q", f)
	}
}

func TestStreamFaultsCloseAfterInitialEventsEndAndExpire(t *testing.T) {
	e := newEnv(t, 1, nil)
	// The backend may notice the end of the closed stream only after the
	// client has seen it: openWatch must not take it for the next watch.
	e.backends[0].lagEnds()
	e.proxy.SetStreamFaults(StreamFaults{CloseAfterInitialEventsEnd: true, ExpireInitialEventsEndRV: true})
	w := e.streamingList(t)
	e.backends[0].send("ADDED", "a", "11")
	e.backends[0].sendBookmark("12", true)
	wantEvent(t, w, "a")
	wantBookmark(t, w, "12", true)
	wantCleanEnd(t, w)

	// Resuming from the bookmark's RV: 410 as a watch ERROR event, without
	// reaching the backend.
	e.backends[0].reset()
	w2, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 30*time.Second), metav1.ListOptions{ResourceVersion: "12", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := recv(t, w2.ResultChan(), 5*time.Second)
	if !ok || ev.Type != watch.Error {
		t.Fatalf("want an ERROR event, got %v %#v", ok, ev)
	}
	if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "too old resource version: 12 (13)") {
		t.Errorf("want 410 Expired 'too old resource version: 12 (13)', got %v", err)
	}
	if n := len(e.backends[0].requests()); n != 0 {
		t.Errorf("the expired watch reached the backend (%d requests)", n)
	}
	// Another RV is forwarded; after ClearExpired, so is 12.
	w3 := e.openWatch(t, 0)
	e.backends[0].send("ADDED", "b", "13")
	wantEvent(t, w3, "b")
	e.proxy.ClearExpired()
	if _, ok := e.proxy.expiredWatch(requestInfo{Verb: "watch"}, url.Values{"resourceVersion": {"12"}}); ok {
		t.Error("12 still expired after ClearExpired")
	}
}

func TestEmptyWatchRule(t *testing.T) {
	e := newEnv(t, 1, nil)
	id := e.proxy.Inject(Rule{Resource: "configmaps", EmptyWatch: true,
		Match: func(q url.Values) bool { return q.Get("sendInitialEvents") != "true" }})
	for i := 0; i < 3; i++ {
		w, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 30*time.Second), metav1.ListOptions{ResourceVersion: "5"})
		if err != nil {
			t.Fatalf("an empty watch is a 200: %v", err)
		}
		wantCleanEnd(t, w)
	}
	if n := len(e.backends[0].requests()); n != 0 {
		t.Errorf("empty watches reached the backend (%d requests)", n)
	}
	// Lists and (by Match) streaming lists are not matched.
	if _, err := e.cs.CoreV1().ConfigMaps("default").List(ctxT(t, 30*time.Second), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w := e.streamingList(t)
	e.backends[0].send("ADDED", "a", "11")
	wantEvent(t, w, "a")
	for _, r := range e.proxy.Requests() {
		if want := r.Verb == "watch" && r.RawQuery == "resourceVersion=5&watch=true"; (r.Fault == fmt.Sprintf("rule %d: empty watch", id)) != want || (want && r.Status != 200) {
			t.Errorf("log entry %+v", r)
		}
	}
}

func TestRuleMatchOnAbsentResourceVersion(t *testing.T) {
	e := newEnv(t, 1, nil)
	// A consistent (RV="") list answered 429 with Retry-After; other lists pass.
	e.proxy.Inject(Rule{Verb: "list", Status: 429, RetryAfterSeconds: 2,
		Match: func(q url.Values) bool { return q.Get("resourceVersion") == "" }})
	ctx := ctxT(t, 30*time.Second)
	err := e.cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").MaxRetries(0).Do(ctx).Error()
	if s, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTooManyRequests(err) || !ok || s != 2 {
		t.Errorf("RV=\"\" list: want 429 with Retry-After 2, got %v", err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Errorf("RV=0 list must pass: %v", err)
	}
}

func TestRuleSendInitialEventsForbidden(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.Inject(Rule{Verb: "watch", Query: map[string]string{"sendInitialEvents": "true"}, Status: 422,
		Message: SendInitialEventsForbiddenMessage})
	_, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctxT(t, 30*time.Second), metav1.ListOptions{
		AllowWatchBookmarks: true, SendInitialEvents: ptr(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled") {
		t.Errorf("want 422 Invalid sendInitialEvents forbidden, got %v", err)
	}
	w := e.openWatch(t, 0) // a plain watch passes
	e.backends[0].send("ADDED", "a", "11")
	wantEvent(t, w, "a")
}

func TestRuleTooLargeWithoutCauseType(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.Inject(TooLargeResourceVersionLegacy(Rule{Verb: "list"}, "50"))
	err := e.cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").Param("resourceVersion", "100").MaxRetries(0).Do(ctxT(t, 30*time.Second)).Error()
	if !apierrors.IsTimeout(err) || apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) ||
		!strings.Contains(err.Error(), "Too large resource version, current: 50") {
		t.Errorf("want a 504 Timeout 'Too large resource version, current: 50' without the cause type (1.17.0-1.18.5), got %v", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != "" || st.Details.Causes[0].Message != tooLargeCauseMessage || st.Details.RetryAfterSeconds != 1 {
		t.Errorf("details %+v, want one cause with only the message, retryAfterSeconds 1", st.Details)
	}
}

// TestProtobufInitialEventsEnd encodes a bookmark like the apiserver's
// protobuf watch and checks inspection and stripping.
func TestProtobufInitialEventsEnd(t *testing.T) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: "42", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true", "keep": "me"}}}
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var obj bytes.Buffer
	if err := ser.Encode(cm, &obj); err != nil {
		t.Fatal(err)
	}
	ev := metav1.WatchEvent{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: obj.Bytes()}}
	raw, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	info, err := inspectEvent(mediaProtobuf, raw)
	if err != nil || info != (eventInfo{Type: "BOOKMARK", ResourceVersion: "42", InitialEventsEnd: true}) {
		t.Fatalf("inspect: %+v %v", info, err)
	}
	stripped, err := stripInitialEventsEnd(mediaProtobuf, raw)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := inspectEvent(mediaProtobuf, stripped); err != nil || info != (eventInfo{Type: "BOOKMARK", ResourceVersion: "42"}) {
		t.Fatalf("inspect stripped: %+v %v", info, err)
	}
	var out metav1.WatchEvent
	if err := out.Unmarshal(stripped); err != nil {
		t.Fatal(err)
	}
	got, _, err := ser.Decode(out.Object.Raw, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := got.(*corev1.ConfigMap); m.ResourceVersion != "42" || len(m.Annotations) != 1 || m.Annotations["keep"] != "me" {
		t.Errorf("stripped object %+v", m.ObjectMeta)
	}
	// Framing: a 4-byte big-endian length, then the event.
	if f := frame(mediaProtobuf, raw); len(f) != len(raw)+4 || int(f[3])+int(f[2])<<8 != len(raw) {
		t.Errorf("frame header % x for %d bytes", f[:4], len(raw))
	}
	// An ADDED event is never an end.
	ev.Type = "ADDED"
	raw, _ = ev.Marshal()
	if info, err := inspectEvent(mediaProtobuf, raw); err != nil || info.InitialEventsEnd {
		t.Errorf("ADDED with the annotation: %+v %v", info, err)
	}
	if _, err := inspectEvent(mediaProtobuf, []byte{0xff, 0xff}); err == nil {
		t.Error("garbage must not decode")
	}
}

func TestStreamFaultsPauseAfterEvents(t *testing.T) {
	e := newEnv(t, 1, nil)
	const pause = 700 * time.Millisecond
	e.proxy.SetStreamFaults(StreamFaults{PauseAfterEvents: 2, PauseFor: pause})
	w := e.streamingList(t)
	// The pause starts once the proxy has written the second event, after
	// sent; when the client reads that event is up to the scheduler, so
	// the third is timed from sent, not from the client's read of the second.
	sent := time.Now()
	e.backends[0].send("ADDED", "a", "11")
	e.backends[0].send("ADDED", "b", "12")
	e.backends[0].send("ADDED", "c", "13")
	e.backends[0].sendBookmark("13", true)
	wantEvent(t, w, "a")
	wantEvent(t, w, "b")
	wantEvent(t, w, "c") // after the pause, once
	if d := time.Since(sent); d < pause {
		t.Errorf("the third event came %s after the events were sent, want at least the %s pause", d, pause)
	}
	wantBookmark(t, w, "13", true)
	e.backends[0].send("ADDED", "d", "14")
	wantEvent(t, w, "d") // not paused again
	// The proxy counts an event once it was written to the client, which
	// may read it first: wait for the count.
	var rec Request
	testfake.WaitFor(t, "the request log to count 5 events", func() bool {
		for _, r := range e.proxy.Requests() {
			if r.Verb == "watch" {
				rec = r
			}
		}
		return rec.Events >= 5
	})
	if rec.Fault != "paused 700ms after 2 events" || rec.Events != 5 || rec.InitialEventsEnd.IsZero() {
		t.Errorf("request log: fault %q events %d initial-events-end %v", rec.Fault, rec.Events, rec.InitialEventsEnd)
	}
}

func TestStallRule(t *testing.T) {
	e := newEnv(t, 1, nil)
	id := e.proxy.Inject(Rule{Verb: "list", Stall: true, Query: map[string]string{"labelSelector": "stuck=true"}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := e.cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "stuck=true"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stalled list must end only with the client's context, got %v", err)
	}
	// Other lists pass.
	if _, err := e.cs.CoreV1().ConfigMaps("default").List(ctxT(t, 30*time.Second), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.backends[0].requests()); n != 1 {
		t.Errorf("%d requests reached the backend, want 1 (the stalled one never does)", n)
	}
	// The proxy logs the stalled request once it sees the client hang up,
	// which may come after the client's own deadline error: wait for it.
	var stalled []Request
	testfake.WaitFor(t, "the stalled request to be logged as done", func() bool {
		stalled = stalled[:0]
		for _, r := range e.proxy.Requests() {
			if r.Fault != "" {
				stalled = append(stalled, r)
			}
		}
		return len(stalled) == 1 && stalled[0].Done
	})
	if len(stalled) != 1 || stalled[0].Fault != fmt.Sprintf("rule %d: stalled without an answer", id) || stalled[0].Status != 0 || !stalled[0].Done {
		t.Fatalf("log entries with a fault %+v", stalled)
	}
}

func TestStreamFaultsEndAfterBookmarkRV(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.proxy.SetStreamFaults(StreamFaults{BookmarkRV: "abc", EndAfterBookmarkRV: true})
	w := e.streamingList(t)
	e.backends[0].send("ADDED", "a", "11")
	e.backends[0].sendBookmark("12", true) // the end of the initial events: kept as it is
	wantEvent(t, w, "a")
	wantBookmark(t, w, "12", true)
	e.backends[0].sendBookmark("13", false)
	wantBookmark(t, w, "abc", false)
	wantCleanEnd(t, w)
	if f := watchFaults(e); len(f) != 1 || f[0] != "bookmark RV 13 -> abc; ended after the rewritten bookmark" {
		t.Errorf("watch faults %q", f)
	}
}

func TestStreamFaultsDelayEventsHoldsEveryEventBackInOrder(t *testing.T) {
	e := newEnv(t, 1, nil)
	const delay = 400 * time.Millisecond
	e.proxy.SetStreamFaults(StreamFaults{DelayEvents: delay})
	w := e.streamingList(t)
	sent := time.Now()
	e.backends[0].send("ADDED", "a", "11")
	e.backends[0].send("ADDED", "b", "12")
	e.backends[0].sendBookmark("12", true)
	wantEvent(t, w, "a")
	if d := time.Since(sent); d < delay {
		t.Errorf("the first event came %s after it was sent, want at least the %s delay", d, delay)
	}
	wantEvent(t, w, "b")
	wantBookmark(t, w, "12", true)
	sent = time.Now()
	e.backends[0].send("ADDED", "c", "13")
	wantEvent(t, w, "c")
	if d := time.Since(sent); d < delay {
		t.Errorf("a later event came %s after it was sent, want at least the %s delay", d, delay)
	}
}
