package faults

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rule makes the proxy answer matching requests itself with an
// apiserver-shaped error instead of forwarding them. Empty match fields match
// anything. Rules are tried in the order they were injected; the first match
// fires.
type Rule struct {
	// Verb is the apiserver's verb for the request: "get", "list", "watch",
	// "create", "update", "patch", "delete", "deletecollection", or for
	// non-resource paths the lower-cased method. Derived like the apiserver
	// (GET on a collection is "list", or "watch" with watch=1/true or under
	// the /watch/ path prefix). "" = any.
	Verb string
	// Resource is the resource ("configmaps") or resource/subresource
	// ("pods/status"). "configmaps" does not match a subresource request
	// (like RBAC). "" = any.
	Resource string
	// Namespace restricts the rule to one namespace. "" = any.
	Namespace string
	// Query lists parameters that must be present in the request as received
	// (before StripParams) with this value; a "" value = present with any
	// value.
	Query map[string]string
	// Count: fire this many times, then the rule is removed. 0 = until
	// Remove or ClearRules.
	Count int
	// Status is the HTTP status code to answer, 400-599 (410, 429, 500, 504...).
	Status int
	// RetryAfterSeconds > 0 adds the Retry-After header and
	// details.retryAfterSeconds, as the apiserver does.
	RetryAfterSeconds int
	// Reason defaults from Status: 410 Expired, 429 TooManyRequests,
	// 500 InternalError, 503 ServiceUnavailable, 504 Timeout, 422 Invalid,
	// 400 BadRequest, 404 NotFound, 403 Forbidden, 409 Conflict, ...
	Reason metav1.StatusReason
	// Message defaults to a short text naming the rule. For a 504 with a
	// ResourceVersionTooLarge cause it contains "Too large resource version"
	// like the apiserver's.
	Message string
	// Causes go into details.causes. A ResourceVersionTooLarge cause without
	// a message gets the apiserver's "Too large resource version".
	Causes []metav1.StatusCause
	// AsWatchEvent, for watch requests only, answers 200 and sends one ERROR
	// event carrying the Status, then ends the stream: what a watch served
	// from the watch cache does for a 410. Non-watch requests that match get
	// the plain error response.
	AsWatchEvent bool
	// Match, if set, is one more condition on the request's query as
	// received (before StripParams), for what Query cannot say: a parameter
	// absent, or any value but one (e.g. a resourceVersion other than ""
	// and "0"). It runs under the proxy's lock: it must not call the Proxy
	// or modify the values. nil = no condition.
	Match func(query url.Values) bool
	// EmptyWatch answers a matching watch with 200, the watch content type
	// and an immediate clean end of stream without any event: what a server
	// that should have answered 410 did in kubernetes/kubernetes#104171. A
	// rule with EmptyWatch matches watch requests only; Status, Reason,
	// Message, Causes and RetryAfterSeconds are ignored (Status may be 0).
	EmptyWatch bool
	// Stall answers nothing: a matching request is held without a response
	// (no status, no byte) until the client gives up (its context ends or
	// the connection closes), ResetStalled or the proxy closes, and never reaches the
	// backend: what a stuck proxy or an apiserver that accepted a request
	// and never served it looks like to a client without a request
	// timeout. Status, Reason, Message, Causes and RetryAfterSeconds are
	// ignored (Status may be 0).
	Stall bool
	// Reset answers nothing either, but at once: the client's connection is
	// closed with a TCP reset (no status, no byte), so the client sees
	// "connection reset by peer" or an EOF, as behind a load balancer or
	// proxy that drops connections. On HTTP/2 every other stream of that
	// connection (a watch of the same client) is lost with it. Status,
	// Reason, Message, Causes and RetryAfterSeconds are ignored (Status may
	// be 0).
	Reset bool
	// RetryAfter, when set, is sent as the Retry-After header verbatim
	// (e.g. "-1" or "0", which client-go parses and then retries at once;
	// kubernetes/kubernetes rest.checkWait), instead of the one
	// RetryAfterSeconds makes; details.retryAfterSeconds then follows
	// RetryAfterSeconds alone.
	RetryAfter string
}

type ruleState struct {
	id   int
	r    Rule
	left int // remaining firings when r.Count > 0
}

// Inject arms r and returns its id for Remove. It panics if r.Status is not
// 400-599 (unless r.EmptyWatch, r.Stall or r.Reset) or Count is negative (a test bug).
func (p *Proxy) Inject(r Rule) (id int) {
	if r.Stall || r.Reset {
		r.Status = 0
	} else if r.EmptyWatch {
		r.Status = http.StatusOK
	} else if r.Status < 400 || r.Status > 599 {
		panic(fmt.Sprintf("faults: Rule.Status %d is not 400-599", r.Status))
	}
	if r.Count < 0 {
		panic(fmt.Sprintf("faults: Rule.Count %d is negative", r.Count))
	}
	q := make(map[string]string, len(r.Query))
	for k, v := range r.Query {
		q[k] = v
	}
	r.Query = q
	r.Causes = append([]metav1.StatusCause(nil), r.Causes...)
	p.mu.Lock()
	defer p.mu.Unlock()
	id = p.nextRule
	p.nextRule++
	p.rules = append(p.rules, &ruleState{id: id, r: r, left: r.Count})
	return id
}

// Remove disarms the rule id; unknown or already disarmed ids are ignored.
func (p *Proxy) Remove(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(id)
}

func (p *Proxy) removeLocked(id int) {
	for i, rs := range p.rules {
		if rs.id == id {
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			return
		}
	}
}

