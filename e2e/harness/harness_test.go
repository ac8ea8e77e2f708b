package harness_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

const (
	current = build.Current
	legacy  = build.Legacy
)

// ownServers is the reason every container of this suite needs the harness
// (the suite also skips as a whole in BeforeSuite on an external cluster).
const ownServers = "tests the harness's own apiservers, etcd and fault controls"

// populate creates a namespace with n ConfigMaps and returns the namespace and
// the resourceVersion of the first ConfigMap. The namespace is not deleted:
// specs stop and restart the servers, and the cluster goes with the suite.
func populate(ctx context.Context, cs kubernetes.Interface, n int) (ns, firstRV string) {
	nsObj, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "harness-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return nsObj.Name, suite.CreateConfigMaps(ctx, cs, nsObj.Name, n, suite.IndexData)
}

func exactList(ctx context.Context, cs kubernetes.Interface, ns, rv string) (*corev1.ConfigMapList, error) {
	return cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
}

func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// legacyBinary is where package build puts the legacy kube-apiserver.
func legacyBinary() string { return build.BinaryPath(build.CacheDir(), legacy) }

var _ = Describe("a current kube-apiserver with the watch cache on", Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) { c = suite.StartHarness(ctx, harness.Options{}, ownServers) }) // zero Options: build.Current

	It("writes an absolute, 0600 kubeconfig that reaches the server and /version says "+current, func() {
		kc := c.KubeconfigPath()
		Expect(filepath.IsAbs(kc)).To(BeTrue())
		st, err := os.Stat(kc)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Insecure).To(BeFalse())
		Expect(cfg.CAData).NotTo(BeEmpty())
		v, err := suite.Clientset(cfg).Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(Equal(current))
		Expect(c.APIServers()).To(HaveLen(1))
		Expect(c.APIServers()[0].Version()).To(Equal(current))
		Expect(c.Balancer()).To(BeNil())
	})

	It("authenticates with the token and verifies TLS against the cluster CA", func(ctx SpecContext) {
		Expect(c.RESTConfig().Insecure).To(BeFalse())
		_, err := suite.Clientset(c.RESTConfig()).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())

		anon := c.RESTConfig()
		anon.BearerToken = ""
		_, err = suite.Clientset(anon).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)).To(BeTrue(), "without the token: %v", err)

		untrusting := c.RESTConfig()
		untrusting.CAData = nil
		_, err = suite.Clientset(untrusting).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("certificate"))
		Expect(err.Error()).NotTo(ContainSubstring(c.RESTConfig().BearerToken))
	})

	It("keeps data, port and client configs across Restart", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, _ := populate(ctx, cs, 1)
		before, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		a := c.APIServers()[0]
		url := a.URL()

		begin := time.Now()
		Expect(a.Restart(ctx)).To(Succeed())
		took := time.Since(begin)
		AddReportEntry("restart "+a.Version(), took.Round(time.Millisecond).String())
		fmt.Fprintf(GinkgoWriter, "TIMING restart %s: %s\n", a.Version(), took.Round(time.Millisecond))

		Expect(a.URL()).To(Equal(url))
		Expect(a.Running()).To(BeTrue())
		after, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
		Expect(after.Data).To(Equal(before.Data))
		log, err := os.ReadFile(a.LogPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(log), "=== harness: starting")).To(BeNumerically(">=", 2))
	})

	It("fails requests while etcd is stopped and recovers, with its data, when it starts again", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, _ := populate(ctx, cs, 1)
		revBefore, err := c.Etcd().Revision(ctx)
		Expect(err).NotTo(HaveOccurred())
		endpoint := c.Etcd().Endpoint()

		stopBegin := time.Now()
		Expect(c.Etcd().Stop()).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "TIMING etcd stop: %s\n", time.Since(stopBegin).Round(time.Millisecond))
		_, err = c.Etcd().Revision(ctx)
		Expect(errors.Is(err, harness.ErrStopped)).To(BeTrue(), "Revision on a stopped etcd: %v", err)
		short := c.RESTConfig()
		short.Timeout = 3 * time.Second
		// A quorum read must reach etcd: it cannot succeed while etcd is down.
		getBegin := time.Now()
		_, err = suite.Clientset(short).CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		Expect(err).To(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "TIMING get with etcd down failed after %s: %v\n", time.Since(getBegin).Round(time.Millisecond), err)

		begin := time.Now()
		Expect(c.Etcd().Start(ctx)).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "TIMING etcd start: %s\n", time.Since(begin).Round(time.Millisecond))
		Expect(c.Etcd().Endpoint()).To(Equal(endpoint))
		rev, err := c.Etcd().Revision(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(rev).To(BeNumerically(">=", revBefore))
		Eventually(func() error {
			_, err := suite.Clientset(short).CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
			return err
		}).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "TIMING apiserver serving again after etcd start: %s\n", time.Since(begin).Round(time.Millisecond))
	})

	It("exposes request and etcd counters on /metrics", func(ctx SpecContext) {
		m, err := c.APIServers()[0].Metrics(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(ContainSubstring("apiserver_request_total{"))
		Expect(m).To(ContainSubstring("etcd_request"))
	})

	It("Compact reaches the watch cache through compact_rev_key: an Exact list at an old RV becomes 410", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 2)
		// Served from a watch-cache snapshot before the compaction.
		l, err := exactList(ctx, cs, ns, rv)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.ResourceVersion).To(Equal(rv))
		rev, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(rev).To(BeNumerically(">", mustInt(rv)))
		// The cacher learns of compactions asynchronously (it polls about
		// every 15 s); a raw etcd compaction alone would never get here.
		begin := time.Now()
		Eventually(func() error {
			_, err := exactList(ctx, cs, ns, rv)
			return err
		}).WithTimeout(60*time.Second).WithPolling(500*time.Millisecond).Should(Satisfy(isExpired), "Exact list at compacted RV %s", rv)
		fmt.Fprintf(GinkgoWriter, "TIMING watch cache saw the compaction after %s\n", time.Since(begin).Round(time.Millisecond))
	})

	It("Stop is idempotent, kills the apiserver and removes the temporary directory", func(ctx SpecContext) {
		a := c.APIServers()[0]
		dir := c.Dir()
		Expect(c.Stop()).To(Succeed())
		Expect(c.Stop()).To(Succeed())
		Expect(a.Running()).To(BeFalse())
		_, err := os.Stat(dir)
		Expect(os.IsNotExist(err)).To(BeTrue(), "dir %s: %v", dir, err)
		hc, err := rest.HTTPClientFor(a.RESTConfig())
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL()+"/readyz", nil)
		Expect(err).NotTo(HaveOccurred())
		_, err = hc.Do(req)
		Expect(err).To(HaveOccurred(), "nothing may listen on %s after Stop", a.URL())
	})
})

