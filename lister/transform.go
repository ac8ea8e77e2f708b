package lister

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/internal/decode"
	"github.com/steadywatch/steadywatch/internal/metricsnop"
	"github.com/steadywatch/steadywatch/internal/reason"
	"github.com/steadywatch/steadywatch/internal/watchpipe"
	"github.com/steadywatch/steadywatch/metrics"
)

// This file applies Options.Transform: to each list item as it is decoded
// (the SDK's own adapters) or as soon as the list arrives (clients whose
// lists are read whole), and to each watch event's object, before anything
// keeps it.

// ErrTransform matches (errors.Is) every *TransformError.
var ErrTransform = errors.New("transform failed")

// TransformError is the error of Options.Transform on one object: the
// object it was given, and what went wrong.
type TransformError struct {
	// Type is the object's Go type, e.g. "*v1.ConfigMap".
	Type string
	// Namespace, Name and ResourceVersion are the object's, as the server
	// sent them.
	Namespace, Name, ResourceVersion string
	// Reason says what went wrong.
	Reason string
	// Err is the transform's own error, if it returned one.
	Err error
}

func (e *TransformError) Error() string {
	s := fmt.Sprintf("lister: Options.Transform on %s %s at resourceVersion %s: %s",
		e.Type, cache.NewObjectName(e.Namespace, e.Name), e.ResourceVersion, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *TransformError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTransform) true.
func (e *TransformError) Is(target error) bool { return target == ErrTransform }

// StripManagedFields is a transform that drops metadata.managedFields (the
// server-side apply bookkeeping, often the largest part of a small object's
// metadata) from an object of any type (typed, unstructured, metadata-only).
// It changes the object it is given and returns it; it is idempotent, so it
// is also a valid client-go cache.TransformFunc (informer SetTransform).
//
//	lister.Options{Transform: lister.StripManagedFields}
//
// A controller that reads or writes managedFields (a server-side apply
// client comparing them) must not use it. docs/benchmarks.md measures what
// it saves.
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// transformer applies one Options.Transform and reports its failures.
type transformer struct {
	fn      cache.TransformFunc
	name    string
	metrics metrics.Recorder
}

// apply runs the transform on obj and checks what it returns: an object of
// obj's type, with obj's name, namespace, UID, resourceVersion, apiVersion
// and kind (the watch pipeline's never-older filter, client-go's store key
// and a reflector's kind check need them). A field the transform cleared is
// restored; one it changed to another value fails.
func (t *transformer) apply(obj runtime.Object) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, &TransformError{Type: fmt.Sprintf("%T", obj), Reason: "the object has no metadata", Err: err}
	}
	ns, name, uid, rv := m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion()
	gvk := obj.GetObjectKind().GroupVersionKind()
	fail := func(reason string, err error) error {
		return &TransformError{Type: fmt.Sprintf("%T", obj), Namespace: ns, Name: name, ResourceVersion: rv, Reason: reason, Err: err}
	}
	res, err := t.fn(obj)
	if err != nil {
		return nil, fail("the transform returned an error", err)
	}
	out, ok := res.(runtime.Object)
	if v := reflect.ValueOf(res); !ok || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return nil, fail(fmt.Sprintf("the transform returned %T, not an object", res), nil)
	}
	if reflect.TypeOf(out) != reflect.TypeOf(obj) {
		return nil, fail(fmt.Sprintf("the transform returned a %T; it must return the type it is given", out), nil)
	}
	om, err := meta.Accessor(out)
	if err != nil {
		return nil, fail("the transform returned an object without metadata", err)
	}
	// Written out field by field: this runs once per object and per event,
	// and allocates nothing.
	if cleared, changed := identity(name, om.GetName()); changed != "" {
		return nil, fail(changedMsg("name", name, changed), nil)
	} else if cleared {
		om.SetName(name)
	}
	if cleared, changed := identity(ns, om.GetNamespace()); changed != "" {
		return nil, fail(changedMsg("namespace", ns, changed), nil)
	} else if cleared {
		om.SetNamespace(ns)
	}
	if cleared, changed := identity(string(uid), string(om.GetUID())); changed != "" {
		return nil, fail(changedMsg("uid", string(uid), changed), nil)
	} else if cleared {
		om.SetUID(uid)
	}
	if cleared, changed := identity(rv, om.GetResourceVersion()); changed != "" {
		return nil, fail(changedMsg("resourceVersion", rv, changed), nil)
	} else if cleared {
		om.SetResourceVersion(rv)
	}
	// apiVersion and kind too, where the object had them (an unstructured
	// object's, which a reflector checks against its expected kind); a
	// transform may set them on a typed object decoded without them.
	if now := out.GetObjectKind().GroupVersionKind(); now != gvk && !gvk.Empty() {
		if !now.Empty() {
			return nil, fail(fmt.Sprintf("the transform changed apiVersion/kind from %q to %q; it must keep them", gvk, now), nil)
		}
		out.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return out, nil
}

