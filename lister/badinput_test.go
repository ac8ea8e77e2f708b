package lister

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	"github.com/steadywatch/steadywatch/internal/policy"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/testfake"
)

// A resourceVersion no answer can satisfy ends the call as soon as an answer
// proves it: the first "too large" is checked by one consistent limit=1 read,
// and a requested version newer than the server's current one fails at once
// with its typed error, on every semantic that carries a resourceVersion,
// with no wait and no retry that cannot succeed.
func TestImpossibleResourceVersionFailsFast(t *testing.T) {
	future := "99999999"
	etcdFuture := apierrors.NewInternalError(errors.New("etcdserver: mvcc: required revision is a future revision"))
	for _, c := range []struct {
		name   string
		q      Query
		server compat.Server
		first  error
		exact  bool
	}{
		{"NotOlderThan, watch cache 504", NotOlderThan(future), nil, testfake.TooLarge(1), false},
		{"NotOlderThan with a limit, watch cache 504", NotOlderThan(future).WithLimit(500), nil, testfake.TooLarge(1), false},
		{"Exact, watch cache 504", Exact(future), nil, testfake.TooLarge(1), true},
		{"Exact on a legacy server, etcd future revision", Exact(future).WithLimit(500), staticServer(capability.No, capability.No), etcdFuture, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(c.first), page("40", "", "a")}}
			p := policy.Policy{MaxRetryAfter: 10 * time.Second} // the defaults otherwise: a wait would show
			start := time.Now()
			_, rec, err := New(s, knobs.WithLister(Options{Server: c.server}, knobs.Lister{Policy: p})).List(context.Background(), c.q)
			var tl *ResourceVersionTooLargeError
			if !errors.As(err, &tl) || tl.Requested != future || tl.Current != "40" || !errors.Is(err, ErrTooLargeResourceVersion) {
				t.Fatalf("err %v, want a *ResourceVersionTooLargeError naming current 40", err)
			}
			if c.exact && !errors.Is(err, ErrExactUnavailable) {
				t.Fatalf("an Exact list: %v does not match ErrExactUnavailable", err)
			}
			calls := s.calls()
			if len(calls) != 2 || calls[1].Limit != 1 || calls[1].ResourceVersion != "" || len(rec.Requests) != 2 {
				t.Fatalf("%d requests (%+v), want the list and one consistent limit=1 read", len(calls), calls)
			}
			if el := time.Since(start); el > time.Second {
				t.Fatalf("took %v: waited although the answer proved the request impossible", el)
			}
			want := []fallback.ReasonCode{"too-large-rv-check-exists", "requested-rv-newer-than-server"}
			if got := reasons(rec); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
				t.Fatalf("reasons %v, want %v", got, want)
			}
		})
	}
}

// A MostRecent read is the newest state: when the fallback to it is served
// older than the caller's floor, the floor was never handed out; the call
// fails at once instead of retrying a read that cannot get newer.
func TestMostRecentOlderThanFloorFailsAtOnce(t *testing.T) {
	s := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(testfake.Gone()), page("5", "", "old")}}
	p := policy.Policy{MaxNewerRVRetries: -1}
	_, rec, err := New(s, knobs.WithLister(Options{}, knobs.Lister{Policy: p})).List(context.Background(), NotOlderThan("10").WithLimit(5))
	var tl *ResourceVersionTooLargeError
	if !errors.As(err, &tl) || tl.Current != "5" || len(s.calls()) != 2 || len(rec.Requests) != 2 {
		t.Fatalf("err %v after %d requests", err, len(s.calls()))
	}
}

// A resourceVersion just ahead of the server's (a write in flight, a lagging
// member) is within reach: the call waits the Retry-After and asks again,
// and is served once the server gets there.
func TestNearFutureResourceVersionIsWaitedFor(t *testing.T) {
	s := &scripted{t: t, answers: []func(metav1.ListOptions) (runtime.Object, error){fail(testfake.TooLarge(0)), page("40", "", "a"), page("61", "", "a")}}
	p := fastPolicy()
	_, rec, err := New(s, knobs.WithLister(Options{}, knobs.Lister{Policy: p})).List(context.Background(), NotOlderThan("60"))
	if err != nil || rec.ServedResourceVersion != "61" || len(s.calls()) != 3 {
		t.Fatalf("err %v served %q after %d requests", err, rec.ServedResourceVersion, len(s.calls()))
	}
	want := []fallback.ReasonCode{"too-large-rv-check-exists", "too-large-rv-wait-retry-after"}
	if got := reasons(rec); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("reasons %v, want %v", got, want)
	}
}