var _ = Describe("a current kube-apiserver with the watch cache off", Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: current, DisableWatchCache: true}, ownServers)
	})

	It("passes --watch-cache=false", func() {
		Expect(c.APIServers()[0].Args()).To(ContainElement("--watch-cache=false"))
	})

	It("Compact makes an Exact list at an older RV a real 410 at once, and leaves the compaction revision readable", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 3)
		l, err := exactList(ctx, cs, ns, rv)
		Expect(err).NotTo(HaveOccurred(), "before compaction the old RV is served")
		Expect(l.ResourceVersion).To(Equal(rv))
		Expect(l.Items).To(HaveLen(1))

		revBefore, err := c.Etcd().Revision(ctx)
		Expect(err).NotTo(HaveOccurred())
		rev, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		// The apiserver writes too (leases, its own bookkeeping): rev is past every revision observed
		// before the call, not necessarily revBefore+1 (a real CI run saw +2).
		Expect(rev).To(BeNumerically(">", revBefore))
		now, err := c.Etcd().Revision(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(now).To(BeNumerically(">=", rev))

		_, err = exactList(ctx, cs, ns, rv)
		Expect(err).To(HaveOccurred())
		Expect(isExpired(err)).To(BeTrue(), "want 410 Expired/Gone, got %v", err)
		Expect(err.(apierrors.APIStatus).Status().Code).To(Equal(int32(http.StatusGone)))
		_, err = exactList(ctx, cs, ns, strconv.FormatInt(revBefore, 10))
		Expect(isExpired(err)).To(BeTrue(), "the newest RV before Compact is compacted too: %v", err)

		l, err = exactList(ctx, cs, ns, strconv.FormatInt(rev, 10))
		Expect(err).NotTo(HaveOccurred(), "the compaction revision itself stays readable")
		Expect(l.ResourceVersion).To(Equal(strconv.FormatInt(rev, 10)))
		Expect(l.Items).To(HaveLen(3))
	})

	It("a second Compact after more writes compacts again", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 1)
		first, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = exactList(ctx, cs, ns, rv)
		Expect(isExpired(err)).To(BeTrue(), "got %v", err)
		_, rv2 := populate(ctx, cs, 1)
		second, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(second).To(BeNumerically(">", first))
		Expect(second).To(BeNumerically(">", mustInt(rv2)))
	})
})