// each is t.apply as the decoder's per-item transform; nil when t is.
func (t *transformer) each() decode.Transform {
	if t == nil {
		return nil
	}
	return t.apply
}

// identity compares an identity field before (was) and after (now) the
// transform: cleared when it was emptied (to restore), changed (its new
// value) when it was set to another one.
func identity(was, now string) (cleared bool, changed string) {
	switch {
	case now == was:
		return false, ""
	case now == "":
		return true, ""
	}
	return false, now
}

func changedMsg(field, was, now string) string {
	return fmt.Sprintf("the transform changed metadata.%s from %q to %q; it must keep it", field, was, now)
}

// list applies the transform to every item of list (one the client read
// whole), in place.
func (t *transformer) list(list runtime.Object) error {
	items := itemsField(list)
	if items.IsValid() && transformable(items.Type().Elem()) {
		for i := range items.Len() {
			el := items.Index(i)
			var obj runtime.Object
			if el.Kind() == reflect.Struct {
				obj = el.Addr().Interface().(runtime.Object)
			} else if el.IsNil() {
				continue
			} else {
				obj = el.Interface().(runtime.Object)
			}
			out, err := t.apply(obj)
			if err != nil {
				return err
			}
			switch {
			case out == obj:
			case el.Kind() == reflect.Struct:
				el.Set(reflect.ValueOf(out).Elem()) // apply returns obj's type
			default:
				el.Set(reflect.ValueOf(out))
			}
		}
		return nil
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for i, obj := range objs {
		if objs[i], err = t.apply(obj); err != nil {
			return err
		}
	}
	return meta.SetList(list, objs)
}

// transformable reports whether a list's item type is one list can
// transform in place: a struct whose pointer is an object, or an object
// pointer or interface.
func transformable(elem reflect.Type) bool {
	object := reflect.TypeFor[runtime.Object]()
	switch elem.Kind() {
	case reflect.Struct:
		return reflect.PointerTo(elem).Implements(object)
	case reflect.Pointer:
		return elem.Implements(object)
	case reflect.Interface:
		return elem == object
	}
	return false
}

// observe logs and counts a failed transform.
func (t *transformer) observe(ctx context.Context, err error) {
	t.metrics.Fallback(t.name, string(reason.TransformFailed))
	klog.FromContext(ctx).Error(err, "Options.Transform failed; nothing untransformed is kept in its place", "lister", t.name, "reason", string(reason.TransformFailed))
}

// transformingLister is implemented by the SDK's own adapters, which apply
// a transform to each list item while they decode the response.
type transformingLister interface {
	listTransformed(ctx context.Context, o metav1.ListOptions, tf *transformer) (runtime.Object, error)
}

// withTransform returns c with o.Transform applied to what it lists and
// watches; c itself when o has none.
func withTransform(c Client, o Options) Client {
	if o.Transform == nil || c == nil {
		return c
	}
	return transformClient{Client: c, tf: &transformer{fn: o.Transform, name: o.Name, metrics: metricsnop.Or(o.Metrics)}}
}

// transformClient applies a transform to c's lists and watch events. It
// does not name its requests (listgate.RequestKeyer): another reader's
// answer would carry that reader's transform, or none, so its lists are
// never shared through a listgate.Gate (they are still bounded by it).
type transformClient struct {
	Client
	tf *transformer
}

func (c transformClient) List(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	var (
		obj runtime.Object
		err error
	)
	if d, ok := c.Client.(transformingLister); ok {
		obj, err = d.listTransformed(ctx, o, c.tf)
	} else if obj, err = c.Client.List(ctx, o); err == nil {
		err = c.tf.list(obj)
	}
	if err != nil {
		if errors.Is(err, ErrTransform) {
			c.tf.observe(ctx, err)
		}
		return nil, err
	}
	return obj, nil
}

// Watch applies the transform to the object of every ADDED, MODIFIED and
// DELETED event (bookmarks and errors pass unchanged, and so does an object
// a reflector's store already held, which a streaming list's decoder handed
// on undecoded), one hand-over per event on top of the client's own. A failure ends the watch with an error
// event (transformFailedEvent), so the informer lists again.
func (c transformClient) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := c.Client.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	r := watchpipe.NewRelay(w)
	go c.relay(ctx, r)
	return r, nil
}

