package canonical_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/steadywatch/steadywatch/canonical"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/lister"
)

const (
	group    = "gateway.steadywatch.test"
	resource = "backendtlspolicies"
	crdName  = resource + "." + group
	// ownerLabel marks the CRD as this suite's, so that one left behind by an
	// interrupted run may be deleted and one of someone else's is never touched.
	ownerLabel = "e2e.steadywatch.test/suite"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvr    = map[string]schema.GroupVersionResource{
		"v1alpha1": {Group: group, Version: "v1alpha1", Resource: resource},
		"v1alpha2": {Group: group, Version: "v1alpha2", Resource: resource},
	}
	tlsPath        = []string{"spec", "tls"}
	validationPath = []string{"spec", "validation"}
	v1beta1Path    = []string{"spec", "backendValidation"}
)

// chain is Gateway API's BackendTLSPolicy change: v1alpha2 renames spec.tls to
// spec.validation. v1beta1 (renames it again, to spec.backendValidation) is a
// shape the controller under test knows exists but does not support.
func chain() *canonical.Chain {
	c, err := canonical.NewChain("v1alpha2",
		canonical.Shape{
			Name:      "v1alpha1",
			Recognize: canonical.AllOf(canonical.HasField(tlsPath...), canonical.OnlyKeys([]string{"spec"}, "targetRefs", "options", "tls", "validation")),
			Upgrade:   canonical.MoveField(tlsPath, validationPath),
			Downgrade: canonical.MoveField(validationPath, tlsPath),
		},
		canonical.Shape{
			Name:      "v1alpha2",
			Recognize: canonical.AllOf(canonical.LacksField(tlsPath...), canonical.OnlyKeys([]string{"spec"}, "targetRefs", "options", "validation")),
			Upgrade:   canonical.MoveField(validationPath, v1beta1Path),
			Downgrade: canonical.MoveField(v1beta1Path, validationPath),
		},
		canonical.Shape{
			Name:      "v1beta1",
			Recognize: canonical.AllOf(canonical.HasField(v1beta1Path...), canonical.LacksField(validationPath...), canonical.LacksField(tlsPath...)),
		},
	)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func crd() *unstructured.Unstructured {
	version := func(name string, storage bool) map[string]any {
		return map[string]any{
			"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": crdName, "labels": map[string]any{ownerLabel: "canonical"}},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": resource, "singular": "backendtlspolicy", "kind": "BackendTLSPolicy", "listKind": "BackendTLSPolicyList"},
			// No conversion webhook (the point of client-side canonicalization); strategy None only rewrites apiVersion.
			"versions": []any{version("v1alpha1", false), version("v1alpha2", true)},
		},
	}}
}

// createCRD creates the suite's CRD and deletes it at cleanup. A CRD of the
// same name left by an interrupted run of this suite (ownerLabel) is deleted
// first; one without the label is someone else's and fails the suite.
func createCRD(ctx context.Context, dyn dynamic.Interface) {
	crds := dyn.Resource(crdGVR)
	old, err := crds.Get(ctx, crdName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		Expect(err).NotTo(HaveOccurred())
	default:
		Expect(old.GetLabels()).To(HaveKeyWithValue(ownerLabel, "canonical"),
			"CRD %s exists and is not this suite's; refusing to touch it", crdName)
		fmt.Fprintf(GinkgoWriter, "deleting %s left by an earlier run\n", crdName)
		err := crds.Delete(ctx, crdName, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func() bool {
			_, err := crds.Get(ctx, crdName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(BeTrue(), "CRD %s still there", crdName)
	}
	_, err = crds.Create(ctx, crd(), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		err := crds.Delete(ctx, crdName, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred(), "deleting CRD %s", crdName)
		}
	}, NodeTimeout(time.Minute))
}

func policy(version, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + version, "kind": "BackendTLSPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

func tlsSpec(host string) map[string]any {
	return map[string]any{"hostname": host, "caCertificateRefs": []any{map[string]any{"kind": "ConfigMap", "name": "ca-" + host}}}
}

// callLog wraps the dynamic client's ListerWatcher, records what client-go's
// reflector asked for, and can declare that it does not support WatchList
// semantics (plain list+watch) or leave client-go's default (streaming list).
type callLog struct {
	inner cache.ListerWatcherWithContext
	plain bool

	mu            sync.Mutex
	lists         int
	initialEvents int // watches with sendInitialEvents=true
}

func (c *callLog) IsWatchListSemanticsUnSupported() bool {
	return c.plain || watchlist.DoesClientNotSupportWatchListSemantics(c.inner)
}
func (c *callLog) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}
func (c *callLog) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}
func (c *callLog) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.inner.ListWithContext(ctx, o)
}
func (c *callLog) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		c.mu.Lock()
		c.initialEvents++
		c.mu.Unlock()
	}
	return c.inner.WatchWithContext(ctx, o)
}
func (c *callLog) counts() (lists, initialEvents int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists, c.initialEvents
}