var _ = Describe("an HA pair on one etcd behind the balancer", Label("ha"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: current, HA: true}, ownServers)
	})

	It("has two apiservers that both serve "+current+" and share data", func(ctx SpecContext) {
		as := c.APIServers()
		Expect(as).To(HaveLen(2))
		Expect(as[0].URL()).NotTo(Equal(as[1].URL()))
		ns, _ := populate(ctx, suite.Clientset(as[0].RESTConfig()), 1)
		for _, a := range as {
			v, err := suite.Clientset(a.RESTConfig()).Discovery().ServerVersion()
			Expect(err).NotTo(HaveOccurred(), a.Name())
			Expect(v.GitVersion).To(Equal(current))
			cm, err := suite.Clientset(a.RESTConfig()).CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), a.Name())
			Expect(cm.Data).To(HaveKeyWithValue("i", "0"))
		}
	})

	It("points the kubeconfig and RESTConfig at the balancer, which reaches each backend when pinned", func(ctx SpecContext) {
		b := c.Balancer()
		Expect(b).NotTo(BeNil())
		Expect(c.RESTConfig().Host).To(Equal(b.URL()))
		cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Host).To(Equal(b.URL()))

		short := c.RESTConfig()
		short.Timeout = 5 * time.Second
		cs := suite.Clientset(short)
		// By default the balancer alternates: four lists reach both backends.
		for i := 0; i < 4; i++ {
			_, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "harness-alternate=yes"})
			Expect(err).NotTo(HaveOccurred())
		}
		served := map[int]int{}
		for _, r := range b.Requests() {
			if strings.Contains(r.RawQuery, "harness-alternate") {
				served[r.Backend]++
			}
		}
		Expect(served).To(Equal(map[int]int{0: 2, 1: 2}))

		for i := range c.APIServers() {
			b.Pin(i)
			_, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), "pinned to %d", i)
		}
		// Pinned to apiserver-1 with apiserver-0 down still works; pinned
		// to the stopped one does not: the pin is real.
		a0 := c.APIServers()[0]
		Expect(a0.Stop()).To(Succeed())
		b.Pin(1)
		_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "pinned to the live apiserver-1")
		b.Pin(0)
		_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(err).To(HaveOccurred(), "pinned to the stopped apiserver-0")
		Expect(a0.Start(ctx)).To(Succeed())
		_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "apiserver-0 is back")
	})
})

var _ = Describe("an HA pair with the watch cache off on apiserver-1 only (DisableWatchCacheOn)", Label("ha", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: current, HA: true, DisableWatchCacheOn: []int{1}}, ownServers)
	})

	It("passes --watch-cache=false to apiserver-1 only", func() {
		as := c.APIServers()
		Expect(as).To(HaveLen(2))
		Expect(as[0].Args()).NotTo(ContainElement(HavePrefix("--watch-cache")))
		Expect(as[1].Args()).To(ContainElement("--watch-cache=false"))
	})

	It("after Compact, an Exact list at an old RV is 410 at once on the cache-off member while the cache-on member serves it until its cacher polls the compaction", func(ctx SpecContext) {
		off := suite.Clientset(c.APIServers()[1].RESTConfig())
		on := suite.Clientset(c.APIServers()[0].RESTConfig())
		// The cacher learns of compactions by polling every 15 s. A first
		// compaction, watched until the cache-on member 410s, tells when that
		// poll just ran: the second compaction then lands well inside the next
		// 15 s, so "still served right after Compact" is not a race.
		ns, rv := populate(ctx, on, 1)
		_, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		begin := time.Now()
		Eventually(func() error {
			_, err := exactList(ctx, on, ns, rv)
			return err
		}).WithTimeout(60*time.Second).WithPolling(100*time.Millisecond).Should(Satisfy(isExpired), "cache-on member, Exact at compacted RV %s", rv)
		fmt.Fprintf(GinkgoWriter, "TIMING cache-on member saw the first compaction after %s\n", time.Since(begin).Round(time.Millisecond))

		ns, rv = populate(ctx, on, 2)
		for name, cs := range map[string]kubernetes.Interface{"cache-on apiserver-0": on, "cache-off apiserver-1": off} {
			l, err := exactList(ctx, cs, ns, rv)
			Expect(err).NotTo(HaveOccurred(), "%s before compaction", name)
			Expect(l.ResourceVersion).To(Equal(rv), name)
		}
		_, err = c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		compacted := time.Now()

		_, err = exactList(ctx, off, ns, rv)
		Expect(err).To(HaveOccurred(), "cache-off apiserver-1 right after Compact")
		Expect(isExpired(err)).To(BeTrue(), "cache-off apiserver-1: want 410, got %v", err)
		Expect(err.(apierrors.APIStatus).Status().Code).To(Equal(int32(http.StatusGone)))

		l, err := exactList(ctx, on, ns, rv)
		Expect(err).NotTo(HaveOccurred(), "cache-on apiserver-0 right after Compact (%s later) serves from its snapshot", time.Since(compacted))
		Expect(l.ResourceVersion).To(Equal(rv))
		Expect(l.Items).To(HaveLen(1), "cm-0 only: the Exact list is the state at %s", rv)

		// The same compaction reaches the cache-on member at its next poll.
		Eventually(func() error {
			_, err := exactList(ctx, on, ns, rv)
			return err
		}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).Should(Satisfy(isExpired), "cache-on member after its next poll")
		fmt.Fprintf(GinkgoWriter, "TIMING cache-on member saw the second compaction after %s\n", time.Since(compacted).Round(time.Millisecond))
	})
})

