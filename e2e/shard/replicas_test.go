package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	shard "github.com/steadywatch/steadywatch/internal/sharding"
)

// A shorter Lease than the default (15s) keeps the takeover within the
// suite's budget, with room for a loaded 2-core machine.
const (
	leaseDuration = 10 * time.Second
	replicaObjs   = 30
)

// status is examples/sharded's -status file: its Status, copied because
// the e2e module cannot import it (a main package is not importable, and an
// importable copy in the examples module would bring that module's
// dependencies into e2e's build). The decode rejects unknown fields, so a
// field the example adds or renames fails here instead of reading as zero.
type status struct {
	Identity   string   `json:"identity"`
	Members    []string `json:"members"`
	Desired    []int    `json:"desired"`
	Acting     []int    `json:"acting"`
	Mode       string   `json:"mode"`
	Cache      []string `json:"cache"`
	Reconciled int64    `json:"reconciled"`
	Violations []string `json:"violations"`
	At         string   `json:"at"`
}

type replica struct {
	id, statusFile, logFile string
	cmd                     *exec.Cmd
}

// sharded is the example operator binary, built once.
var sharded string

var _ = BeforeSuite(func(ctx SpecContext) {
	dir := GinkgoT().TempDir()
	src, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	Expect(err).NotTo(HaveOccurred())
	sharded = filepath.Join(dir, "sharded")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", sharded, "./sharded")
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./sharded:\n%s", out)
}, NodeTimeout(10*time.Minute))

func startReplica(c *harness.Cluster, dir, ns, id string) *replica {
	r := &replica{id: id, statusFile: filepath.Join(dir, id+".json"), logFile: filepath.Join(dir, id+".log")}
	log, err := os.Create(r.logFile)
	Expect(err).NotTo(HaveOccurred())
	r.cmd = exec.Command(sharded, "-kubeconfig", c.KubeconfigPath(), "-namespace", ns, "-lease-namespace", ns,
		"-group", "e2e", "-identity", id, "-status", r.statusFile,
		"-lease-duration", leaseDuration.String())
	r.cmd.Stdout, r.cmd.Stderr = log, log
	Expect(r.cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		_ = log.Close()
		if CurrentSpecReport().Failed() {
			b, _ := os.ReadFile(r.logFile)
			fmt.Fprintf(GinkgoWriter, "---- replica %s log (last 4 KiB) ----\n%s\n", id, tail(b, 4096))
		}
	})
	return r
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (r *replica) status() (status, error) {
	var s status
	b, err := os.ReadFile(r.statusFile)
	if err != nil {
		return s, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return s, d.Decode(&s)
}

// settled checks that the live replicas agree on the members, each acts on
// exactly what it is assigned, the slices and the caches split the space and
// the objects exactly once, and nobody saw a violation.
func settled(rs []*replica, names []string, mode shard.Mode) error {
	members := make([]string, len(rs))
	slicesSeen := map[int]string{}
	cached := map[string]string{}
	for i, r := range rs {
		members[i] = r.id
	}
	slices.Sort(members)
	for _, r := range rs {
		s, err := r.status()
		if err != nil {
			return err
		}
		if len(s.Violations) > 0 {
			return StopTrying(fmt.Sprintf("%s saw violations: %q", r.id, s.Violations))
		}
		if !slices.Equal(s.Members, members) || !slices.Equal(s.Acting, s.Desired) || s.Mode != string(mode) {
			return fmt.Errorf("%s: members %v (want %v), acting %v desired %v, mode %q (want %q)", r.id, s.Members, members, s.Acting, s.Desired, s.Mode, mode)
		}
		for _, sl := range s.Acting {
			if o, dup := slicesSeen[sl]; dup {
				return StopTrying(fmt.Sprintf("slice %d acted on by %s and %s", sl, o, r.id))
			}
			slicesSeen[sl] = r.id
		}
		for _, n := range s.Cache {
			if o, dup := cached[n]; dup {
				return fmt.Errorf("%s cached by %s and %s", n, o, r.id)
			}
			cached[n] = r.id
		}
	}
	if len(slicesSeen) != shard.DefaultMembershipSlices {
		return fmt.Errorf("%d of %d slices acted on", len(slicesSeen), shard.DefaultMembershipSlices)
	}
	if len(cached) != len(names) {
		return fmt.Errorf("the caches hold %d of %d objects", len(cached), len(names))
	}
	return nil
}

// allDone checks that every ConfigMap's gen was reconciled by its owner.
func allDone(ctx context.Context, cs kubernetes.Interface, ns, gen string) error {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "shard-e2e=1"})
	if err != nil {
		return err
	}
	for _, c := range l.Items {
		if c.Data["gen"] != gen || c.Annotations["shard-example/done-gen"] != gen {
			return fmt.Errorf("%s: gen %q, done-gen %q", c.Name, c.Data["gen"], c.Annotations["shard-example/done-gen"])
		}
	}
	return nil
}

