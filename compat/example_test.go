package compat_test

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/lister"
)

// One Detector per process; its Server goes into the SDK's options. Nothing
// is sent until a list needs the server's capabilities.
func ExampleNewDetector() {
	cfg := &rest.Config{Host: "https://10.0.0.1:6443"} // in production: your kubeconfig's
	server, err := compat.NewDetector(compat.DetectorOptions{}).ForConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := lister.Options{Server: server}
	fmt.Println(opts.Server != nil)
	// Output: true
}
