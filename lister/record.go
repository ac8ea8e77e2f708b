package lister

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/fallback"
)

// Why a request was sent (SentRequest.Purpose).
const (
	purposePage         = "page"
	purposeNewerRVProbe = "newer-rv-probe"
)

// SentRequest is one request as it went on the wire and what came back.
type SentRequest struct {
	// Purpose says why it was sent: "page" (a page of the list, or its only
	// request) or "newer-rv-probe" (the limit=1 MostRecent list that
	// supplies a newer resourceVersion for rule 1 or a list restart, or the
	// current one: Lister.CurrentResourceVersion).
	Purpose string
	// Options are the wire ListOptions actually sent (selectors included).
	Options metav1.ListOptions
	// Form is the wire form used.
	Form fallback.WireForm
	// Class of the answer (after the executor's verification of ListMeta).
	Class fallback.Class
	// Err is the error returned, if any.
	Err error
	// ServedResourceVersion is the answer's ListMeta.resourceVersion.
	ServedResourceVersion string
	// Items is the number of items in the answer.
	Items int
	// MoreAfter: the answer carried a continue token.
	MoreAfter bool
	// Duration of the request.
	Duration time.Duration
	// Shared: another reader's identical request answered this one through
	// Options.ListGate (its answer copied; no request of its own was sent).
	Shared bool
	// WireRequests is how many HTTP requests this one took on the wire:
	// 1, or more when client-go's REST client retried it on its own (a
	// client of FromFuncs, FromDynamic, FromMetadata or FromListerWatcher
	// not built from fallback.NoHiddenRetries; see there), or when net/http
	// followed redirects; 0 when Shared, or when the client sent nothing
	// over net/http (a fake).
	WireRequests int
}

// Record is what one list call sent and what it served.
type Record struct {
	// Requested is the query the caller asked for.
	Requested fallback.Query
	// Served is the first-page query whose snapshot was handed over (after fallbacks).
	Served fallback.Query
	// ServedResourceVersion is the ListMeta.resourceVersion of the handed-over snapshot.
	ServedResourceVersion string
	// Requests lists every request in order, probes included.
	Requests []SentRequest
	// Fallbacks lists every decision other than Accept, in order (retries of
	// the same request, fallbacks to another request, restarts, the final failure).
	Fallbacks []fallback.Event
	// RemainingItemCount is the last page's remainingItemCount (nil when the
	// server did not send one, e.g. with selectors or on the last page).
	RemainingItemCount *int64
	// Pages and Items count what was handed over for the final snapshot.
	Pages, Items int
	// Restarts counts lists restarted after a continue token expired.
	Restarts int
	// Duration of the whole call.
	Duration time.Duration
}