func dynamicLW(dyn dynamic.Interface, r schema.GroupVersionResource, ns string) cache.ListerWatcherWithContext {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return dyn.Resource(r).Namespace(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return dyn.Resource(r).Namespace(ns).Watch(ctx, o)
		},
	}
}

// observed collects what the decorator reported: rejections (OnReject),
// metrics (Fallback) and log lines (klog.FromContext at V(2)).
type observed struct {
	*reasons.Counter
	mu         sync.Mutex
	rejections []string // "event name reason action"
	logs       []string
	deletes    []string // OnDelete: "name annotation"
}

func newObserved() *observed { return &observed{Counter: reasons.NewFallbacks()} }

func (o *observed) onReject(_ context.Context, r canonical.Rejection) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := string(r.Event)
	if ev == "" {
		ev = "LIST"
	}
	o.rejections = append(o.rejections, fmt.Sprintf("%s %s %s %s", ev, r.Err.Name, r.Err.Reason, r.Action))
}

func (o *observed) snapshot() (rej []string, fb map[string]int, logs string, deletes []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.rejections...), o.Family(reasons.FamilyFallback), strings.Join(o.logs, "\n"), append([]string(nil), o.deletes...)
}

// informer is one SharedIndexInformer on a decorated ListerWatcher.
type informer struct {
	inf    cache.SharedIndexInformer
	calls  *callLog
	obs    *observed
	cancel context.CancelFunc
	done   chan struct{}
}

func startInformer(dyn dynamic.Interface, version, ns string, plain bool) *informer {
	return startInformerOn(dynamicLW(dyn, gvr[version], ns), plain)
}

func startInformerOn(inner cache.ListerWatcherWithContext, plain bool) *informer {
	obs := newObserved()
	calls := &callLog{inner: inner, plain: plain}
	lw := canonical.Wrap(calls, chain(), canonical.Options{Name: resource, Metrics: obs, OnReject: obs.onReject})
	inf := cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			obs.deletes = append(obs.deletes, u.GetName()+" "+u.GetAnnotations()[canonical.RejectedAnnotation])
		},
	})
	Expect(err).NotTo(HaveOccurred())
	logger := funcr.New(func(_, args string) {
		if !strings.Contains(args, "canonical: object not in a supported shape") {
			return
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		obs.logs = append(obs.logs, args)
	}, funcr.Options{Verbosity: 2})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	i := &informer{inf: inf, calls: calls, obs: obs, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(i.done)
		inf.RunWithContext(ctx)
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	Expect(cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)).To(BeTrue(), "informer did not sync within 30s")
	return i
}

func (i *informer) stop() {
	i.cancel()
	select {
	case <-i.done:
	case <-time.After(30 * time.Second):
		Fail("informer did not stop within 30s")
	}
}

// store returns name -> object of the informer's store.
func (i *informer) store() map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range i.inf.GetStore().List() {
		u := o.(*unstructured.Unstructured)
		out[u.GetName()] = u
	}
	return out
}

