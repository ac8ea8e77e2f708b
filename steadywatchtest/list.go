package steadywatchtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Messages of a real apiserver's errors.
const (
	// msgContinueExpired is the message of the 410 answering a continue
	// token whose snapshot was compacted (k8s.io/apiserver's etcd3 store);
	// its ListMeta.continue holds a token for the rest of the list at the
	// current resourceVersion.
	msgContinueExpired = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided " +
		"token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// List serves a list request for all namespaces (or the namespace of
// InNamespace), like GET /api/v1/<resource>?... on a real apiserver.
func (s *Server[T]) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return s.list(ctx, s.ns, o)
}

func (s *Server[T]) list(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
	return serve(ctx, s, verbList, ns, o, func(req *Request) (runtime.Object, error) { return s.listLocked(ns, o, req) })
}

// serve runs one request under the lock and logs it.
func serve[T runtime.Object, R any](ctx context.Context, s *Server[T], verb, ns string, o metav1.ListOptions, fn func(*Request) (R, error)) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	req := Request{Verb: verb, Namespace: ns, Options: o, Served: servedRejected, Faulted: s.faults != Faults{}}
	r, err := fn(&req)
	req.answer(err)
	s.log = append(s.log, req)
	return r, err
}

func (s *Server[T]) listLocked(ns string, o metav1.ListOptions, req *Request) (runtime.Object, error) {
	if err := s.throttle(); err != nil {
		return nil, err
	}
	if s.faults.IgnoreResourceVersionMatch {
		o.ResourceVersionMatch = ""
	}
	if s.faults.IgnoreSendInitialEvents {
		o.SendInitialEvents = nil
	}
	o.Watch = false
	if err := validate(o, true); err != nil {
		return nil, err
	}
	sel, err := parseSelectors(o)
	if err != nil {
		return nil, err
	}
	if s.faults.GoneOnLists && (o.Continue != "" || (o.ResourceVersion != "" && o.ResourceVersion != "0")) {
		req.Served = servedRejected
		return nil, apierrors.NewResourceExpired("too old resource version: " + o.ResourceVersion)
	}
	if o.Continue != "" {
		return s.listContinue(ns, o, sel, req)
	}
	if _, named := sel.field.RequiresExactMatch("metadata.name"); named && s.faults.NameListsFromNewest {
		req.Served = servedMostRecent
		return s.page(ns, s.rv, "", 0, sel, req)
	}
	rv, sem, err := s.listAt(o)
	req.Served = sem
	if err != nil {
		return nil, err
	}
	return s.page(ns, rv, "", o.Limit, sel, req)
}

// listAt reads the resourceVersion semantic of a list without continue
// (Kubernetes API Concepts, "Semantics for get and list") and returns the
// revision to serve.
func (s *Server[T]) listAt(o metav1.ListOptions) (uint64, string, error) {
	switch o.ResourceVersion {
	case "":
		return s.rv, servedMostRecent, nil
	case "0":
		return s.cacheRV(), servedAny, nil
	}
	n, err := parseRV(o.ResourceVersion)
	if err != nil {
		return 0, servedRejected, err
	}
	exact := o.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(o.ResourceVersionMatch == "" && o.Limit > 0) // legacy: RV with a limit is Exact
	if !exact {
		if n > s.cacheRV() {
			return 0, servedNotOlderThan, tooLarge(n, s.cacheRV())
		}
		return s.cacheRV(), servedNotOlderThan, nil
	}
	switch {
	case n > s.cacheRV():
		return 0, servedExact, tooLarge(n, s.cacheRV())
	case n < s.compactRV:
		return 0, servedExact, tooOld(n, s.compactRV)
	}
	return n, servedExact, nil
}

