package lister

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/internal/watchpipe"
)

// The streaming-list guard and the stall detector live in the SDK's one
// watch pipeline (internal/watchpipe), which the ListerWatcher and
// reflector.New share (kubectl-steadywatch and e2e import it directly).

// ErrNoWatchResponse: a watch request got no response (not even headers)
// within its bound (OpenWatch).
var ErrNoWatchResponse = watchpipe.ErrNoWatchResponse

// expectInitialEvents counts the objects a streaming list should send
// (beside it, one limit=1 list) unless knobs.Lister.DisableInitialEventsCount,
// or once the server was seen to stream lists (watchpipe.ExpectInitialEvents).
func (l *Lister) expectInitialEvents(ctx context.Context, base metav1.ListOptions) <-chan int {
	if l.o.knobs.DisableInitialEventsCount {
		return nil
	}
	return watchpipe.ExpectInitialEvents(ctx, l.c, base, l.o.Server)
}