var _ = Describe("DisableWatchCacheOn out of range", func() {
	It("fails Start with ErrInvalidOptions before building or starting anything", func(ctx SpecContext) {
		for _, o := range []harness.Options{
			{DisableWatchCacheOn: []int{1}},            // one apiserver: index 0 only
			{HA: true, DisableWatchCacheOn: []int{2}},  // HA: 0 and 1
			{HA: true, DisableWatchCacheOn: []int{-1}}, // negative
		} {
			dir := GinkgoT().TempDir()
			o.Dir, o.Binary = dir, filepath.Join(dir, "no-such-kube-apiserver")
			_, err := harness.Start(ctx, o)
			Expect(errors.Is(err, harness.ErrInvalidOptions)).To(BeTrue(), "%+v: %v", o, err)
			Expect(err.Error()).To(ContainSubstring("DisableWatchCacheOn"))
			entries, err := os.ReadDir(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(entries).To(BeEmpty(), "nothing written to %s", dir)
		}
	})
})

var _ = Describe("Versions (a mixed-version pair) misused", func() {
	It("fails Start with ErrInvalidOptions before building or starting anything", func(ctx SpecContext) {
		for _, o := range []harness.Options{
			{Versions: []string{legacy, current}},                               // not HA
			{HA: true, Versions: []string{legacy}},                              // one entry for two members
			{HA: true, Version: current, Versions: []string{legacy, current}},   // both set
			{HA: true, Versions: []string{legacy, current}, Binary: "/no/such"}, // one binary for two releases
		} {
			dir := GinkgoT().TempDir()
			o.Dir = dir
			_, err := harness.Start(ctx, o)
			Expect(errors.Is(err, harness.ErrInvalidOptions)).To(BeTrue(), "%+v: %v", o, err)
			Expect(err.Error()).To(ContainSubstring("Versions"))
			entries, err := os.ReadDir(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(entries).To(BeEmpty(), "nothing written to %s", dir)
		}
	})
})

// A rolling upgrade from the legacy floor of resourceVersionMatch to the
// current release: an old and a new apiserver on one etcd behind the
// balancer. The specs prove the pair is real (each member its own version
// and flags, one store, one resourceVersion sequence) and show what a client
// behind such a balancer meets: the same request honoured by one member and
// ignored by the other.
var _ = Describe("a mixed-version HA pair "+legacy+"+"+current+" on one etcd (rolling upgrade)", Label("ha", "legacy", "mixed"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		bin := legacyBinary()
		if _, err := os.Stat(bin); err != nil {
			Skip(fmt.Sprintf("SKIPPED: %s is not built yet (package build builds it; run `make build-apiservers`): %v", bin, err))
		}
		c = suite.StartHarness(ctx, harness.Options{HA: true, Versions: []string{legacy, current}}, ownServers)
	})

	It("runs "+legacy+" as apiserver-0 and "+current+" as apiserver-1, each with its own flags", func() {
		Expect(c.Version()).To(Equal(legacy + "+" + current))
		Expect(c.Versions()).To(Equal([]string{legacy, current}))
		as := c.APIServers()
		Expect(as).To(HaveLen(2))
		for i, want := range []string{legacy, current} {
			Expect(as[i].Version()).To(Equal(want))
			v, err := suite.Clientset(as[i].RESTConfig()).Discovery().ServerVersion()
			Expect(err).NotTo(HaveOccurred(), as[i].Name())
			Expect(v.GitVersion).To(Equal(want), as[i].Name())
		}
		Expect(as[0].Args()).To(ContainElement("--insecure-port=0"))
		Expect(as[1].Args()).NotTo(ContainElement(HavePrefix("--insecure-port")))
	})

	It("shares one store and one resourceVersion sequence: what one member writes, the other lists and watches from", func(ctx SpecContext) {
		as := c.APIServers()
		old, cur := suite.Clientset(as[0].RESTConfig()), suite.Clientset(as[1].RESTConfig())
		ns, rv := populate(ctx, old, 1)
		cm, err := cur.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cm.ResourceVersion).To(Equal(rv), "the new member reads the old member's write at the same RV")

		// A watch on the old member from the new member's write sees the next write (made on the new member).
		created, err := cur.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-new"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(mustInt(created.ResourceVersion)).To(BeNumerically(">", mustInt(rv)))
		w, err := old.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		next, err := cur.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(w.ResultChan()).WithTimeout(30 * time.Second).Should(Receive(WithTransform(func(e watch.Event) string {
			if m, ok := e.Object.(metav1.Object); ok {
				return m.GetName() + "@" + m.GetResourceVersion()
			}
			return ""
		}, Equal("after@"+next.ResourceVersion))))
	})

	It("behind the balancer, one Exact list without a limit is honoured by the new member and ignored by the old one", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 2)
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "newer"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		b := c.Balancer()
		defer b.Alternate()
		served := map[string]string{}
		for i, v := range c.Versions() {
			b.Pin(i)
			var l *corev1.ConfigMapList
			Eventually(func() error { // the member's watch cache may still be catching up with the other's write
				var err error
				l, err = exactList(ctx, cs, ns, rv)
				return err
			}).WithTimeout(30*time.Second).Should(Succeed(), v)
			served[v] = l.ResourceVersion
		}
		Expect(served[current]).To(Equal(rv), "%s honours resourceVersionMatch=Exact", current)
		Expect(mustInt(served[legacy])).To(BeNumerically(">", mustInt(rv)), "%s ignores resourceVersionMatch and serves newer data", legacy)
	})
})

