package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// startInformerFor starts the informer controller-runtime's NewInformer
// hook builds with reflector.NewInformerFor(cfg, ...), over the same typed
// cache.ListWatch as sw-dropin: its lists and watches are sent by
// steadywatch's own client built from cfg, once it has checked that it
// lists what the ListWatch lists.
func (c contender) startInformerFor(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, server compat.Server, ns string, in *instance, handler cache.ResourceEventHandlerFuncs) (*instance, error) {
	lw := typedListWatch(cs.CoreV1().ConfigMaps(ns))
	lo := lister.Options{Server: server, ListGate: c.gate, DisableStreamingList: c.NoStream}
	inf := reflector.NewInformerFor(cfg, lo)(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if _, err := inf.AddEventHandler(handler); err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	in.fromInformer(inf)
	return in, nil
}
