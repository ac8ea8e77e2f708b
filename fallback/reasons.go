package fallback

import "github.com/steadywatch/steadywatch/internal/reason"

// ReasonCode names why the SDK took a decision: the Reason of an Event, of
// a lister *Error and of a canonical *RejectedError, the "reason" (or
// "cause") label of the SDK's metrics, and the "reason" key of the log line
// of every fallback. Reasons lists every value; docs/reasons.md gives each
// one's meaning. Compare with those string values, e.g.
// err.Reason == "exact-gone".
type ReasonCode string

// Reasons returns every reason code the SDK reports, each once, in a stable
// order (a new slice each call).
func Reasons() []ReasonCode {
	all := reason.All()
	out := make([]ReasonCode, len(all))
	for i, e := range all {
		out[i] = ReasonCode(e.Code)
	}
	return out
}