var _ = Describe("a legacy kube-apiserver "+legacy, Label("legacy"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		bin := legacyBinary()
		if _, err := os.Stat(bin); err != nil {
			Skip(fmt.Sprintf("SKIPPED: %s is not built yet (package build builds it; run `make build-apiservers`): %v", bin, err))
		}
		c = suite.StartHarness(ctx, harness.Options{Version: legacy, DisableWatchCache: true}, ownServers)
	})

	It("serves /version "+legacy+" with --insecure-port=0", func() {
		v, err := suite.Clientset(c.RESTConfig()).Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(Equal(legacy))
		Expect(c.APIServers()[0].Args()).To(ContainElement("--insecure-port=0"))
	})

	It("keeps data across Restart", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 1)
		begin := time.Now()
		Expect(c.APIServers()[0].Restart(ctx)).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "TIMING restart %s: %s\n", legacy, time.Since(begin).Round(time.Millisecond))
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cm.ResourceVersion).To(Equal(rv))
	})

	It("Compact makes a legacy-Exact (limit) list at an old RV a real 410", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 2)
		_, err := c.Etcd().Compact(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 1})
		Expect(isExpired(err)).To(BeTrue(), "want 410, got %v", err)
	})
})

var _ = Describe("a start that fails", func() {
	It("returns a *ComponentError wrapping ErrExited with the apiserver's log tail, and leaves nothing running", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		_, err := harness.Start(ctx, harness.Options{Version: current, ExtraArgs: []string{"--no-such-flag=1"}, Dir: dir, Progress: GinkgoWriter})
		Expect(err).To(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "start error:\n%v\n", err)
		var ce *harness.ComponentError
		Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
		Expect(ce.Component).To(Equal("apiserver-0"))
		Expect(errors.Is(err, harness.ErrExited)).To(BeTrue(), "%v", err)
		Expect(ce.LogTail).To(ContainSubstring("no-such-flag"))
		Expect(err.Error()).To(ContainSubstring("no-such-flag"))
		// The caller's Dir is kept, with the log in it.
		Expect(filepath.Join(dir, "apiserver-0.log")).To(BeARegularFile())
	})

	It("rejects versions older than 1.16 with ErrUnsupportedVersion before doing anything", func(ctx SpecContext) {
		_, err := harness.Start(ctx, harness.Options{Version: "v1.15.12"})
		Expect(errors.Is(err, harness.ErrUnsupportedVersion)).To(BeTrue(), "%v", err)
		_, err = harness.Start(ctx, harness.Options{Version: "latest"})
		Expect(errors.Is(err, harness.ErrUnsupportedVersion)).To(BeTrue(), "%v", err)
	})
})

func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return n
}