// ClearRules disarms every rule.
func (p *Proxy) ClearRules() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Rules returns the armed rules by id, with Count set to the firings left
// (0 = unlimited).
func (p *Proxy) Rules() map[int]Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int]Rule, len(p.rules))
	for _, rs := range p.rules {
		r := rs.r
		r.Count = rs.left
		out[rs.id] = r
	}
	return out
}

// fire returns the first armed rule matching the request, consuming one
// firing, or ok=false.
func (p *Proxy) fire(info requestInfo, q url.Values) (id int, r Rule, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rs := range p.rules {
		if !rs.r.matches(info, q) {
			continue
		}
		if rs.r.Count > 0 {
			rs.left--
			if rs.left == 0 {
				p.removeLocked(rs.id)
			}
		}
		return rs.id, rs.r, true
	}
	return 0, Rule{}, false
}

func (r *Rule) matches(info requestInfo, q url.Values) bool {
	if r.Verb != "" && r.Verb != info.Verb {
		return false
	}
	if r.EmptyWatch && info.Verb != "watch" {
		return false
	}
	if r.Match != nil && !r.Match(q) {
		return false
	}
	if r.Resource != "" {
		res, sub, _ := strings.Cut(r.Resource, "/")
		if res != info.Resource || sub != info.Subresource {
			return false
		}
	}
	if r.Namespace != "" && r.Namespace != info.Namespace {
		return false
	}
	for k, want := range r.Query {
		got, present := q[k]
		if !present {
			return false
		}
		if want == "" {
			continue
		}
		found := false
		for _, v := range got {
			if v == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// answer answers the request with rule id's error, negotiated on its
// Accept header. It calls note with the status and the fault description
// for the log before any of the answer (or the connection reset) reaches
// the client, so that a client that has seen the answer finds it in the
// request log.
func (p *Proxy) answer(w http.ResponseWriter, req *http.Request, info requestInfo, id int, r Rule, note func(status int, fault string)) {
	media := negotiate(req.Header.Get("Accept"))
	if r.Stall {
		release := p.holding()
		select {
		case <-req.Context().Done(): // the client went away, or the proxy closed
			note(0, fmt.Sprintf("rule %d: stalled without an answer", id))
		case <-release:
			note(0, fmt.Sprintf("rule %d: stalled without an answer, then connection reset", id))
			resetConn(req.Context())
		}
		return
	}
	if r.Reset {
		note(0, fmt.Sprintf("rule %d: connection reset", id))
		resetConn(req.Context())
		return
	}
	if r.EmptyWatch {
		note(http.StatusOK, fmt.Sprintf("rule %d: empty watch", id))
		w.Header().Set("Content-Type", watchContentType(media))
		w.Header().Set("Cache-Control", "no-cache, private")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		return
	}
	st := r.status(id)
	fault := fmt.Sprintf("rule %d: %d %s", id, r.Status, st.Reason)
	if r.AsWatchEvent && info.Verb == "watch" {
		body, err := p.codec.encodeWatchEvent(media, "ERROR", st)
		if err != nil {
			p.logf("%v", err)
			panic(http.ErrAbortHandler)
		}
		note(http.StatusOK, fault+" as watch ERROR event")
		w.Header().Set("Content-Type", watchContentType(media))
		w.Header().Set("Cache-Control", "no-cache, private")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		_ = http.NewResponseController(w).Flush()
		return
	}
	note(r.Status, fault)
	if r.RetryAfter != "" {
		w.Header().Set("Retry-After", r.RetryAfter)
	}
	p.writeStatus(w, media, st)
}

// writeStatus writes st as an error response, as the apiserver's
// responsewriters.ErrorNegotiated does.
func (p *Proxy) writeStatus(w http.ResponseWriter, media string, st *metav1.Status) {
	body, err := p.codec.encodeStatus(media, st)
	if err != nil {
		p.logf("%v", err)
		panic(http.ErrAbortHandler)
	}
	if ra := retryAfter(st); ra != "" && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", ra)
	}
	w.Header().Set("Content-Type", media)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}

func retryAfter(st *metav1.Status) string {
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		return strconv.Itoa(int(st.Details.RetryAfterSeconds))
	}
	return ""
}

// holding returns the channel ResetStalled closes.
func (p *Proxy) holding() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.releaseStalled == nil {
		p.releaseStalled = make(chan struct{})
	}
	return p.releaseStalled
}

// ResetStalled ends every request a Rule.Stall holds now by resetting its
// client's connection (as Rule.Reset does), as a stuck proxy that is
// restarted to recover would: lifting the rule alone answers only new
// requests. Requests that arrive later are held again while the rule is
// armed.
func (p *Proxy) ResetStalled() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.releaseStalled != nil {
		close(p.releaseStalled)
		p.releaseStalled = nil
	}
}

// SendInitialEventsForbiddenMessage is the 422 message of an apiserver
// (1.27 and newer) whose WatchList feature gate is off, for a streaming list
// (kubernetes/kubernetes#135583).
const SendInitialEventsForbiddenMessage = `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`

// TooLargeResourceVersionLegacy returns r answering like a 1.17.0-1.18.5
// apiserver whose watch cache has not reached the requested resourceVersion
// yet: 504 Timeout, retryAfterSeconds 1, and one cause carrying only the
// message "Too large resource version", without the ResourceVersionTooLarge
// type that later servers set (client-go's reflector missed this form until
// kubernetes/kubernetes#94316). current is the resourceVersion the message
// names as the server's.
func TooLargeResourceVersionLegacy(r Rule, current string) Rule {
	r.Status = http.StatusGatewayTimeout
	r.Reason = metav1.StatusReasonTimeout
	r.RetryAfterSeconds = 1
	r.Message = "Timeout: Too large resource version, current: " + current
	r.Causes = []metav1.StatusCause{{Message: tooLargeCauseMessage}}
	return r
}
