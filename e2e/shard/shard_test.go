package shard

import (
	"context"
	"slices"

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

const objects = 24

// halves are the two shardSelectors that split the uid hash space in two.
var halves = []string{
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
}

// listHalf lists ns with one half's shardSelector and returns the raw
// answer's item names, the mode shard.Verify reads from it, and the names
// left after shard.Filter.
func listHalf(ctx context.Context, cs kubernetes.Interface, ns, expr string) (raw []string, mode shard.Mode, filtered []string) {
	sel, err := shard.Parse(expr)
	Expect(err).NotTo(HaveOccurred())
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: sel.String()})
	Expect(err).NotTo(HaveOccurred())
	raw = names(list)
	mode, err = shard.Verify(list, sel)
	Expect(err).NotTo(HaveOccurred())
	_, err = shard.Filter(list, sel)
	Expect(err).NotTo(HaveOccurred())
	for i := range list.Items {
		ok, err := sel.Matches(&list.Items[i])
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue(), "%s kept outside %s", list.Items[i].Name, expr)
	}
	return raw, mode, names(list)
}

func names(l *corev1.ConfigMapList) []string {
	out := make([]string, len(l.Items))
	for i := range l.Items {
		out[i] = l.Items[i].Name
	}
	slices.Sort(out)
	return out
}

var _ = DescribeTableSubtree("a shardSelector on a real apiserver",
	func(o harness.Options, want shard.Mode) {
		var cs kubernetes.Interface
		BeforeEach(func(ctx SpecContext) {
			c := suite.StartHarness(ctx, o, "each entry needs its own apiserver version and feature gates")
			cs = suite.Clientset(c.RESTConfig())
		})

		It("is verified from the answer, and the client-side filter gives the server's result", func(ctx SpecContext) {
			ns := suite.NewNamespace(ctx, cs, "shard")
			suite.CreateConfigMaps(ctx, cs, ns, objects, suite.IndexData)
			all, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(all.Items).To(HaveLen(objects))

			var union []string
			for _, h := range halves {
				raw, mode, filtered := listHalf(ctx, cs, ns, h)
				Expect(mode).To(Equal(want), "shard.Verify on %s", h)
				if want == shard.ModeServer {
					Expect(raw).To(Equal(filtered), "the server filtered: the client drops nothing")
				} else {
					Expect(raw).To(HaveLen(objects), "the server ignored the selector and returned everything")
				}
				Expect(len(filtered)).To(BeNumerically("<", objects), "a half holds less than everything")
				union = append(union, filtered...)
				AddReportEntry("half "+h, len(filtered))
			}
			slices.Sort(union)
			Expect(union).To(Equal(names(all)), "the two halves are disjoint and hold every object")
		})
	},
	Entry("v1.37.2, ShardedListAndWatch on: applied by the server", Label("shard"),
		harness.Options{Version: build.Current, ExtraArgs: []string{"--feature-gates=ShardedListAndWatch=true"}}, shard.ModeServer),
	Entry("v1.37.2, gate off: ignored, filtered on the client", Label("shard"),
		harness.Options{Version: build.Current}, shard.ModeClient),
	Entry("v1.18.19: ignored, filtered on the client", Label("shard", "legacy"),
		harness.Options{Version: build.Legacy}, shard.ModeClient),
)