func (c transformClient) relay(ctx context.Context, r *watchpipe.Relay) {
	defer r.Close()
	defer r.Inner().Stop()
	in := r.Inner().ResultChan()
	// A stored object a streaming list's decoder handed on undecoded
	// (decode.Known) was transformed before it was stored.
	handed := decode.KnownFrom(ctx).Handed
	for {
		var (
			ev watch.Event
			ok bool
		)
		select {
		case <-r.Stopped():
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			if handed != nil && handed(ev.Object) {
				break
			}
			obj, err := c.tf.apply(ev.Object)
			if err != nil {
				c.tf.observe(ctx, err)
				r.Send(transformFailedEvent(err))
				return
			}
			ev.Object = obj
		}
		if !r.Send(ev) {
			return
		}
	}
}

// statusReasonTransformFailed is the reason of the error event that ends a
// watch whose transform failed (transformFailedEvent).
const statusReasonTransformFailed metav1.StatusReason = "TransformFailed"

// transformFailedEvent is the error event that ends a watch whose
// Options.Transform failed on an event's object. Its status has no HTTP
// code of a server answer (neither 410 nor 5xx): client-go's reflector and
// reflector.New both end the watch and list again after a backoff, and the
// list applies the transform again.
func transformFailedEvent(err error) watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Reason: statusReasonTransformFailed, Message: "steadywatch: " + err.Error(),
	}}
}

// IsWatchListSemanticsUnSupported forwards the inner client's declaration.
func (c transformClient) IsWatchListSemanticsUnSupported() bool { return declaresNoWatchList(c.Client) }

// Client returns the Client the Lister lists and watches through: the one
// given to New, with Options.Transform applied to every list item and watch
// event when it is set. reflector.New watches through it.
func (l *Lister) Client() Client { return l.c }

// The SDK's own adapters decode lists item by item, and apply a transform
// to each item as it is decoded.
var _ transformingLister = adapter{}

// listTransformed lists with tf applied to each item as it is decoded; a
// typed client without item-by-item decoding (a fake clientset's) lists,
// then tf transforms the list.
func (c adapter) listTransformed(ctx context.Context, o metav1.ListOptions, tf *transformer) (runtime.Object, error) {
	if d, ok := c.c.(interface{ DecodesItems() bool }); ok && !d.DecodesItems() {
		obj, err := c.List(ctx, o)
		if err != nil {
			return nil, err
		}
		return obj, tf.list(obj)
	}
	return decoded(c.c.ListTransformed(ctx, o, &decode.Each{Transform: tf.each()}))
}
