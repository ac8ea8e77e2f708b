// Package informer is steadywatch's cache.SharedIndexInformer: client-go's
// event processor (per-handler buffering and ordering, registrations,
// resync) over a store that a Source, reflector.New, fills object by
// object. A list (the first and every relist) reaches the handlers as one
// add, update or delete per object as it is applied, never as a Replace:
// the informer never holds its old contents and a whole new list at once.
//
// It is not a reflector: what is listed and watched, and every
// resourceVersion rule, is the Source's. Users build it through package
// reflector's informer constructors.
package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Source fills the informer's store: a *reflector.Reflector. It calls the
// store's Add, Update and Delete for watch events and for the objects of a
// list, DeleteAbsent for each object a complete list no longer holds, and
// ListApplied once a list is applied whole (HasSynced is then true).
type Source interface {
	Run(ctx context.Context)
	HasSynced() bool
	LastSyncResourceVersion() string
	Name() string
}

// Config says how to build an Informer.
type Config struct {
	// ExampleObject is the type of the objects (client-go's exampleObject).
	ExampleObject runtime.Object
	// Options are client-go's informer options: resync period, indexers,
	// object description, and the identifier and metrics provider of the
	// indexer's metrics.
	Options cache.SharedIndexInformerOptions
	// NewSource builds the Source that fills store. onError is to be
	// called with each list or watch failure: it runs the handler of
	// SetWatchErrorHandler.
	NewSource func(store cache.Store, onError func(context.Context, error)) Source
	// Clock is for tests (handler resync periods). Default: the real clock.
	Clock clock.WithTicker
}

// Informer implements cache.SharedIndexInformer.
type Informer struct {
	indexer    cache.Indexer
	store      *store
	source     Source
	processor  *sharedProcessor
	mutation   cache.MutationDetector
	objectType runtime.Object
	clock      clock.WithTicker

	// synced is closed once the first list is applied whole.
	synced chan struct{}

	resyncCheckPeriod               time.Duration
	defaultEventHandlerResyncPeriod time.Duration

	startedLock      sync.Mutex
	started, stopped bool
	// blockDeltas serializes the store's writes (and so the notifications
	// they distribute) with adding and removing handlers: a handler added
	// late gets the store's contents and then every later change, once.
	blockDeltas sync.Mutex

	watchErrorHandler cache.WatchErrorHandlerWithContext
	errReflector      *cache.Reflector
	transform         cache.TransformFunc
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// New returns an informer whose store cfg.NewSource fills.
func New(cfg Config) *Informer {
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	o := cfg.Options
	s := &Informer{
		indexer:                         cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, o.Indexers, cache.WithStoreMetrics(o.Identifier, o.InformerMetricsProvider)),
		processor:                       newProcessor(c),
		mutation:                        cache.NewCacheMutationDetector(fmt.Sprintf("%T", cfg.ExampleObject)),
		objectType:                      cfg.ExampleObject,
		clock:                           c,
		synced:                          make(chan struct{}),
		resyncCheckPeriod:               o.ResyncPeriod,
		defaultEventHandlerResyncPeriod: o.ResyncPeriod,
	}
	s.store = &store{inf: s}
	s.source = cfg.NewSource(s.store, s.watchError)
	return s
}

// Source returns the Source that fills the informer's store.
func (s *Informer) Source() Source { return s.source }