func names(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// raw GETs every object through every served version and returns the exact bytes.
func raw(ctx context.Context, rc rest.Interface, ns string, objNames []string) map[string]string {
	out := map[string]string{}
	for _, n := range objNames {
		for _, v := range []string{"v1alpha1", "v1alpha2"} {
			b, err := rc.Get().AbsPath("/apis", group, v, "namespaces", ns, resource, n).DoRaw(ctx)
			Expect(err).NotTo(HaveOccurred())
			out[v+"/"+n] = string(b)
		}
	}
	return out
}

// expectThreeCanonical checks that store holds exactly the three objects
// every spec writes, each in the canonical shape.
func expectThreeCanonical(store map[string]*unstructured.Unstructured) {
	GinkgoHelper()
	c := chain()
	Expect(names(store)).To(Equal([]string{"created-v1alpha1", "created-v1alpha2", "migrated"}))
	expectCanonical(c, store["created-v1alpha1"], "one.example")
	expectCanonical(c, store["created-v1alpha2"], "two.example")
	expectCanonical(c, store["migrated"], "three.example")
}

// expectCanonical asserts that o is in the v1alpha2 shape with the given hostname.
func expectCanonical(c *canonical.Chain, o *unstructured.Unstructured, host string) {
	GinkgoHelper()
	out, shape, err := c.Canonicalize(o)
	Expect(err).NotTo(HaveOccurred(), "%s", o.GetName())
	Expect(shape).To(Equal("v1alpha2"), "%s", o.GetName())
	Expect(out).To(BeIdenticalTo(o), "%s: a canonical object is passed as it is", o.GetName())
	Expect(o.Object["spec"]).NotTo(HaveKey("tls"), "%s", o.GetName())
	got, _, err := unstructured.NestedString(o.Object, "spec", "validation", "hostname")
	Expect(err).NotTo(HaveOccurred())
	Expect(got).To(Equal(host), "%s", o.GetName())
}

var _ = Describe("canonical.Wrap against the current kube-apiserver", Label("canonical", "current", "conformance"), Ordered, func() {
	var (
		ctx    context.Context
		cancel context.CancelFunc
		cfg    *rest.Config
		dyn    dynamic.Interface
		rc     rest.Interface
		ns     string
		before map[string]string
		all    = []string{"created-v1alpha1", "created-v1alpha2", "migrated", "future-field", "newer-shape"}
		// streams: client-go's default informer gets its initial list as a stream
		// (WatchList on by default in the server). True on the harness's current
		// server; on an external cluster, what its version's gate default says.
		streams bool
	)

	BeforeAll(func(startCtx SpecContext) {
		t := suite.Start(startCtx, harness.Options{Version: build.Current})
		cfg = t.RESTConfig()
		streams = true
		if t.External() {
			v, err := capability.ParseVersion(t.Version())
			Expect(err).NotTo(HaveOccurred())
			streams = capability.FromVersion(v).Get(capability.StreamingList) == capability.Yes
			AddReportEntry("external apiserver", fmt.Sprintf("%s: streaming list expected %v", t.Version(), streams))
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
		DeferCleanup(cancel)

		var err error
		dyn, err = dynamic.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		cs := suite.Clientset(cfg)
		rc = cs.Discovery().RESTClient()

		By("creating the CRD with v1alpha1 and v1alpha2 served and x-kubernetes-preserve-unknown-fields")
		createCRD(ctx, dyn)
		Eventually(func(g Gomega) {
			got, err := dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					established = true
				}
			}
			g.Expect(established).To(BeTrue())
			// Both versions answer (the discovery and handler are in place).
			for _, v := range []string{"v1alpha1", "v1alpha2"} {
				_, err := dyn.Resource(gvr[v]).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
				g.Expect(err).NotTo(HaveOccurred())
			}
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

		ns = suite.NewNamespace(ctx, cs, "canonical")
		create := func(version string, o *unstructured.Unstructured) {
			GinkgoHelper()
			_, err := dyn.Resource(gvr[version]).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		// update GETs through one version and PUTs the object back through it
		// after mutate: what a client of that version does.
		update := func(version, name string, mutate func(*unstructured.Unstructured)) {
			GinkgoHelper()
			o, err := dyn.Resource(gvr[version]).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			mutate(o)
			_, err = dyn.Resource(gvr[version]).Namespace(ns).Update(ctx, o, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}

		By("creating objects through each version and updating them through the other")
		targets := []any{map[string]any{"kind": "Service", "name": "backend"}}
		create("v1alpha1", policy("v1alpha1", ns, "created-v1alpha1", map[string]any{"targetRefs": targets, "tls": tlsSpec("one.example")}))
		update("v1alpha2", "created-v1alpha1", func(o *unstructured.Unstructured) {
			// A v1alpha2 client sees spec.tls (preserve-unknown-fields) and keeps it.
			Expect(o.Object["spec"]).To(HaveKey("tls"))
			Expect(unstructured.SetNestedField(o.Object, "updated-through-v1alpha2", "spec", "options", "note")).To(Succeed())
		})
		create("v1alpha2", policy("v1alpha2", ns, "created-v1alpha2", map[string]any{"targetRefs": targets, "validation": tlsSpec("two.example")}))
		update("v1alpha1", "created-v1alpha2", func(o *unstructured.Unstructured) {
			Expect(o.Object["spec"]).To(HaveKey("validation"))
			Expect(unstructured.SetNestedField(o.Object, "updated-through-v1alpha1", "spec", "options", "note")).To(Succeed())
		})
		create("v1alpha1", policy("v1alpha1", ns, "migrated", map[string]any{"targetRefs": targets, "tls": tlsSpec("three.example")}))
		update("v1alpha2", "migrated", func(o *unstructured.Unstructured) {
			// The conversion a user would write: copy TLS to Validation, remove TLS, write the new version.
			Expect(canonical.MoveField(tlsPath, validationPath)(o)).To(Succeed())
		})
		create("v1alpha2", policy("v1alpha2", ns, "future-field", map[string]any{
			"targetRefs": targets, "validation": tlsSpec("four.example"), "sessionPersistence": map[string]any{"mode": "cookie"},
		}))
		create("v1alpha2", policy("v1alpha2", ns, "newer-shape", map[string]any{"targetRefs": targets, "backendValidation": tlsSpec("five.example")}))

		By("checking that the server stores what was written, whatever version is asked (strategy None)")
		for _, v := range []string{"v1alpha1", "v1alpha2"} {
			o, err := dyn.Resource(gvr[v]).Namespace(ns).Get(ctx, "created-v1alpha1", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(o.GetAPIVersion()).To(Equal(group + "/" + v))
			Expect(o.Object["spec"]).To(And(HaveKey("tls"), Not(HaveKey("validation"))), "through %s", v)
		}
		before = raw(ctx, rc, ns, all)
	})

	type mode struct {
		version string // the version the informer lists and watches through
		plain   bool   // list+watch instead of client-go's default streaming list
	}
	for _, m := range []mode{{"v1alpha2", false}, {"v1alpha2", true}, {"v1alpha1", false}, {"v1alpha1", true}} {
		name := fmt.Sprintf("through %s with a streaming list", m.version)
		if m.plain {
			name = fmt.Sprintf("through %s with list+watch", m.version)
		}
		It("an informer "+name+" sees every supported object in the v1alpha2 shape and skips the others with their reason", func() {
			start := time.Now()
			inf := startInformer(dyn, m.version, ns, m.plain)
			defer inf.stop()
			fmt.Fprintf(GinkgoWriter, "informer synced in %v\n", time.Since(start))

			lists, initialEvents := inf.calls.counts()
			streamed := !m.plain && streams
			switch {
			case m.plain:
				Expect(lists).To(BeNumerically(">=", 1))
				Expect(initialEvents).To(BeZero())
			case streams:
				Expect(initialEvents).To(BeNumerically(">=", 1), "client-go did not stream the initial list through the decorator")
				Expect(lists).To(BeZero(), "client-go fell back to a list")
			default:
				// An external server whose version does not stream by default: client-go
				// falls back to list+watch, and the decorator sees a LIST.
				Expect(lists).To(BeNumerically(">=", 1), "the server should not stream; client-go must have listed")
			}

			store := inf.store()
			expectThreeCanonical(store)
			for _, o := range store {
				// apiVersion is the request's, not the shape's (CRD conversion strategy None); the decorator leaves it.
				Expect(o.GetAPIVersion()).To(Equal(group + "/" + m.version))
			}
			note, _, err := unstructured.NestedString(store["created-v1alpha1"].Object, "spec", "options", "note")
			Expect(err).NotTo(HaveOccurred())
			Expect(note).To(Equal("updated-through-v1alpha2"), "the update through the other version is in the canonical object")

			ev := "LIST"
			if streamed {
				ev = "ADDED"
			}
			rej, fb, logs, _ := inf.obs.snapshot()
			Expect(rej).To(ConsistOf(ev+" future-field unrecognized skip", ev+" newer-shape newer-shape skip"))
			Expect(fb).To(Equal(map[string]int{"canonical:skip:unrecognized": 1, "canonical:skip:newer-shape": 1}))
			Expect(logs).To(ContainSubstring(fmt.Sprintf(`"namespace"=%q "name"="future-field" "reason"="unrecognized"`, ns)))
			Expect(logs).To(ContainSubstring(`"name"="newer-shape" "reason"="newer-shape"`))
			Expect(logs).To(ContainSubstring(`"shape"="v1beta1"`))
			Expect(logs).NotTo(ContainSubstring("example"), "object content in the logs")

			By("the objects on the server are unchanged byte for byte")
			Expect(raw(ctx, rc, ns, all)).To(Equal(before))
		})
	}

	It("stacks on steadywatch's lister.ListerWatcher (canonical.Wrap(lister.NewListerWatcher(...)))", func() {
		inner := lister.NewListerWatcher(lister.FromDynamic(dyn.Resource(gvr["v1alpha2"]).Namespace(ns)), lister.Options{Name: resource})
		inf := startInformerOn(inner, false)
		defer inf.stop()
		expectThreeCanonical(inf.store())
		_, fb, _, _ := inf.obs.snapshot()
		Expect(fb).To(Equal(map[string]int{"canonical:skip:unrecognized": 1, "canonical:skip:newer-shape": 1}))
		Expect(raw(ctx, rc, ns, all)).To(Equal(before))
	})

	It("keeps the store canonical through watch events: updates, a move into an unknown shape, creates and deletes", func() {
		inf := startInformer(dyn, "v1alpha2", ns, false)
		defer inf.stop()
		c := chain()
		res := func(v string) dynamic.ResourceInterface { return dyn.Resource(gvr[v]).Namespace(ns) }
		patch := func(v, name, js string) {
			GinkgoHelper()
			_, err := res(v).Patch(ctx, name, types.MergePatchType, []byte(js), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		eventually := func(f func(g Gomega)) {
			GinkgoHelper()
			Eventually(f).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		}

		By("MODIFIED through v1alpha1 on an object in the old shape: converted")
		patch("v1alpha1", "created-v1alpha1", `{"spec":{"tls":{"hostname":"one-b.example"}}}`)
		eventually(func(g Gomega) {
			o := inf.store()["created-v1alpha1"]
			g.Expect(o).NotTo(BeNil())
			h, _, _ := unstructured.NestedString(o.Object, "spec", "validation", "hostname")
			g.Expect(h).To(Equal("one-b.example"))
		})
		expectCanonical(c, inf.store()["created-v1alpha1"], "one-b.example")

		By("MODIFIED into a shape no recogniser claims: the stale canonical copy leaves the store as a tombstone")
		patch("v1alpha2", "created-v1alpha2", `{"spec":{"sessionPersistence":{"mode":"cookie"}}}`)
		eventually(func(g Gomega) { g.Expect(inf.store()).NotTo(HaveKey("created-v1alpha2")) })

		By("ADDED through v1alpha1 in the old shape: converted; ADDED in a newer shape: skipped")
		_, err := res("v1alpha1").Create(ctx, policy("v1alpha1", ns, "late-v1alpha1", map[string]any{"tls": tlsSpec("six.example")}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = res("v1alpha2").Create(ctx, policy("v1alpha2", ns, "late-newer", map[string]any{"backendValidation": tlsSpec("seven.example")}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		eventually(func(g Gomega) { g.Expect(inf.store()).To(HaveKey("late-v1alpha1")) })
		expectCanonical(c, inf.store()["late-v1alpha1"], "six.example")

		By("DELETED of canonical and of skipped objects still delete")
		Expect(res("v1alpha2").Delete(ctx, "migrated", metav1.DeleteOptions{})).To(Succeed())
		Expect(res("v1alpha2").Delete(ctx, "future-field", metav1.DeleteOptions{})).To(Succeed())
		eventually(func(g Gomega) {
			g.Expect(names(inf.store())).To(Equal([]string{"created-v1alpha1", "late-v1alpha1"}))
			_, _, _, deletes := inf.obs.snapshot()
			g.Expect(deletes).To(ContainElements(
				"created-v1alpha2 unrecognized", // left the supported shapes
				"migrated ",                     // really deleted, canonical object
				"future-field unrecognized",     // really deleted, never in the store
			))
		})
		rej, _, _, _ := inf.obs.snapshot()
		Expect(rej).To(ContainElements(
			"MODIFIED created-v1alpha2 unrecognized delete",
			"ADDED late-newer newer-shape skip",
			"DELETED future-field unrecognized delete",
		))

		By("nothing was written by the informer: the remaining objects are byte-identical after a resync-free wait for the watch")
		left := []string{"created-v1alpha1", "created-v1alpha2", "late-v1alpha1", "late-newer", "newer-shape"}
		snap := raw(ctx, rc, ns, left)
		// A write after this point would change resourceVersion; wait for one
		// more real event to pass through the informer first so the decorator
		// has processed everything before the second snapshot.
		patch("v1alpha2", "late-v1alpha1", `{"metadata":{"labels":{"sentinel":"1"}}}`)
		eventually(func(g Gomega) {
			g.Expect(inf.store()["late-v1alpha1"].GetLabels()).To(HaveKeyWithValue("sentinel", "1"))
		})
		after := raw(ctx, rc, ns, left)
		for k, v := range snap {
			if strings.HasSuffix(k, "/late-v1alpha1") {
				continue // the test's own sentinel write
			}
			Expect(after[k]).To(Equal(v), "%s changed on the server", k)
		}
	})
})
