package testfake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// BlockingLists is a client (lister.Client with a RequestKey for listgate.Gate) whose
// collection lists (limit != 1) block until the test releases them, for
// tests of how many lists are in flight at once: each one sent puts a
// value on Entered, and each value on Proceed lets one answer. A limit=1
// list answers at once. Every answer is a ConfigMapList at resourceVersion
// "10"; a released collection list holds one ConfigMap "ns/a" at "9".
type BlockingLists struct {
	// Key is RequestKey's answer: "" never shares.
	Key string
	// Fail, when set, is every released collection list's answer.
	Fail error
	// Entered gets one value per collection list sent; Proceed lets one
	// answer per value. Both hold 64 values.
	Entered, Proceed chan struct{}

	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	sent        int
}

// NewBlockingLists returns a BlockingLists with no key and no failure.
func NewBlockingLists() *BlockingLists {
	return &BlockingLists{Entered: make(chan struct{}, 64), Proceed: make(chan struct{}, 64)}
}

// RequestKey returns Key.
func (b *BlockingLists) RequestKey() string { return b.Key }

// List answers a limit=1 list at once; a collection list waits for a value
// on Proceed (or the end of ctx).
func (b *BlockingLists) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	if o.Limit == 1 {
		return list, nil
	}
	b.mu.Lock()
	b.sent++
	b.inFlight++
	b.maxInFlight = max(b.maxInFlight, b.inFlight)
	b.mu.Unlock()
	b.Entered <- struct{}{}
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	select {
	case <-b.Proceed:
		if b.Fail != nil {
			return nil, b.Fail
		}
		list.Items = []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "9"}}}
		return list, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Watch fails: BlockingLists only lists.
func (b *BlockingLists) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errors.New("no watch")
}

// Counts returns how many collection lists were sent and the most that
// were in flight at once.
func (b *BlockingLists) Counts() (sent, maxInFlight int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent, b.maxInFlight
}

// WaitFor polls cond every millisecond until it holds (a poll with a
// deadline, not a sleep used as synchronisation); it fails the test when
// cond still does not hold after 10 seconds.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