func (s *Server[T]) listContinue(ns string, o metav1.ListOptions, sel selectors, req *Request) (runtime.Object, error) {
	req.Served = servedContinue
	if o.ResourceVersion != "" && o.ResourceVersion != "0" {
		return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	tok, err := decodeContinue(o.Continue)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	rv := uint64(tok.RV)
	switch {
	case tok.RV == -1: // the etcd3 store's "continue at the latest revision"
		rv = s.rv
	case rv < s.compactRV:
		// As the etcd3 store: 410, with a token for the rest of the list at
		// the latest resourceVersion (an inconsistent continuation).
		err := apierrors.NewResourceExpired(msgContinueExpired)
		err.ErrStatus.ListMeta.Continue = encodeContinue(continueToken{RV: -1, Start: tok.Start})
		return nil, err
	case rv > s.rv:
		return nil, apierrors.NewBadRequest("invalid continue token: resourceVersion newer than the store")
	}
	obj, err := s.page(ns, rv, tok.Start, o.Limit, sel, req)
	if err == nil && s.faults.RepeatContinueToken {
		lm, _ := meta.ListAccessor(obj)
		lm.SetContinue(o.Continue)
		req.Continue = o.Continue
	}
	return obj, err
}

// page builds one list page at revision rv: the objects after key start
// that match, at most limit of them (0: all).
func (s *Server[T]) page(ns string, rv uint64, start string, limit int64, sel selectors, req *Request) (runtime.Object, error) {
	var items []runtime.Object
	var last string
	more := int64(0)
	for _, e := range s.stateAt(rv) {
		if e.key <= start || !sel.matches(ns, e.obj) {
			continue
		}
		if limit > 0 && int64(len(items)) == limit {
			more++
			continue
		}
		items = append(items, e.obj.DeepCopyObject())
		last = e.key
	}
	list := s.newList()
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(format(rv))
	if more > 0 {
		lm.SetContinue(encodeContinue(continueToken{RV: int64(rv), Start: last}))
		if sel.empty() { // the etcd3 store counts only without selectors
			lm.SetRemainingItemCount(&more)
		}
	}
	req.ResourceVersion, req.Items, req.Continue = format(rv), len(items), lm.GetContinue()
	return list, nil
}

// throttle answers 429 while Faults.RetryAfter says so. Caller holds mu.
func (s *Server[T]) throttle() error {
	f := s.faults
	if f.RetryAfter <= 0 || (f.RetryAfterRequests > 0 && s.throttled >= f.RetryAfterRequests) {
		return nil
	}
	s.throttled++
	return apierrors.NewTooManyRequests("Too many requests, please try again later.", f.RetryAfter)
}

// validate applies a 1.34 apiserver's query validation (422 Invalid).
func validate(o metav1.ListOptions, watchListEnabled bool) error {
	in := internalversion.ListOptions{
		ResourceVersion:      o.ResourceVersion,
		ResourceVersionMatch: o.ResourceVersionMatch,
		Continue:             o.Continue,
		Limit:                o.Limit,
		Watch:                o.Watch,
		AllowWatchBookmarks:  o.AllowWatchBookmarks,
		SendInitialEvents:    o.SendInitialEvents,
	}
	if errs := validation.ValidateListOptions(&in, watchListEnabled); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", errs)
	}
	return nil
}

func parseRV(rv string) (uint64, error) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || n == 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// tooLarge is the watch cache's answer to a resourceVersion it has not
// reached: 504 with cause ResourceVersionTooLarge and Retry-After 1.
func tooLarge(rv, current uint64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// tooOld is the 410 of a compacted resourceVersion.
func tooOld(rv, compacted uint64) *apierrors.StatusError {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, compacted))
}

// continueToken has the apiserver's token shape (k8s.io/apiserver's
// storage.EncodeContinue): base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"key"}.
// Here start is the last key served. Clients must treat tokens as opaque.
type continueToken struct {
	V     string `json:"v"`
	RV    int64  `json:"rv"` // -1: the latest revision
	Start string `json:"start"`
}

func encodeContinue(t continueToken) string {
	t.V = "meta.k8s.io/v1"
	b, _ := json.Marshal(t) // cannot fail: plain struct
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, err
	}
	if t.V != "meta.k8s.io/v1" || t.RV == 0 || t.RV < -1 {
		return t, fmt.Errorf("unknown token version %q or resourceVersion %d", t.V, t.RV)
	}
	return t, nil
}

// selectors are a request's label and field selectors.
type selectors struct {
	label labels.Selector
	field fields.Selector
}

func parseSelectors(o metav1.ListOptions) (selectors, error) {
	l, err := labels.Parse(o.LabelSelector)
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	f, err := fields.ParseSelector(o.FieldSelector)
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	for _, r := range f.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return selectors{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	return selectors{label: l, field: f}, nil
}

func (s selectors) empty() bool { return s.label.Empty() && s.field.Empty() }

// matches reports whether obj is in namespace ns ("" for all) and matches.
func (s selectors) matches(ns string, obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if ns != "" && m.GetNamespace() != ns {
		return false
	}
	return s.label.Matches(labels.Set(m.GetLabels())) &&
		s.field.Matches(fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()})
}
