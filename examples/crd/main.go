// Command crd shows package canonical end to end against a real apiserver,
// with Gateway API's BackendTLSPolicy change
// (https://gateway-api.sigs.k8s.io/api-types/backendtlspolicy/): a CRD whose
// versions v1alpha1 and v1alpha2 are both served with x-kubernetes-preserve-unknown-fields, where
// v1alpha2 renamed spec.tls to spec.validation.
//
// With -setup it installs the CRD and writes sample objects through both
// versions (its only writes). It then runs an informer on
//
//	canonical.Wrap(lister.NewListerWatcher(lister.FromDynamic(...)), chain, opts)
//
// prints every object of the store (all in the v1alpha2 shape, whatever
// version was used to write them or is used to read them) and every object
// the decorator left out with its reason, and exits; with -watch it keeps
// printing events for that long first.
//
//	cd e2e && go run ./cmd/devcluster --server current   # prints KUBECONFIG=...
//	cd examples && KUBECONFIG=... go run ./crd -setup -watch 30s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/canonical"
	"github.com/steadywatch/steadywatch/lister"
)

const (
	group    = "gateway.steadywatch.example"
	resource = "backendtlspolicies"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	nsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

	tls        = []string{"spec", "tls"}
	validation = []string{"spec", "validation"}
)

// Chain is the API's published shape history, oldest first. A controller
// written against v1alpha2 makes it canonical; objects with fields no shape
// knows (a future version's) are rejected instead of misread.
func Chain() (*canonical.Chain, error) {
	return canonical.NewChain("v1alpha2",
		canonical.Shape{
			Name:      "v1alpha1",
			Recognize: canonical.AllOf(canonical.HasField(tls...), canonical.OnlyKeys([]string{"spec"}, "targetRefs", "tls", "validation")),
			// A BackendTLSPolicy that still has a TLS field: move its value to
			// the Validation field and remove the TLS field.
			Upgrade:   canonical.MoveField(tls, validation),
			Downgrade: canonical.MoveField(validation, tls),
		},
		canonical.Shape{
			Name:      "v1alpha2",
			Recognize: canonical.AllOf(canonical.LacksField(tls...), canonical.OnlyKeys([]string{"spec"}, "targetRefs", "validation")),
		},
	)
}

func main() {
	var (
		kubeconfig = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
		namespace  = flag.String("namespace", "canonical-demo", "namespace of the sample objects")
		version    = flag.String("version", "v1alpha1", "the CRD version the informer lists and watches through (the shape it sees does not depend on it)")
		setup      = flag.Bool("setup", false, "install the CRD and create the sample objects first (the program's only writes)")
		watchFor   = flag.Duration("watch", 0, "print watch events for this long before printing the store")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *version, *setup, *watchFor, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "crd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, ns, version string, setup bool, watchFor time.Duration, out io.Writer) error {
	if kubeconfig == "" {
		return errors.New("no kubeconfig: set -kubeconfig or KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if setup {
		if err := install(ctx, dyn, ns); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	return inform(ctx, dyn, ns, version, watchFor, out)
}

func inform(ctx context.Context, dyn dynamic.Interface, ns, version string, watchFor time.Duration, out io.Writer) error {
	chain, err := Chain()
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	inner := lister.NewListerWatcher(lister.FromDynamic(dyn.Resource(gvr).Namespace(ns)), lister.Options{Name: resource})
	lw := canonical.Wrap(inner, chain, canonical.Options{
		Name: resource,
		OnReject: func(_ context.Context, r canonical.Rejection) {
			ev := string(r.Event)
			if ev == "" {
				ev = "LIST"
			}
			fmt.Fprintf(out, "left out  %-8s %s/%s: %s (%s)\n", ev, r.Err.Namespace, r.Err.Name, r.Err.Reason, r.Action)
		},
	})
	inf := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { fmt.Fprintf(out, "event     ADD     %s\n", describe(o)) },
		UpdateFunc: func(_, o any) { fmt.Fprintf(out, "event     UPDATE  %s\n", describe(o)) },
		DeleteFunc: func(o any) { fmt.Fprintf(out, "event     DELETE  %s\n", describe(o)) },
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()

	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return errors.New("informer did not sync within a minute")
	}
	if watchFor > 0 {
		fmt.Fprintf(out, "synced; watching for %v (write objects through either version to see them canonicalized)\n", watchFor)
		select {
		case <-time.After(watchFor):
		case <-ctx.Done():
		}
	}
	fmt.Fprintf(out, "store (listed and watched through %s):\n", version)
	objs := inf.GetStore().List()
	sort.Slice(objs, func(i, j int) bool { return describe(objs[i]) < describe(objs[j]) })
	for _, o := range objs {
		fmt.Fprintf(out, "  %s\n", describe(o))
	}
	return nil
}

func describe(o any) string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return fmt.Sprintf("%T", o)
	}
	shape := "spec.validation"
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, tls...); found {
		shape = "spec.tls (NOT canonical)"
	}
	host, _, _ := unstructured.NestedString(u.Object, "spec", "validation", "hostname")
	s := fmt.Sprintf("%s/%s apiVersion=%s shape=%s hostname=%q", u.GetNamespace(), u.GetName(), u.GetAPIVersion(), shape, host)
	if r := u.GetAnnotations()[canonical.RejectedAnnotation]; r != "" {
		s += " (tombstone: " + r + ")"
	}
	return s
}

// install creates the CRD, the namespace and one object per case. It is
// idempotent: existing objects are left alone.
func install(ctx context.Context, dyn dynamic.Interface, ns string) error {
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": resource + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names":    map[string]any{"plural": resource, "singular": "backendtlspolicy", "kind": "BackendTLSPolicy", "listKind": "BackendTLSPolicyList"},
			"versions": []any{version("v1alpha1", false), version("v1alpha2", true)},
		},
	}}
	if err := create(ctx, dyn.Resource(crdGVR), crd); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, v := range []string{"v1alpha1", "v1alpha2"} {
			if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: v, Resource: resource}).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CRD not served: %w", err)
	}
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if err := create(ctx, dyn.Resource(nsGVR), nsObj); err != nil {
		return err
	}
	hostSpec := func(h string) map[string]any { return map[string]any{"hostname": h} }
	samples := []struct {
		version, name string
		spec          map[string]any
	}{
		{"v1alpha1", "written-as-v1alpha1", map[string]any{"tls": hostSpec("old.example")}},
		{"v1alpha2", "written-as-v1alpha2", map[string]any{"validation": hostSpec("new.example")}},
		{"v1alpha2", "from-the-future", map[string]any{"validation": hostSpec("future.example"), "sessionPersistence": map[string]any{"mode": "cookie"}}},
	}
	for _, s := range samples {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/" + s.version, "kind": "BackendTLSPolicy",
			"metadata": map[string]any{"name": s.name, "namespace": ns}, "spec": s.spec}}
		ri := dyn.Resource(schema.GroupVersionResource{Group: group, Version: s.version, Resource: resource}).Namespace(ns)
		if err := create(ctx, ri, u); err != nil {
			return err
		}
	}
	return nil
}

func create(ctx context.Context, ri dynamic.ResourceInterface, u *unstructured.Unstructured) error {
	_, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}