var _ = DescribeTableSubtree("three replicas of examples/sharded as separate processes, Leases on the apiserver",
	func(o harness.Options, mode shard.Mode) {
		It("split the objects once, take over after kill -9 within the lease, and never reconcile an object twice at once", func(ctx SpecContext) {
			c := suite.StartHarness(ctx, o, "each entry needs its own apiserver version and feature gates")
			cs := suite.Clientset(c.RESTConfig())
			ns := suite.NewNamespace(ctx, cs, "shard")
			var names []string
			for i := range replicaObjs {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "obj-" + strconv.Itoa(i), Labels: map[string]string{"shard-e2e": "1"}},
					Data: map[string]string{"gen": "1"}}
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
				names = append(names, cm.Name)
			}
			dir := GinkgoT().TempDir()
			started := time.Now()
			rs := []*replica{startReplica(c, dir, ns, "a"), startReplica(c, dir, ns, "b"), startReplica(c, dir, ns, "c")}

			Eventually(func() error { return settled(rs, names, mode) }).WithTimeout(90 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
			AddReportEntry("three replicas started to split and synced", time.Since(started).Round(100*time.Millisecond).String())
			Eventually(func(ctx context.Context) error { return allDone(ctx, cs, ns, "1") }).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
			for _, r := range rs {
				s, _ := r.status()
				AddReportEntry("replica "+r.id+" holds", fmt.Sprintf("%d of %d objects (slices %v, mode %s)", len(s.Cache), replicaObjs, s.Acting, s.Mode))
				Expect(len(s.Cache)).To(BeNumerically("<", replicaObjs), "a replica holds less than everything")
			}

			// Stock client-go beside it: an unsharded informer's list holds
			// everything, on every replica (a stock v0.37 informer never syncs
			// on v1.18.19 at all: its streaming list waits for a bookmark that
			// server never sends, so its list is shown).
			all, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			AddReportEntry("stock client-go (unsharded), per replica", fmt.Sprintf("%d of %d objects", len(all.Items), replicaObjs))
			Expect(all.Items).To(HaveLen(replicaObjs))

			// kill -9 one replica, then write every object while the others take over.
			Expect(rs[2].cmd.Process.Kill()).To(Succeed())
			killed := time.Now()
			for _, n := range names {
				Eventually(func(ctx context.Context) error {
					cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, n, metav1.GetOptions{})
					if err != nil {
						return err
					}
					cm.Data["gen"] = "2"
					_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
					return err
				}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			}
			Eventually(func() error { return settled(rs[:2], names, mode) }).WithTimeout(leaseDuration + 30*time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
			takeover := time.Since(killed)
			AddReportEntry("takeover after kill -9", fmt.Sprintf("%v (lease duration %v)", takeover.Round(100*time.Millisecond), leaseDuration))
			Eventually(func(ctx context.Context) error { return allDone(ctx, cs, ns, "2") }).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
			for _, r := range rs[:2] {
				s, err := r.status()
				Expect(err).NotTo(HaveOccurred())
				Expect(s.Violations).To(BeEmpty(), "replica %s saw another live replica reconciling its object", r.id)
			}
		}, SpecTimeout(5*time.Minute))
	},
	Entry("v1.37.2, ShardedListAndWatch on: the server filters", Label("shard", "replicas"),
		harness.Options{Version: build.Current, ExtraArgs: []string{"--feature-gates=ShardedListAndWatch=true"}}, shard.ModeServer),
	Entry("v1.37.2, gate off: each replica filters", Label("shard", "replicas"),
		harness.Options{Version: build.Current}, shard.ModeClient),
	Entry("v1.18.19: each replica filters", Label("shard", "replicas", "legacy"),
		harness.Options{Version: build.Legacy}, shard.ModeClient),
)
