// Package suite holds the Ginkgo helpers shared by steadywatch's e2e suites:
// cluster targets (the harness's own servers, or the external cluster named
// by E2E_KUBECONFIG, through extcluster), namespaces that are deleted at
// cleanup, clients, populating ConfigMaps and TIMING lines.
//
// Every function here runs inside a Ginkgo node: it fails the spec with
// Gomega on error, Skips, or registers DeferCleanup, and reports failures at
// its caller's line (GinkgoHelper).
//
// It is not for programs outside Ginkgo (cmd/demo, cmd/matrix, bench: they
// use harness and extcluster directly), and it is not a place for a suite's
// own assertions: what a spec checks stays in the spec.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/internal/extcluster"
	"github.com/steadywatch/steadywatch/lister"
)

// StartBound bounds how long Start may take: a cold build of an apiserver
// (about 3 minutes on 2 cores) plus its start, with room to spare.
const StartBound = 20 * time.Minute

// Start returns the cluster for an Ordered container (call it in BeforeAll):
// the harness's own servers started with o, or the external cluster named by
// E2E_KUBECONFIG (extcluster). o.Progress is set to GinkgoWriter. The start
// is bounded by ctx and StartBound. A harness cluster is stopped at cleanup
// (a failing Stop fails the cleanup); an external one is left alone. What it
// runs against and how long the start took go to GinkgoWriter (a TIMING
// line) and to the report.
func Start(ctx context.Context, o harness.Options) *extcluster.Target {
	ginkgo.GinkgoHelper()
	o.Progress = ginkgo.GinkgoWriter
	ctx, cancel := context.WithTimeout(ctx, StartBound)
	defer cancel()
	begin := time.Now()
	t, err := extcluster.Start(ctx, o)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(t.Stop)
	fmt.Fprintf(ginkgo.GinkgoWriter, "running against %s\n", t.Describe())
	Timing(fmt.Sprintf("start %s (watch cache off=%v, HA=%v)", t.Version(), o.DisableWatchCache, o.HA), time.Since(begin))
	return t
}

// StartHarness starts a cluster only the harness can provide (a legacy
// server, the watch cache off, an HA pair, fault controls): on an external
// cluster it Skips with reason before anything is started (SkipIfExternal);
// otherwise it is Start, and returns the harness cluster.
func StartHarness(ctx context.Context, o harness.Options, reason string) *harness.Cluster {
	ginkgo.GinkgoHelper()
	SkipIfExternal(reason)
	return Start(ctx, o).RequireFaults()
}

// SkipIfExternal Skips the current spec or container with reason when
// E2E_KUBECONFIG names an external cluster.
func SkipIfExternal(reason string) {
	if extcluster.ExternalKubeconfig() != "" {
		ginkgo.Skip(reason + "; not available on an external cluster (" + extcluster.EnvKubeconfig + " is set)")
	}
}

// Clientset returns a typed clientset for cfg.
func Clientset(cfg *rest.Config) kubernetes.Interface {
	ginkgo.GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return cs
}

// ConfigMaps returns the SDK's lister.Client (also a reflector.Client) for
// the ConfigMaps of namespace ns: lister.FromClientset, as the README
// recommends for typed resources (lists decoded item by item), so every
// suite runs that path against the real servers.
func ConfigMaps(cs kubernetes.Interface, ns string) lister.Client {
	c, err := lister.FromClientset(cs, &corev1.ConfigMap{}, ns)
	if err != nil {
		panic(err) // ConfigMaps are in client-go's clientset
	}
	return c
}

// WaitForDefaultNamespace waits up to a minute for the "default" namespace
// behind cs: /readyz can pass before the apiserver's bootstrap controller has
// created it (seen on v1.18.19: "namespaces \"default\" not found" on the
// first create), and the namespace lifecycle admission can likewise refuse
// the first writes.
func WaitForDefaultNamespace(ctx context.Context, cs kubernetes.Interface) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func(g gomega.Gomega) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred())
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(gomega.Succeed())
}

// WriteKubeconfig writes a kubeconfig for cfg (server, CA data and bearer
// token, TLS verification on) to a file of the current spec's temp dir,
// readable by its owner only, and returns its path. Its context, cluster
// and user are named cluster, cluster and user.
func WriteKubeconfig(cfg *rest.Config, cluster, user string) string {
	ginkgo.GinkgoHelper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	kc.CurrentContext = cluster
	path := filepath.Join(ginkgo.GinkgoT().TempDir(), "kubeconfig")
	gomega.Expect(clientcmd.WriteToFile(*kc, path)).To(gomega.Succeed())
	gomega.Expect(os.Chmod(path, 0o600)).To(gomega.Succeed())
	return path
}

// NewNamespace creates a namespace named prefix-<random> that is deleted at
// the current node's cleanup (DeleteAtCleanup) and returns its name.
func NewNamespace(ctx context.Context, cs kubernetes.Interface, prefix string) string {
	ginkgo.GinkgoHelper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	DeleteAtCleanup(cs, ns.Name)
	return ns.Name
}

// DeleteAtCleanup deletes namespace ns when the current node's cleanup runs
// (bounded to a minute), so that an external cluster (someone's kind
// cluster) is left as found; NotFound counts as deleted. On the harness (no
// namespace controller) the namespace stays Terminating until the cluster
// stops. Registered after Start's Stop, it runs before it.
func DeleteAtCleanup(cs kubernetes.Interface, ns string) {
	ginkgo.DeferCleanup(func(ctx ginkgo.SpecContext) {
		err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting namespace %s", ns)
		}
	}, ginkgo.NodeTimeout(time.Minute))
}

// CreateConfigMap creates an empty ConfigMap name (with labels, nil = none)
// in ns and returns it as the server stored it.
func CreateConfigMap(ctx context.Context, cs kubernetes.Interface, ns, name string, labels map[string]string) *corev1.ConfigMap {
	ginkgo.GinkgoHelper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return cm
}

// CreateConfigMaps creates ConfigMaps cm-0..cm-<n-1> in ns, one after the
// other, each filled in by fill (nil: name only; IndexData: data i=<index>)
// before it is sent, and returns the resourceVersion of cm-0 ("" if n is 0).
func CreateConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string, n int, fill func(i int, cm *corev1.ConfigMap)) (firstRV string) {
	ginkgo.GinkgoHelper()
	for i := 0; i < n; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
		if fill != nil {
			fill(i, cm)
		}
		created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		if i == 0 {
			firstRV = created.ResourceVersion
		}
	}
	return firstRV
}

// IndexData is a fill for CreateConfigMaps: data {"i": "<index>"}.
func IndexData(i int, cm *corev1.ConfigMap) { cm.Data = map[string]string{"i": strconv.Itoa(i)} }

// Timing writes a measured duration to the report and, as a line
// "TIMING <name>: <d>", to GinkgoWriter (rounded to the millisecond).
func Timing(name string, d time.Duration) {
	ginkgo.AddReportEntry(name, d.Round(time.Millisecond).String())
	fmt.Fprintf(ginkgo.GinkgoWriter, "TIMING %s: %v\n", name, d.Round(time.Millisecond))
}
