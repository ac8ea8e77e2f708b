package steadywatchtest

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Options configures a Server. The zero value is a well-behaved server.
type Options struct {
	// Faults switched on from the start (see Faults); change them later with
	// Server.SetFaults.
	Faults Faults
	// BookmarkInterval > 0 sends a BOOKMARK at the current resourceVersion
	// to every watch that allows bookmarks, this often (a real apiserver
	// sends them about every minute). Default 0: only Server.Bookmark sends them.
	BookmarkInterval time.Duration
	// GroupResource names the resource in the 404 and 409 errors of the
	// write helpers, e.g. {Resource: "configmaps"}. Default {Resource: "objects"}.
	GroupResource schema.GroupResource
}

// Server is an in-memory apiserver for one resource whose objects are T
// (e.g. *corev1.ConfigMap or *unstructured.Unstructured). It is safe for
// concurrent use. Construct it with New or NewUnstructured.
//
// Its history grows with every write until Compact. Every watch runs one
// goroutine until the watch is stopped, its context ends, its
// timeoutSeconds pass or Close is called: stop watches (or call Close, e.g.
// in t.Cleanup) so that goroutine-leak checks pass.
type Server[T runtime.Object] struct {
	*store[T]
	ns string // List, Watch and ListerWatcher serve this namespace ("" all); see InNamespace
}

// store is a Server's state, shared by its namespace views.
type store[T runtime.Object] struct {
	newObj  func() T
	newList func() runtime.Object
	opts    Options

	mu        sync.Mutex
	rv        uint64
	compactRV uint64       // history at or before it is gone; state at it is base
	base      map[string]T // state at compactRV
	history   []change     // rv ascending, every rv > compactRV
	current   map[string]T // state at rv
	faults    Faults       // guarded by mu
	throttled int          // requests answered 429 so far
	watchers  map[*serverWatch]struct{}
	log       []Request
	uid       uint64
}

// change is one write, as the store's history keeps it.
type change struct {
	rv   uint64
	typ  watch.EventType
	key  string
	obj  runtime.Object // state after the write (for DELETED: the last state, at the deletion's rv)
	prev runtime.Object // state before (nil for ADDED)
}

// New returns an empty server for typed objects T with list type L, e.g.
// New[*corev1.ConfigMap, *corev1.ConfigMapList](Options{}). T and L must be
// pointer types.
func New[T runtime.Object, L runtime.Object](o Options) *Server[T] {
	return newServer(newOf[T](), func() runtime.Object { return newOf[L]()() }, o)
}

// NewUnstructured returns an empty server for unstructured objects of kind
// gvk; lists are *unstructured.UnstructuredList of kind gvk.Kind+"List", and
// bookmarks carry apiVersion and kind (client-go's reflector checks them).
func NewUnstructured(gvk schema.GroupVersionKind, o Options) *Server[*unstructured.Unstructured] {
	newObj := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	newList := func() runtime.Object {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return l
	}
	return newServer(newObj, newList, o)
}

func newServer[T runtime.Object](newObj func() T, newList func() runtime.Object, o Options) *Server[T] {
	if o.GroupResource.Empty() {
		o.GroupResource = schema.GroupResource{Resource: "objects"}
	}
	return &Server[T]{store: &store[T]{
		newObj:   newObj,
		newList:  newList,
		opts:     o,
		faults:   o.Faults,
		base:     map[string]T{},
		current:  map[string]T{},
		watchers: map[*serverWatch]struct{}{},
	}}
}

// newOf returns a constructor of the value a pointer type P points to.
func newOf[P any]() func() P {
	t := reflect.TypeOf((*P)(nil)).Elem()
	if t.Kind() != reflect.Pointer {
		panic(fmt.Sprintf("steadywatchtest: %v is not a pointer type", t))
	}
	return func() P { return reflect.New(t.Elem()).Interface().(P) }
}

// SetFaults replaces the switched-on misbehaviours for the requests that
// follow (watches already open keep the faults they started with) and
// restarts the RetryAfter count.
func (s *Server[T]) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	s.throttled = 0
}

// ResourceVersion is the store's current resourceVersion ("0" when nothing
// was ever written).
func (s *Server[T]) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return format(s.rv)
}

// Get returns a copy of the current object namespace/name.
func (s *Server[T]) Get(namespace, name string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.current[key(namespace, name)]
	if !ok {
		var zero T
		return zero, false
	}
	return obj.DeepCopyObject().(T), true
}

// Create stores a new object and returns it with its resourceVersion and
// uid set. An existing name is 409 AlreadyExists.
func (s *Server[T]) Create(obj T) (T, error) {
	return s.write(obj, func(exists bool, _ string, m metav1.Object) error {
		if exists {
			return apierrors.NewAlreadyExists(s.opts.GroupResource, m.GetName())
		}
		return nil
	})
}

// MustCreate creates every object and panics on an error (test set-up).
func (s *Server[T]) MustCreate(objs ...T) {
	for _, o := range objs {
		if _, err := s.Create(o); err != nil {
			panic(err)
		}
	}
}

