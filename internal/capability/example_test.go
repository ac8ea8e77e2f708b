package capability_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/steadywatch/steadywatch/internal/capability"
)

func ExampleParseVersion() {
	for _, s := range []string{"v1.27.3-eks-4f4795d", "v1.29.0+k3s1", "1.29", "not-a-version"} {
		v, err := capability.ParseVersion(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s -> %d.%d.%d pre=%q build=%q\n", s, v.Major, v.Minor, v.Patch, v.Pre, v.Build)
	}
	v, _ := capability.ParseVersion("v1.18.19")
	fmt.Println(capability.FromVersion(v))
	// Output:
	// v1.27.3-eks-4f4795d -> 1.27.3 pre="eks-4f4795d" build=""
	// v1.29.0+k3s1 -> 1.29.0 pre="" build="k3s1"
	// 1.29 -> 1.29.0 pre="" build=""
	// error: compat: cannot parse apiserver version "not-a-version": want <major>.<minor>[.<patch>]
	// v1.18.19 resourceVersionMatch=no watchBookmarks=yes streamingList=no consistentListFromCache=no tooLargeRVByMessage=no watchCacheProgress=no
}

func ExampleDetector() {
	ctx := context.Background()
	d := capability.NewDetector(capability.DetectorOptions{}) // zero value: 10 min TTLs, real clock, no metrics

	// In production: server, err := d.ForConfig(restConfig).
	server := d.For("https://10.0.0.1:6443", func(ctx context.Context) (string, error) {
		return "v1.34.4", nil // what GET /version said
	})

	caps := server.Capabilities(ctx)
	fmt.Println(caps.Get(capability.StreamingList), caps.Tentative(capability.StreamingList))
	fmt.Println(caps.Reasons[capability.StreamingList])

	// This cluster runs with the WatchList gate off: sendInitialEvents was answered 422.
	server.Observe(capability.Observation{
		Capability: capability.StreamingList,
		Support:    capability.No,
		Detail:     "watch with sendInitialEvents answered 422",
	})
	caps = server.Capabilities(ctx)
	fmt.Println(caps.Get(capability.StreamingList), caps.Tentative(capability.StreamingList))
	fmt.Println(caps)
	// Output:
	// yes true
	// version v1.34.4: WatchList is on by default since v1.34 (a cluster may disable it: verify)
	// no false
	// v1.34.4 resourceVersionMatch=yes watchBookmarks=yes streamingList=no(observed) consistentListFromCache=yes tooLargeRVByMessage=no watchCacheProgress=yes
}

func ExampleForGroupVersion() {
	ctx := context.Background()
	d := capability.NewDetector(capability.DetectorOptions{})
	host := d.For("https://10.0.0.1:6443", func(ctx context.Context) (string, error) {
		return "v1.34.4", nil // one GET /version per host, whatever the number of views
	})

	// One view per API group/version a lister or reflector serves.
	core := capability.ForGroupVersion(host, schema.GroupVersion{Version: "v1"})
	metricsAPI := capability.ForGroupVersion(host, schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"})

	// The aggregated apiserver behind metrics.k8s.io ignores sendInitialEvents:
	// the initial-events-end bookmark never came.
	metricsAPI.Observe(capability.Observation{
		Capability: capability.StreamingList,
		Support:    capability.No,
		Detail:     "no initial-events-end bookmark within 5s",
	})

	for _, s := range []capability.Server{core, metricsAPI, host} {
		c := s.Capabilities(ctx)
		fmt.Printf("%q: streamingList=%s (%s)\n", c.GroupVersion, c.Get(capability.StreamingList), c.Basis[capability.StreamingList])
	}
	fmt.Println(capability.MetricsNameFor(schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}))
	// Output:
	// "v1": streamingList=yes (gate-default)
	// "metrics.k8s.io/v1beta1": streamingList=no (observed)
	// "": streamingList=yes (gate-default)
	// compat/metrics.k8s.io/v1beta1
}
