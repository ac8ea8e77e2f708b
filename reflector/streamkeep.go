package reflector

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// A streaming list that relists steadywatch's own informer keeps each
// object the informer holds at the streamed resourceVersion without
// decoding it, as a list does (keepUnchanged): the client's decoder reads
// each event object's namespace, name and resourceVersion from its bytes
// and asks streamKeep.known (decode.WithKnown), which returns the stored
// object; the event then carries that object, and applyStreamed keeps it
// (snapshot.kept) instead of writing it again.

// streamKeep is one streaming list's objects handed to the client's
// decoder in place of decoded ones, until their events are applied.
type streamKeep struct {
	store unchangedStore
	// pending counts the objects in handed: while it is 0, no event's
	// object is looked up.
	pending atomic.Int64
	mu      sync.Mutex
	handed  map[any]int
}

// streamKeeper returns the streamKeep of a streaming list that fills snap,
// or nil when none may be kept: a store that cannot keep an object, or a
// first sync (the store holds nothing yet).
func (r *Reflector) streamKeeper(snap *snapshot) *streamKeep {
	if snap.keep == nil || snap.held == "" {
		return nil
	}
	return &streamKeep{store: snap.keep, handed: map[any]int{}}
}

// known is the decoder's decode.KnownFunc: the object the store holds as
// namespace/name at resourceVersion rv, recorded as handed.
func (k *streamKeep) known(namespace, name, rv string) (runtime.Object, bool) {
	obj, ok := k.store.Unchanged(namespace, name, rv)
	if !ok {
		return nil, false
	}
	ro, ok := obj.(runtime.Object)
	if !ok || reflect.ValueOf(obj).Kind() != reflect.Pointer {
		return nil, false
	}
	k.mu.Lock()
	k.handed[obj]++
	k.mu.Unlock()
	k.pending.Add(1)
	return ro, true
}

// handedOn reports whether obj is an object known handed that no event
// has been applied with yet: Options.Lister.Transform leaves it as it is
// (it ran on it before it was stored).
func (k *streamKeep) handedOn(obj runtime.Object) bool {
	if k.pending.Load() == 0 || reflect.ValueOf(obj).Kind() != reflect.Pointer {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.handed[obj] > 0
}

// take reports whether obj, an ADDED event's object, is one known handed
// (and forgets that hand-over).
func (k *streamKeep) take(obj runtime.Object) bool {
	if k == nil || k.pending.Load() == 0 || reflect.ValueOf(obj).Kind() != reflect.Pointer {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.handed[obj]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(k.handed, obj)
	} else {
		k.handed[obj] = n - 1
	}
	k.pending.Add(-1)
	return true
}

// keepStreamed applies an ADDED event whose object the decoder took from
// the store (streamKeep.take): decided as a decoded one, then kept as the
// store holds it. When the store no longer holds that very object (the
// stream sent namespace/name again, and an event before this one was
// applied since it was decoded), nothing is written and the list ends
// with an error: the next list decodes it.
func (s *snapshot) keepStreamed(ctx context.Context, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	namespace, name, rv := m.GetNamespace(), m.GetName(), m.GetResourceVersion()
	if held, ok := s.keep.Unchanged(namespace, name, rv); !ok || held != any(obj) {
		return fmt.Errorf("the streaming list held %s/%s at resourceVersion %s twice", namespace, name, rv)
	}
	if err := s.kept(ctx, namespace, name, rv, obj); err != nil {
		return err
	}
	s.r.unchangedKept.Add(1)
	return nil
}
