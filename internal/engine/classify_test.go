package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/steadywatch/steadywatch/fallback"

	. "github.com/steadywatch/steadywatch/internal/vocab"
)

func tooLargeCurrent() error {
	// As k8s.io/apiserver/pkg/storage.NewTooLargeResourceVersionError builds it (>= 1.18.6).
	err := apierrors.NewTimeoutError("Too large resource version: 20, current: 10", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

func tooLarge117() error {
	// 1.17.0-1.18.5: cause message only, no cause type.
	err := apierrors.NewTimeoutError("Too large resource version: 20, current: 10", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	return err
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name  string
		err   error
		want  Class
		after time.Duration
	}{
		{"nil", nil, OK, 0},
		{"410 expired", apierrors.NewResourceExpired("too old resource version: 5 (10)"), Gone, 0},
		//lint:ignore SA1019 servers still answer with reason Gone; the classifier must keep recognising it
		{"410 gone", apierrors.NewGone("gone"), Gone, 0},
		{"410 generic", apierrors.NewGenericServerResponse(410, "list", gr, "", "", 0, false), Gone, 0},
		{"504 too large cause", tooLargeCurrent(), TooLargeRV, time.Second},
		{"504 too large 1.17 cause message", tooLarge117(), TooLargeRV, time.Second},
		{"504 too large message only", apierrors.NewTimeoutError("Too large resource version: 20, current: 10", 0), TooLargeRV, 0},
		{"500 etcd future revision (1.18 from etcd)", apierrors.NewInternalError(errors.New("etcdserver: mvcc: required revision is a future revision")), TooLargeRV, 0},
		{"504 plain", apierrors.NewTimeoutError("request did not complete", 2), ServerError, 2 * time.Second},
		{"500", apierrors.NewInternalError(errors.New("boom")), ServerError, 0},
		{"503 with retry-after", apierrors.NewGenericServerResponse(503, "list", gr, "", "", 3, true), ServerError, 3 * time.Second},
		{"429", apierrors.NewTooManyRequests("slow down", 4), Throttled, 4 * time.Second},
		{"400", apierrors.NewBadRequest("specifying resource version is not allowed when using continue"), Invalid, 0},
		{"422", apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", nil), Invalid, 0},
		{"403", apierrors.NewForbidden(gr, "", errors.New("no")), Forbidden, 0},
		{"401", apierrors.NewUnauthorized("no"), Forbidden, 0},
		{"404", apierrors.NewNotFound(gr, "x"), NotFound, 0},
		{"409", apierrors.NewConflict(gr, "x", errors.New("c")), Other, 0},
		{"wrapped 410", fmt.Errorf("listing: %w", apierrors.NewResourceExpired("old")), Gone, 0},
		{"canceled", context.Canceled, Canceled, 0},
		{"deadline in url.Error", &url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded}, Canceled, 0},
		{"conn refused", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, Transport, 0},
		{"conn reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, Transport, 0},
		{"eof", fmt.Errorf("x: %w", io.EOF), Transport, 0},
		{"unexpected eof", io.ErrUnexpectedEOF, Transport, 0},
		{"net timeout", &net.DNSError{IsTimeout: true}, Transport, 0},
		{"other", errors.New("weird"), Other, 0},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("%s: Classify=%v want %v", c.name, got, c.want)
		}
		d, ok := RetryAfter(c.err)
		if d != c.after || (c.after > 0 && !ok) {
			t.Errorf("%s: RetryAfter=%v,%v want %v", c.name, d, ok, c.after)
		}
	}
	// The request decides what a 410 is: a continue token expired, or a
	// resourceVersion compacted away.
	if st := start(t, fallback.Query{Semantic: fallback.MostRecent, Limit: 1, Continue: "t"}, Config{}).Next(Answer{Err: apierrors.NewResourceExpired("x")}); st.Class != ContinueExpired {
		t.Errorf("410 on continue = %v", st.Class)
	}
	if st := start(t, fallback.Query{Semantic: fallback.NotOlderThan, ResourceVersion: "5", Limit: 1}, Config{}).Next(Answer{Err: apierrors.NewResourceExpired("x")}); st.Class != Gone {
		t.Errorf("410 without continue = %v", st.Class)
	}
}

func FuzzClassify(f *testing.F) {
	f.Add(int32(410), "Expired", "too old", "", "", int32(0))
	f.Add(int32(504), "Timeout", "Too large resource version: 3", "ResourceVersionTooLarge", "", int32(1))
	f.Add(int32(500), "InternalError", "etcdserver: mvcc: required revision is a future revision", "", "", int32(0))
	f.Fuzz(func(t *testing.T, code int32, reason, msg, causeType, causeMsg string, retry int32) {
		st := metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReason(reason), Message: msg,
			Details: &metav1.StatusDetails{RetryAfterSeconds: retry}}
		if causeType != "" || causeMsg != "" {
			st.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseType(causeType), Message: causeMsg}}
		}
		err := &apierrors.StatusError{ErrStatus: st}
		c := Classify(err)
		if c < OK || c >= Class(len(Classes())) || c == ContinueExpired || c == ServedNewerThanExact || c == ServedOlder || c == OK {
			t.Fatalf("Classify(%+v) = %v", st, c)
		}
		if c2 := Classify(fmt.Errorf("wrapped: %w", err)); c2 != c {
			t.Fatalf("wrapping changed the class: %v vs %v", c, c2)
		}
		if d, ok := RetryAfter(err); ok && d < 0 {
			t.Fatalf("negative Retry-After %v", d)
		}
		if c == Canceled || c == Transport {
			t.Fatalf("a Status classified as %v", c)
		}
		_ = c.String()
	})
}
