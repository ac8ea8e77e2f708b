package testfake

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Client is the one scripted fake of a lister.Client / reflector.Client
// (they are the same two methods) for unit tests of decision logic: each
// call is answered by a function given the call's index, so a test can
// return an exact sequence of pages and errors no real server would produce
// on demand. Every call's options are kept. Tests that want a server with
// real resourceVersion semantics use package steadywatchtest instead.
type Client struct {
	// T, when set, fails the test on a list request that sends
	// resourceVersion or resourceVersionMatch with a continue token (an
	// apiserver answers it 400; client-go's pager never sends it).
	T testing.TB
	// ListFn answers the n-th list (from 0). Nil answers every list with
	// an error.
	ListFn func(n int, o metav1.ListOptions) (runtime.Object, error)
	// WatchFn answers the n-th watch. Nil opens a watch.RaceFreeFakeWatcher
	// the test drives through Watcher.
	WatchFn func(n int, o metav1.ListOptions) (watch.Interface, error)

	mu      sync.Mutex
	lists   []metav1.ListOptions
	watches []metav1.ListOptions
	open    []*watch.RaceFreeFakeWatcher
	opened  chan struct{} // closed and replaced when a default watch opens
}

// Answers returns a ListFn that answers the n-th list with answers[n]; the
// last answer repeats. With no answers every list fails.
func Answers(answers ...func(o metav1.ListOptions) (runtime.Object, error)) func(int, metav1.ListOptions) (runtime.Object, error) {
	return func(n int, o metav1.ListOptions) (runtime.Object, error) {
		if len(answers) == 0 {
			return nil, fmt.Errorf("no list scripted")
		}
		return answers[min(n, len(answers)-1)](o)
	}
}

// Returns is an answer for Answers: a deep copy of obj (a fresh object per
// call, as a decoder hands out) or err.
func Returns(obj runtime.Object, err error) func(metav1.ListOptions) (runtime.Object, error) {
	return func(metav1.ListOptions) (runtime.Object, error) {
		if obj == nil {
			return nil, err
		}
		return obj.DeepCopyObject(), err
	}
}

// List implements the Client interfaces.
func (c *Client) List(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	if c.T != nil && o.Continue != "" && (o.ResourceVersion != "" || o.ResourceVersionMatch != "") {
		c.T.Errorf("request sends resourceVersion/match with continue: %+v", o)
	}
	n := len(c.lists)
	c.lists = append(c.lists, o)
	fn := c.ListFn
	c.mu.Unlock()
	if fn == nil {
		return nil, fmt.Errorf("no list scripted")
	}
	return fn(n, o)
}

// Watch implements the Client interfaces.
func (c *Client) Watch(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	n := len(c.watches)
	c.watches = append(c.watches, o)
	fn := c.WatchFn
	c.mu.Unlock()
	if fn != nil {
		return fn(n, o)
	}
	return c.OpenWatch(), nil
}

// OpenWatch opens the watch a nil WatchFn answers with and hands it to
// Watcher: a WatchFn that answers only some calls itself uses it for the
// others.
func (c *Client) OpenWatch() *watch.RaceFreeFakeWatcher {
	w := watch.NewRaceFreeFake()
	c.mu.Lock()
	c.open = append(c.open, w)
	if c.opened != nil {
		close(c.opened)
		c.opened = nil
	}
	c.mu.Unlock()
	return w
}

// Lists returns the options of every list so far, in order.
func (c *Client) Lists() []metav1.ListOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lists)
}

// Watches returns the options of every watch so far, in order.
func (c *Client) Watches() []metav1.ListOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.watches)
}

// Watcher waits up to timeout for the i-th watch opened without a WatchFn
// and returns it; false when it was not opened in time.
func (c *Client) Watcher(i int, timeout time.Duration) (*watch.RaceFreeFakeWatcher, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if len(c.open) > i {
			w := c.open[i]
			c.mu.Unlock()
			return w, true
		}
		if c.opened == nil {
			c.opened = make(chan struct{})
		}
		opened := c.opened
		c.mu.Unlock()
		select {
		case <-opened:
		case <-deadline.C:
			return nil, false
		}
	}
}

// Lazy holds a Client built on first use, for a test package's own fake
// type whose script fields composite literals set (and tests may change
// before the first call).
type Lazy struct {
	once sync.Once
	c    *Client
}

// Get returns the Client, built by build on the first call.
func (l *Lazy) Get(build func() *Client) *Client {
	l.once.Do(func() { l.c = build() })
	return l.c
}
