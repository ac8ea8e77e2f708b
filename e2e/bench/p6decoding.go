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

// startDecodingDropIn starts the drop-in informer over the same typed
// cache.ListWatch as sw-dropin, given cfg and ns so that its lists are sent
// by steadywatch's own client and decoded item by item
// (reflector.NewSharedIndexInformerWithDecoding).
func (c contender) startDecodingDropIn(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, server compat.Server, ns string, in *instance, handler cache.ResourceEventHandlerFuncs) (*instance, error) {
	lw := typedListWatch(cs.CoreV1().ConfigMaps(ns))
	lo := lister.Options{Server: server, ListGate: c.gate, DisableStreamingList: c.NoStream}
	inf := reflector.NewSharedIndexInformerWithDecoding(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}, lo, lister.Decoding{Config: cfg, Namespace: ns})
	if _, err := inf.AddEventHandler(handler); err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	in.fromInformer(inf)
	return in, nil
}
