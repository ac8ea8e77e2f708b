package lister

import (
	"context"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// The streaming-list guard and the stall detector live in the SDK's one
// watch pipeline (internal/watchpipe), which the ListerWatcher and
// reflector.New share. What follows forwards the parts other modules use
// (kubectl-steadywatch, e2e) and users may call.

// Defaults of GuardOptions (see watchpipe for their meaning).
const (
	// DefaultInitialEventsTimeout is the quiet time a streaming list may have
	// before its k8s.io/initial-events-end bookmark while the number of
	// initial events is not known.
	DefaultInitialEventsTimeout = watchpipe.DefaultInitialEventsTimeout
	// DefaultInitialEventsAfterCount is the quiet time allowed once every
	// expected initial event has arrived.
	DefaultInitialEventsAfterCount = watchpipe.DefaultInitialEventsAfterCount
	// DefaultInitialEventsBeforeCountFactor times the timeout is the quiet
	// allowed while a known count is not reached yet.
	DefaultInitialEventsBeforeCountFactor = watchpipe.DefaultInitialEventsBeforeCountFactor
)

// StatusReasonStreamingListUnsupported is the reason of the error event a
// guarded streaming list ends with.
const StatusReasonStreamingListUnsupported = watchpipe.StatusReasonStreamingListUnsupported

// GuardOptions configures AwaitInitialEvents.
type GuardOptions = watchpipe.GuardOptions

// InitialEventsOutcome is how the initial events of a streaming list ended.
type InitialEventsOutcome = watchpipe.InitialEventsOutcome

// Outcomes of AwaitInitialEvents.
const (
	InitialEventsEnded        = watchpipe.InitialEventsEnded
	InitialEventsError        = watchpipe.InitialEventsError
	InitialEventsNotStreaming = watchpipe.InitialEventsNotStreaming
	InitialEventsCut          = watchpipe.InitialEventsCut
	InitialEventsClosed       = watchpipe.InitialEventsClosed
	InitialEventsStopped      = watchpipe.InitialEventsStopped
)

// ErrNoWatchResponse: a watch request got no response (not even headers)
// within its bound (OpenWatch).
var ErrNoWatchResponse = watchpipe.ErrNoWatchResponse

// ExpectedInitialEvents returns how many objects a streaming list over c
// with base's selectors should send before its end bookmark (one limit=1
// MostRecent list); ok is false when the server does not say.
func ExpectedInitialEvents(ctx context.Context, c Client, base metav1.ListOptions) (n int, ok bool) {
	return watchpipe.ExpectedInitialEvents(ctx, c, base)
}

// expectInitialEvents counts the objects a streaming list should send
// (beside it, one limit=1 list) unless Options.DisableInitialEventsCount.
func (l *Lister) expectInitialEvents(ctx context.Context, base metav1.ListOptions) <-chan int {
	if l.o.knobs.DisableInitialEventsCount {
		return nil
	}
	return watchpipe.ExpectInitialEvents(ctx, l.c, base)
}

// AwaitInitialEvents is the one streaming-list guard of the SDK: it reads
// w's initial events, hands each to each, and returns when they end or when
// the server shows it does not stream lists.
func AwaitInitialEvents(stop <-chan struct{}, w watch.Interface, o GuardOptions, log logr.Logger, each func(watch.Event) bool) (InitialEventsOutcome, string) {
	return watchpipe.AwaitInitialEvents(stop, w, o, log, each)
}