// Update replaces an existing object. A missing one is 404 NotFound; a set
// resourceVersion other than the stored one is 409 Conflict, as on a real
// apiserver (optimistic concurrency).
func (s *Server[T]) Update(obj T) (T, error) {
	return s.write(obj, func(exists bool, storedRV string, m metav1.Object) error {
		if !exists {
			return apierrors.NewNotFound(s.opts.GroupResource, m.GetName())
		}
		if rv := m.GetResourceVersion(); rv != "" && rv != storedRV {
			return apierrors.NewConflict(s.opts.GroupResource, m.GetName(),
				fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		return nil
	})
}

// Apply creates or replaces the object whatever its resourceVersion (an
// upsert; not server-side apply's field management).
func (s *Server[T]) Apply(obj T) (T, error) {
	return s.write(obj, func(bool, string, metav1.Object) error { return nil })
}

func (s *Server[T]) write(obj T, check func(exists bool, storedRV string, m metav1.Object) error) (T, error) {
	var zero T
	obj = obj.DeepCopyObject().(T)
	m, err := meta.Accessor(obj)
	if err != nil {
		return zero, err
	}
	if m.GetName() == "" {
		return zero, apierrors.NewBadRequest("steadywatchtest: object has no name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(m.GetNamespace(), m.GetName())
	prev, exists := s.current[k]
	storedRV := ""
	if exists {
		pm, _ := meta.Accessor(prev)
		storedRV = pm.GetResourceVersion()
		m.SetUID(pm.GetUID())
		m.SetCreationTimestamp(pm.GetCreationTimestamp())
	}
	if err := check(exists, storedRV, m); err != nil {
		return zero, err
	}
	s.rv++
	if !exists {
		s.uid++
		m.SetUID(types.UID(fmt.Sprintf("steadywatchtest-%d", s.uid)))
		m.SetCreationTimestamp(metav1.Now())
	}
	m.SetResourceVersion(format(s.rv))
	s.current[k] = obj
	c := change{rv: s.rv, typ: watch.Added, key: k, obj: obj}
	if exists {
		c.typ, c.prev = watch.Modified, prev
	}
	s.record(c)
	return obj.DeepCopyObject().(T), nil
}

// Delete removes namespace/name; a missing one is 404 NotFound.
func (s *Server[T]) Delete(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(namespace, name)
	prev, ok := s.current[k]
	if !ok {
		return apierrors.NewNotFound(s.opts.GroupResource, name)
	}
	s.rv++
	delete(s.current, k)
	last := prev.DeepCopyObject()
	if m, err := meta.Accessor(last); err == nil {
		m.SetResourceVersion(format(s.rv))
	}
	s.record(change{rv: s.rv, typ: watch.Deleted, key: k, obj: last, prev: prev})
	return nil
}

// Advance moves the store's resourceVersion n revisions on without a change
// to this resource, as writes to other resources do on a real apiserver
// (etcd's revision is one counter for every resource): lists then report the
// newer resourceVersion and bookmarks carry it, watches see no event, and
// the skipped resourceVersions read as the state before them. It returns
// the new resourceVersion. Tests use it to reach given resourceVersions, or
// to prove that a client does not assume consecutive ones.
func (s *Server[T]) Advance(n uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv += n
	return format(s.rv)
}

// record appends c to the history and hands it to every open watch. Caller holds mu.
func (s *Server[T]) record(c change) {
	s.history = append(s.history, c)
	for w := range s.watchers {
		w.deliver(c)
	}
}

// Compact drops the history up to and including rv, like an etcd
// compaction: lists at an older resourceVersion, continue tokens of older
// snapshots and watches from an older resourceVersion are then answered 410
// Gone. rv "" compacts everything (the current resourceVersion).
func (s *Server[T]) Compact(rv string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.rv
	if rv != "" {
		var err error
		if n, err = strconv.ParseUint(rv, 10, 64); err != nil {
			return fmt.Errorf("steadywatchtest: compact: invalid resourceVersion %q: %w", rv, err)
		}
	}
	if n > s.rv {
		return fmt.Errorf("steadywatchtest: compact: resourceVersion %d is newer than the store's %d", n, s.rv)
	}
	if n <= s.compactRV {
		return nil
	}
	i := 0
	for ; i < len(s.history) && s.history[i].rv <= n; i++ {
		apply(s.base, s.history[i])
	}
	s.history = append([]change(nil), s.history[i:]...)
	s.compactRV = n
	return nil
}

// apply applies c to state.
func apply[T runtime.Object](state map[string]T, c change) {
	if c.typ == watch.Deleted {
		delete(state, c.key)
		return
	}
	state[c.key] = c.obj.(T)
}

// stateAt returns the objects at resourceVersion rv, sorted by key; rv must
// be between compactRV and s.rv. Caller holds mu. Objects are shared: copy
// before handing out.
func (s *Server[T]) stateAt(rv uint64) []entry {
	var m map[string]T
	if rv == s.rv {
		m = s.current
	} else {
		m = make(map[string]T, len(s.base))
		for k, v := range s.base {
			m[k] = v
		}
		for _, c := range s.history {
			if c.rv > rv {
				break
			}
			apply(m, c)
		}
	}
	out := make([]entry, 0, len(m))
	for k, v := range m {
		out = append(out, entry{key: k, obj: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

type entry struct {
	key string
	obj runtime.Object
}

// cacheRV is the revision the (possibly lagging) watch cache is at. Caller holds mu.
func (s *Server[T]) cacheRV() uint64 {
	lag := uint64(max(s.faults.Lagging, 0))
	if lag >= s.rv-s.compactRV {
		return s.compactRV
	}
	return s.rv - lag
}

// key is the storage key's order: namespace, then name (etcd orders
// /registry/<resource>/<namespace>/<name> so).
func key(namespace, name string) string { return namespace + "/" + name }

func format(rv uint64) string { return strconv.FormatUint(rv, 10) }