// SetWatchErrorHandler implements cache.SharedInformer. The handler is
// given every failed list and watch of the Source (which has logged it and
// decided what follows) and a *cache.Reflector that carries only the
// Source's name: client-go's reflector does not run.
func (s *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext implements cache.SharedInformer.
func (s *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	if s.started {
		return fmt.Errorf("informer has already started")
	}
	s.watchErrorHandler = handler
	return nil
}

// watchError runs the handler of SetWatchErrorHandler, if any (the Source
// logs its failures itself, so there is no default handler).
func (s *Informer) watchError(ctx context.Context, err error) {
	s.startedLock.Lock()
	h, r := s.watchErrorHandler, s.errReflector
	if h != nil && r == nil {
		r = cache.NewReflectorWithOptions(&cache.ListWatch{}, s.objectType, cache.NewStore(cache.MetaNamespaceKeyFunc),
			cache.ReflectorOptions{Name: s.source.Name()})
		s.errReflector = r
	}
	s.startedLock.Unlock()
	if h != nil {
		h(ctx, r, err)
	}
}

// SetTransform implements cache.SharedInformer: handler is applied to
// every object before it is stored and handed to the handlers (not to the
// tombstones of objects a list no longer holds, which are stored ones).
func (s *Informer) SetTransform(handler cache.TransformFunc) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	if s.started {
		return fmt.Errorf("informer has already started")
	}
	s.transform = handler
	return nil
}

// Run implements cache.SharedInformer.
func (s *Informer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext implements cache.SharedInformer: it runs the Source and
// the handlers until ctx ends, and returns once every handler is stopped.
// A second call returns at once.
func (s *Informer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	s.startedLock.Lock()
	if s.started {
		s.startedLock.Unlock()
		logger.Info("Warning: the sharedIndexInformer has started, run more than once is not allowed")
		return
	}
	s.started = true
	resync := s.resyncCheckPeriod
	s.store.transform = s.transform // fixed from now on (SetTransform refuses)
	s.startedLock.Unlock()

	processorStopCtx, stopProcessor := context.WithCancelCause(context.WithoutCancel(ctx))
	var wg wait.Group
	defer wg.Wait()                                         // the processor stopped
	defer stopProcessor(errors.New("informer is stopping")) // after the Source
	wg.StartWithChannel(processorStopCtx.Done(), s.mutation.Run)
	wg.StartWithContext(processorStopCtx, s.processor.run)
	if resync > 0 {
		wg.StartWithContext(ctx, func(ctx context.Context) { s.resyncLoop(ctx, resync) })
	}
	defer func() {
		s.startedLock.Lock()
		defer s.startedLock.Unlock()
		s.stopped = true // no new handlers
	}()
	s.source.Run(ctx)
}

// resyncLoop asks the handlers whose resync is due to resync, every
// period, once the informer has synced (client-go's reflector resyncs
// while it watches, after its first list).
func (s *Informer) resyncLoop(ctx context.Context, period time.Duration) {
	t := s.clock.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if s.HasSynced() && s.processor.shouldResync() {
			klog.FromContext(ctx).V(4).Info("Forcing resync", "informer", s.source.Name())
			s.store.resync()
		}
		t.Reset(period)
	}
}

// HasStarted reports whether Run was called.
func (s *Informer) HasStarted() bool {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	return s.started
}

// HasSynced implements cache.SharedInformer: the first list was applied
// whole (and so handed to the handlers' buffers).
func (s *Informer) HasSynced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker implements cache.SharedInformer.
func (s *Informer) HasSyncedChecker() cache.DoneChecker { return informerDone{s} }

type informerDone struct{ s *Informer }

func (d informerDone) Name() string          { return fmt.Sprintf("SharedIndexInformer %T", d.s.objectType) }
func (d informerDone) Done() <-chan struct{} { return d.s.synced }

// LastSyncResourceVersion implements cache.SharedInformer: the Source's
// ("" before Run).
func (s *Informer) LastSyncResourceVersion() string {
	if !s.HasStarted() {
		return ""
	}
	return s.source.LastSyncResourceVersion()
}

// GetStore implements cache.SharedInformer.
func (s *Informer) GetStore() cache.Store { return s.indexer }

// GetIndexer implements cache.SharedIndexInformer.
func (s *Informer) GetIndexer() cache.Indexer { return s.indexer }

