package smoke

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/vocab"
	"github.com/steadywatch/steadywatch/lister"
)

// The legacy floor (build.Floor, and build.Floor17 beside it) is not built
// by `make test` (CI builds build.Current and build.Legacy only): these specs
// skip, with the reason, until `go run ./cmd/build-apiservers VERSION` has
// put the server in the cache.
var _ = floorSpecs(build.Floor)
var _ = floorSpecs(build.Floor17)

func floorSpecs(version string) bool {
	return Describe("legacy floor kube-apiserver "+version, Label("legacy", "floor", "smoke", "needs-faults"), Ordered, func() {
		floorBody(version)
	})
}

func floorBody(version string) {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		suite.SkipIfExternal("needs the harness's " + version + " server")
		if bin := build.BinaryPath(build.CacheDir(), version); !isFile(bin) {
			Skip(fmt.Sprintf("SKIPPED: %s is not built (not part of `make test`; run `cd e2e && go run ./cmd/build-apiservers %s`)", bin, version))
		}
		c = suite.StartHarness(ctx, harness.Options{Version: version}, "needs the harness's "+version+" server")
	})

	It("reports its real version on /version, lists and watches", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		v, err := cs.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(Equal(version))

		ns, _ := populate(ctx, cs, 3)
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(l.Items).To(HaveLen(3))
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		var ev watch.Event
		Eventually(w.ResultChan()).WithTimeout(30 * time.Second).Should(Receive(&ev))
		Expect(ev.Type).To(Equal(watch.Added))
		Expect(ev.Object.(*corev1.ConfigMap).ResourceVersion).To(Equal(cm.ResourceVersion))
	})

	It("answers a list at a too-large resourceVersion with the pre-1.18.6 message and no ResourceVersionTooLarge cause (kubernetes/kubernetes#92537); steadywatch recognises it", func(ctx SpecContext) {
		cs := suite.Clientset(c.RESTConfig())
		ns, rv := populate(ctx, cs, 1)
		n, err := strconv.ParseInt(rv, 10, 64)
		Expect(err).NotTo(HaveOccurred())
		future := strconv.FormatInt(n+100000, 10)

		_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: future})
		Expect(err).To(HaveOccurred())
		var st apierrors.APIStatus
		Expect(errors.As(err, &st)).To(BeTrue(), "%v", err)
		s := st.Status()
		fmt.Fprintf(GinkgoWriter, "%s answered a list at rv=%s: code %d reason %q message %q details %+v\n", version, future, s.Code, s.Reason, s.Message, s.Details)
		Expect(s.Code).To(Equal(int32(504)))
		Expect(s.Message).To(ContainSubstring("Too large resource version"))
		if s.Details != nil {
			for _, cause := range s.Details.Causes {
				Expect(cause.Type).NotTo(Equal(metav1.CauseTypeResourceVersionTooLarge), "the cause type came with 1.18.6")
			}
		}
		Expect(engine.Classify(err)).To(Equal(vocab.TooLargeRV), "classified by the pre-1.18.6 message")

		// steadywatch never hands out data older than asked: NotOlderThan(future)
		// cannot be served before the server reaches that RV, so the list
		// ends in a typed error (bounded), never in an older list. The request
		// sequence is logged for the record.
		lctx, cancel := context.WithTimeout(ctx, 75*time.Second) // bounds the spec; today the SDK needs ~3 min to give up (see the log)
		defer cancel()
		begin := time.Now()
		obj, rec, err := lister.New(lister.FromFuncs(cs.CoreV1().ConfigMaps(ns).List, cs.CoreV1().ConfigMaps(ns).Watch), lister.Options{Name: "floor"}).
			List(lctx, lister.NotOlderThan(future))
		took := time.Since(begin)
		Expect(rec).NotTo(BeNil())
		for i, r := range rec.Requests {
			fmt.Fprintf(GinkgoWriter, "  request %d: rv=%q match=%q limit=%d -> %s served=%q err=%v\n", i+1,
				r.Options.ResourceVersion, r.Options.ResourceVersionMatch, r.Options.Limit, r.Class, r.ServedResourceVersion, r.Err)
		}
		for _, f := range rec.Fallbacks {
			fmt.Fprintf(GinkgoWriter, "  fallback: attempt %d %s %s\n", f.Attempt, f.Reason, f.Action)
		}
		fmt.Fprintf(GinkgoWriter, "TIMING steadywatch NotOlderThan(future) on %s: %s, %d requests, err=%v\n", version, took.Round(time.Millisecond), len(rec.Requests), err)
		Expect(rec.Requests).NotTo(BeEmpty())
		Expect(engine.Classify(rec.Requests[0].Err)).To(Equal(vocab.TooLargeRV), "the first answer is the pre-1.18.6 too-large 504")
		if err == nil {
			Expect(strconv.ParseInt(rec.ServedResourceVersion, 10, 64)).To(BeNumerically(">=", n+100000), "never older than asked")
			Expect(obj).NotTo(BeNil())
		}
	})

	It("ignores sendInitialEvents like v1.18: ADDED events, never the initial-events-end bookmark", func(ctx SpecContext) {
		ns, _ := populate(ctx, suite.Clientset(c.RESTConfig()), 2)
		Expect(streamingWatch(ctx, c.RESTConfig(), ns, 2)).To(BeFalse())
	})
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
