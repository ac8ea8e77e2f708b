package lister_test

import (
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
)

// One cap on every wait a server asks for: the Policy the lister uses, and
// the same Policy for client-go's REST client, which otherwise sleeps a
// "Retry-After: 3600" inside one request before the lister sees an answer.
func ExampleCapRetryAfter() {
	policy := fallback.Policy{MaxRetryAfter: 15 * time.Second}
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"} // your kubeconfig's
	cs, err := kubernetes.NewForConfig(lister.CapRetryAfter(cfg, policy, nil, "configmaps"))
	if err != nil {
		panic(err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	l := lister.New(lister.FromFuncs(cms.List, cms.Watch), lister.Options{Policy: policy})
	_ = l // l.List(ctx, lister.MostRecent()), or l.ListerWatcher() for an informer
}