// AddIndexers implements cache.SharedIndexInformer.
func (s *Informer) AddIndexers(indexers cache.Indexers) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	if s.stopped {
		return fmt.Errorf("indexer was not added because it has stopped already")
	}
	return s.indexer.AddIndexers(indexers)
}

// GetController implements cache.SharedInformer: a controller that reports
// the informer's state and whose Run does nothing.
func (s *Informer) GetController() cache.Controller { return controller{s} }

type controller struct{ s *Informer }

func (controller) Run(<-chan struct{})                   {}
func (controller) RunWithContext(context.Context)        {}
func (c controller) HasSynced() bool                     { return c.s.HasSynced() }
func (c controller) HasSyncedChecker() cache.DoneChecker { return c.s.HasSyncedChecker() }
func (c controller) LastSyncResourceVersion() string     { return c.s.LastSyncResourceVersion() }

// IsStopped implements cache.SharedInformer.
func (s *Informer) IsStopped() bool {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	return s.stopped
}

// AddEventHandler implements cache.SharedInformer.
func (s *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod implements cache.SharedInformer.
func (s *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions implements cache.SharedInformer, as
// client-go's informer does: a handler added after Run is given the
// store's contents as initial-list adds, then every later change.
func (s *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}
	logger := ptr.Deref(options.Logger, klog.Background())
	resyncPeriod := ptr.Deref(options.ResyncPeriod, s.defaultEventHandlerResyncPeriod)
	if resyncPeriod > 0 {
		if resyncPeriod < minimumResyncPeriod {
			logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", resyncPeriod, "minimumResyncPeriod", minimumResyncPeriod)
			resyncPeriod = minimumResyncPeriod
		}
		if resyncPeriod < s.resyncCheckPeriod {
			if s.started {
				logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", resyncPeriod, "resyncCheckPeriod", s.resyncCheckPeriod)
				resyncPeriod = s.resyncCheckPeriod
			} else {
				// The informer checks as often as its most frequent handler
				// asks.
				s.resyncCheckPeriod = resyncPeriod
				s.processor.resyncCheckPeriodChanged(logger, resyncPeriod)
			}
		}
	}
	listener := newProcessListener(logger, handler, resyncPeriod, determineResyncPeriod(logger, resyncPeriod, s.resyncCheckPeriod),
		s.clock.Now(), initialBufferSize, s.HasSyncedChecker())
	if !s.started {
		handle, _ := s.processor.addListener(listener)
		return handle, nil
	}
	// The informer runs: the new handler gets what the store holds now,
	// and then every later change.
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	handle, started := s.processor.addListener(listener)
	for _, item := range s.indexer.List() {
		// Every object is part of the handler's initial list: its
		// HasSynced waits for them.
		listener.add(addNotification{newObj: item, isInInitialList: true})
	}
	if started {
		s.processor.wg.Start(listener.watchSynced)
	}
	return handle, nil
}

// RemoveEventHandler implements cache.SharedInformer.
func (s *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	s.startedLock.Lock()
	defer s.startedLock.Unlock()
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	return s.processor.removeListener(handle)
}

func (s *Informer) onAdd(obj any, isInInitialList bool) {
	s.mutation.AddObject(obj)
	s.processor.distribute(addNotification{newObj: obj, isInInitialList: isInInitialList}, false)
}

// onUpdate distributes an update. One whose old and new objects have the
// same resourceVersion is a resync (a relist's unchanged object, or a
// periodic resync): it goes only to the handlers whose resync is due, as
// in client-go.
func (s *Informer) onUpdate(old, obj any) {
	isSync := false
	if n, err := meta.Accessor(obj); err == nil {
		if o, err := meta.Accessor(old); err == nil {
			isSync = n.GetResourceVersion() == o.GetResourceVersion()
		}
	}
	s.mutation.AddObject(obj)
	s.processor.distribute(updateNotification{oldObj: old, newObj: obj}, isSync)
}

func (s *Informer) onDelete(old any) {
	s.processor.distribute(deleteNotification{oldObj: old}, false)
}
