package informer

// The event processor: per-handler buffering, ordering, resync bookkeeping
// and registration HasSynced, ported from client-go v0.37.2
// tools/cache/shared_informer.go (sharedProcessor, processorListener;
// Copyright 2015 The Kubernetes Authors, Apache License 2.0) so that
// handlers see exactly what client-go's informer gives them. Only the
// names of the notifications and of the handler differ.

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/cache/synctrack"
	"k8s.io/klog/v2"
	"k8s.io/utils/buffer"
	"k8s.io/utils/clock"
	utiltrace "k8s.io/utils/trace"
)

// initialBufferSize is the initial number of notifications a listener can
// buffer (client-go's): the buffer grows without bound.
const initialBufferSize = 1024

// minimumResyncPeriod is the smallest resync period a handler gets (client-go's).
const minimumResyncPeriod = 1 * time.Second

type updateNotification struct {
	oldObj, newObj any
}

type addNotification struct {
	newObj          any
	isInInitialList bool
}

type deleteNotification struct {
	oldObj any
}

// sharedProcessor has a collection of processorListener and can distribute
// a notification object to its listeners. There are two kinds of distribute
// operations: sync distributions go to listeners whose resync is due (the
// value true in listeners), the others to every listener.
type sharedProcessor struct {
	listenersStarted bool
	listenersLock    sync.RWMutex
	// listenersRCond is used to wait until listeners are started
	// (distribute must not add to a listener whose pop has not started).
	// Callers of Wait must hold a read lock on listenersLock.
	listenersRCond *sync.Cond
	// listeners maps each listener to whether it is syncing (its resync is due).
	listeners map[*processorListener]bool
	clock     clock.Clock
	wg        wait.Group
}

func newProcessor(c clock.Clock) *sharedProcessor {
	p := &sharedProcessor{clock: c}
	p.listenersRCond = sync.NewCond(p.listenersLock.RLocker())
	return p
}

func (p *sharedProcessor) addListener(listener *processorListener) (cache.ResourceEventHandlerRegistration, bool) {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	if p.listeners == nil {
		p.listeners = make(map[*processorListener]bool)
	}
	p.listeners[listener] = true
	if p.listenersStarted {
		p.wg.Start(listener.run)
		p.wg.Start(listener.pop)
	}
	return listener, p.listenersStarted
}

func (p *sharedProcessor) removeListener(handle cache.ResourceEventHandlerRegistration) error {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	listener, ok := handle.(*processorListener)
	switch {
	case !ok:
		return fmt.Errorf("invalid key type %T", handle)
	case p.listeners == nil:
		return nil // already stopped
	}
	if _, exists := p.listeners[listener]; !exists {
		return nil // already removed
	}
	delete(p.listeners, listener)
	if p.listenersStarted {
		close(listener.addCh)
	} else {
		close(listener.runFinished)
	}
	return nil
}

func (p *sharedProcessor) distribute(obj any, sync bool) {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	for !p.listenersStarted && len(p.listeners) > 0 {
		p.listenersRCond.Wait()
	}
	for listener, isSyncing := range p.listeners {
		if !sync || isSyncing {
			listener.add(obj)
		}
	}
}

func (p *sharedProcessor) run(ctx context.Context) {
	func() {
		p.listenersLock.Lock()
		defer p.listenersLock.Unlock()
		for listener := range p.listeners {
			p.wg.Start(listener.watchSynced)
			p.wg.Start(listener.run)
			p.wg.Start(listener.pop)
		}
		p.listenersStarted = true
		p.listenersRCond.Signal()
	}()
	<-ctx.Done()
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	for listener := range p.listeners {
		close(listener.addCh) // pop stops, and then run
	}
	// No listener is left: a distribute waiting for the start goes on
	// (a new informer is needed to add handlers again).
	p.listeners = nil
	p.listenersStarted = false
	p.listenersRCond.Signal()
	p.wg.Wait()
}

// shouldResync queries every listener to determine if any of them need a
// resync, based on each listener's resyncPeriod, and marks them.
func (p *sharedProcessor) shouldResync() bool {
	p.listenersLock.Lock()
	defer p.listenersLock.Unlock()
	resyncNeeded := false
	now := p.clock.Now()
	for listener := range p.listeners {
		should := listener.shouldResync(now)
		p.listeners[listener] = should
		if should {
			resyncNeeded = true
			listener.determineNextResync(now)
		}
	}
	return resyncNeeded
}

func (p *sharedProcessor) resyncCheckPeriodChanged(logger klog.Logger, resyncCheckPeriod time.Duration) {
	p.listenersLock.RLock()
	defer p.listenersLock.RUnlock()
	for listener := range p.listeners {
		listener.setResyncPeriod(determineResyncPeriod(logger, listener.requestedResyncPeriod, resyncCheckPeriod))
	}
}

// processorListener relays notifications from a sharedProcessor to one
// handler, through an unbounded buffer: pop moves notifications from addCh
// to nextCh, buffering as many as the handler is behind; run calls the
// handler in order. It is also the handler's registration.
type processorListener struct {
	logger      klog.Logger
	nextCh      chan any
	addCh       chan any
	done        chan struct{}
	runFinished chan struct{}

	handler     cache.ResourceEventHandler
	handlerName string

	syncTracker       *synctrack.SingleFileTracker
	upstreamHasSynced cache.DoneChecker

	pendingNotifications       buffer.TypedRingGrowing[any]
	pendingNotificationsLength atomic.Int64

	// requestedResyncPeriod is the handler's own; resyncPeriod the one in
	// effect (the informer's check period may raise it); nextResync the
	// earliest time of the next full resync.
	requestedResyncPeriod time.Duration
	resyncPeriod          time.Duration
	nextResync            time.Time
	resyncLock            sync.Mutex
}

