package engine

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RetryAfter returns the delay the server asked for (Retry-After header, or
// Status.details.retryAfterSeconds), if any.
func RetryAfter(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	secs, ok := apierrors.SuggestsClientDelay(err)
	if !ok || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}
