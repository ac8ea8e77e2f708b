package crclient_test

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/steadywatch/steadywatch/examples/readyourwrites/crclient"
	"github.com/steadywatch/steadywatch/reflector"
)

// A reconciler given c instead of mgr.GetClient() reads back its own
// writes. With steadywatch's informers in the cache (NewInformer), a List
// also counts bookmarks as the cache catching up.
func ExampleNew() {
	cfg := ctrl.GetConfigOrDie()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache: cache.Options{NewInformer: reflector.NewInformerFor(cfg)},
	})
	if err != nil {
		panic(err)
	}
	c := crclient.New(mgr, crclient.Options{})
	_ = c // the reconciler's client.Client
}