// HasSynced implements cache.ResourceEventHandlerRegistration: the
// informer synced and the handler has been given every object of the
// initial list (or of the store, for a handler added later).
func (p *processorListener) HasSynced() bool { return p.syncTracker.HasSynced() }

// HasSyncedChecker implements cache.ResourceEventHandlerRegistration.
func (p *processorListener) HasSyncedChecker() cache.DoneChecker { return p.syncTracker }

// ShutdownChan is closed when the handler is done (cache.ShutDownEventHandler).
func (p *processorListener) ShutdownChan() <-chan struct{} { return p.runFinished }

func newProcessListener(logger klog.Logger, handler cache.ResourceEventHandler, requestedResyncPeriod, resyncPeriod time.Duration, now time.Time, bufferSize int, hasSynced cache.DoneChecker) *processorListener {
	name := nameForHandler(handler)
	p := &processorListener{
		logger:                logger,
		nextCh:                make(chan any),
		addCh:                 make(chan any),
		done:                  make(chan struct{}),
		runFinished:           make(chan struct{}),
		upstreamHasSynced:     hasSynced,
		handler:               handler,
		handlerName:           name,
		syncTracker:           synctrack.NewSingleFileTracker(fmt.Sprintf("%s + event handler %s", hasSynced.Name(), name)),
		pendingNotifications:  *buffer.NewTypedRingGrowing[any](buffer.RingGrowingOptions{InitialSize: bufferSize}),
		requestedResyncPeriod: requestedResyncPeriod,
		resyncPeriod:          resyncPeriod,
	}
	p.determineNextResync(now)
	return p
}

func (p *processorListener) add(notification any) {
	if a, ok := notification.(addNotification); ok && a.isInInitialList {
		p.syncTracker.Start()
	}
	p.addCh <- notification
}

func (p *processorListener) pop() {
	defer utilruntime.HandleCrashWithLogger(p.logger)
	defer close(p.nextCh) // run stops
	defer close(p.done)   // watchSynced stops
	var (
		nextCh       chan<- any
		notification any
	)
	for {
		select {
		case nextCh <- notification:
			var ok bool
			if notification, ok = p.pendingNotifications.ReadOne(); ok {
				p.pendingNotificationsLength.Add(-1)
			} else {
				nextCh = nil // nothing to pop
			}
		case toAdd, ok := <-p.addCh:
			if !ok {
				return
			}
			if notification == nil {
				notification, nextCh = toAdd, p.nextCh
			} else {
				p.pendingNotifications.WriteOne(toAdd)
				p.pendingNotificationsLength.Add(1)
			}
		}
	}
}

func (p *processorListener) run() {
	defer close(p.runFinished)
	sleepAfterCrash := false
	for next := range p.nextCh {
		if sleepAfterCrash {
			// client-go's: a handler that panicked is not called again at once.
			time.Sleep(time.Second)
		}
		func() {
			sleepAfterCrash = true
			defer utilruntime.HandleCrashWithLogger(p.logger)
			if pending := p.pendingNotificationsLength.Load(); pending > initialBufferSize {
				trace := utiltrace.New("processorListener handler",
					utiltrace.Field{Key: "handler", Value: p.handlerName},
					utiltrace.Field{Key: "pendingNotifications", Value: pending})
				defer trace.LogIfLong(100 * time.Millisecond)
			}
			switch n := next.(type) {
			case updateNotification:
				p.handler.OnUpdate(n.oldObj, n.newObj)
			case addNotification:
				p.handler.OnAdd(n.newObj, n.isInInitialList)
				if n.isInInitialList {
					p.syncTracker.Finished()
				}
			case deleteNotification:
				p.handler.OnDelete(n.oldObj)
			default:
				utilruntime.HandleErrorWithLogger(p.logger, nil, "unrecognized notification", "notificationType", fmt.Sprintf("%T", next))
			}
			sleepAfterCrash = false
		}()
	}
}

func (p *processorListener) watchSynced() {
	select {
	case <-p.upstreamHasSynced.Done():
		p.syncTracker.UpstreamHasSynced()
	case <-p.done:
	}
}

func (p *processorListener) shouldResync(now time.Time) bool {
	p.resyncLock.Lock()
	defer p.resyncLock.Unlock()
	if p.resyncPeriod == 0 {
		return false
	}
	return !now.Before(p.nextResync)
}

func (p *processorListener) determineNextResync(now time.Time) {
	p.resyncLock.Lock()
	defer p.resyncLock.Unlock()
	p.nextResync = now.Add(p.resyncPeriod)
}

func (p *processorListener) setResyncPeriod(resyncPeriod time.Duration) {
	p.resyncLock.Lock()
	defer p.resyncLock.Unlock()
	p.resyncPeriod = resyncPeriod
}

// determineResyncPeriod is client-go's: a handler's resync period, given
// the informer's resync check period.
func determineResyncPeriod(logger klog.Logger, desired, check time.Duration) time.Duration {
	if desired == 0 {
		return desired
	}
	if check == 0 {
		logger.Info("Warning: the specified resyncPeriod is invalid because this shared informer doesn't support resyncing", "desired", desired)
		return 0
	}
	if desired < check {
		logger.Info("Warning: the specified resyncPeriod is being increased to the minimum resyncCheckPeriod", "desired", desired, "resyncCheckPeriod", check)
		return check
	}
	return desired
}

// nameForHandler names a handler for logs and registration names: the
// fully qualified name of the type that provides it.
func nameForHandler(handler cache.ResourceEventHandler) string {
	if handler == nil {
		return "<nil>"
	}
	t := reflect.TypeOf(handler)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" || t.Name() == "" {
		return fmt.Sprintf("%T", handler)
	}
	return t.PkgPath() + "." + t.Name()
}
