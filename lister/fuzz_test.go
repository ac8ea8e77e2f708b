package lister

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// fuzzAnswer turns 4 bytes into one server answer: every ListMeta field the
// lister reads (resourceVersion, continue, remainingItemCount, items) or an
// error status, each possibly nonsense.
func fuzzAnswer(b []byte) func(metav1.ListOptions) (runtime.Object, error) {
	rvs := []string{"", "0", "5", "10", "11", "99999999999999999999", "abc", "-1", "10 "}
	conts := []string{"", "", "A", "B", "C", "A"}
	codes := []int{0, 0, 0, 410, 429, 500, 504, 400, 422, 403}
	rv, cont, code, n := rvs[int(b[0])%len(rvs)], conts[int(b[1])%len(conts)], codes[int(b[2])%len(codes)], int(b[3])%4
	return func(o metav1.ListOptions) (runtime.Object, error) {
		if code != 0 {
			st := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReasonUnknown, Message: "fuzz " + rv}}
			if code == 504 {
				st.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(b[3]), Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}
			}
			return nil, st
		}
		l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
		if b[3]&0x80 != 0 {
			r := int64(int8(b[3]))
			l.RemainingItemCount = &r
		}
		for i := range n {
			l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o" + strconv.Itoa(i), ResourceVersion: rv}})
		}
		return l, nil
	}
}

// FuzzListResponses feeds arbitrary sequences of list answers through a
// list call with each semantic: it never panics, always ends (the last
// answer repeats forever, so a loop would hang), returns either an error or
// a list served at a resourceVersion that satisfies the semantic, and sends
// a bounded number of requests.
func FuzzListResponses(f *testing.F) {
	f.Add([]byte{2, 2, 0, 1, 2, 3, 0, 1, 2, 0, 0, 1}, uint8(0))
	f.Add([]byte{3, 0, 3, 0, 3, 0, 0, 1}, uint8(2))
	f.Add([]byte{2, 1, 0, 1, 2, 1, 0, 1}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, sem uint8) {
		var ans []func(metav1.ListOptions) (runtime.Object, error)
		for i := 0; i+4 <= len(data) && len(ans) < 16; i += 4 {
			ans = append(ans, fuzzAnswer(data[i:i+4]))
		}
		if len(ans) == 0 {
			return
		}
		c := &scripted{t: t, answers: ans}
		q := []Query{MostRecent().WithLimit(2), Any(), NotOlderThan("10").WithLimit(2), Exact("10")}[int(sem)%4]
		p := fastPolicy()
		p.MaxRetryAfter = time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		obj, rec, err := New(c, knobs.WithLister(Options{PageSize: 2}, knobs.Lister{Policy: p, MaxRequests: 16})).List(ctx, q)
		if ctx.Err() != nil {
			t.Fatalf("%v did not end (%d requests)", q, len(c.calls()))
		}
		if n := len(c.calls()); n > 16+64 {
			t.Fatalf("%v: %d requests", q, n)
		}
		if err != nil {
			var le *Error
			if !errors.As(err, &le) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		switch q.Semantic {
		case Exact("").Semantic:
			if rec.ServedResourceVersion != "10" {
				t.Fatalf("Exact(10) served at %q", rec.ServedResourceVersion)
			}
		}
		if obj == nil {
			t.Fatal("nil list without error")
		}
	})
}

// FuzzInitialEvents feeds arbitrary streams through the streaming-list
// guard: it always ends (never hangs), never panics, and reports Ended only
// after the annotated end bookmark.
func FuzzInitialEvents(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3})
	f.Add([]byte{0, 2, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64 {
			data = data[:64]
		}
		fw := watch.NewRaceFreeFake()
		go func() {
			for i, b := range data {
				o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o" + strconv.Itoa(i), ResourceVersion: strconv.Itoa(int(b))}}
				switch b % 6 {
				case 0, 1:
					fw.Add(o)
				case 2:
					fw.Action(watch.Bookmark, o)
				case 3:
					o.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
					fw.Action(watch.Bookmark, o)
				case 4:
					fw.Modify(o)
				case 5:
					fw.Error(&metav1.Status{Code: 410})
				}
				if fw.IsStopped() {
					return
				}
			}
			fw.Stop()
		}()
		var last watch.Event
		out, _ := watchpipe.AwaitInitialEvents(nil, fw, watchpipe.GuardOptions{Timeout: 50 * time.Millisecond}, discard(), func(ev watch.Event) bool { last = ev; return true })
		fw.Stop()
		if out == watchpipe.InitialEventsEnded && (last.Type != watch.Bookmark || !watchpipe.IsInitialEventsEnd(last.Object)) {
			t.Fatalf("ended on %v", last.Type)
		}
	})
}
