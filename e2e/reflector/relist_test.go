package reflector_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steadywatch/steadywatch/internal/knobs"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/build"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// writeLog is an rvLog that also records every Delete and Replace the
// reflector makes: a relist fills a cache.Store object by object, and an
// object it no longer holds is deleted with the object the store held.
type writeLog struct {
	*rvLog
	mu       sync.Mutex
	deleted  map[string]string // name -> resourceVersion of the object passed to Delete
	replaces int
}

func (s *writeLog) Delete(obj any) error {
	cm := obj.(*corev1.ConfigMap)
	s.mu.Lock()
	s.deleted[cm.Name] = cm.ResourceVersion
	s.mu.Unlock()
	return s.rvLog.Delete(obj)
}

func (s *writeLog) Replace(items []any, rv string) error {
	s.mu.Lock()
	s.replaces++
	s.mu.Unlock()
	return s.rvLog.Replace(items, rv)
}

func (s *writeLog) deletions() (map[string]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.deleted {
		out[k] = v
	}
	return out, s.replaces
}

// runReflectorInto is runReflector with store as the reflector's store.
func runReflectorInto(cfg *rest.Config, ns string, o reflector.Options, store *writeLog) *running {
	o.Lister.Server = detectorServer(cfg)
	r := reflector.New(suite.ConfigMaps(suite.Clientset(cfg), ns), &corev1.ConfigMap{}, store, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer GinkgoRecover(); defer close(done); r.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())
	})
	DeferCleanup(stop)
	return &running{r: r, store: store.rvLog, stop: stop}
}

// relistAfterGoneSpec: a reflector through a proxy has synced ns and is
// watching. The proxy stalls the watch; meanwhile two ConfigMaps are
// deleted and one updated; the watch is dropped and its resumption answered
// 410 (as a watch cache does once its resourceVersion left the window), so
// the reflector relists (a streaming list, or a list with stream false,
// in pages of 5 with paginate).
// The relist fills the store object by object: no Replace, the deleted
// objects delivered as deletions of the objects the store held (their
// resourceVersions from before the deletion: no watch event carried them),
// the store equal to the server, and no object back in time.
func relistAfterGoneSpec(ctx context.Context, c *harness.Cluster, stream, paginate bool) {
	cs := suite.Clientset(c.RESTConfig())
	ns := populate(ctx, cs, "relist", 20)
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	rec := reasons.New()
	store := &writeLog{rvLog: newRVLog(), deleted: map[string]string{}}
	name := fmt.Sprintf("relist-stream=%v-paginate=%v", stream, paginate)
	o := reflector.Options{Lister: lister.Options{Name: name, Metrics: rec, DisableStreamingList: !stream}, PaginateLists: paginate}
	if paginate {
		o.Lister.PageSize, knobs.ListerOf(&o.Lister).MaxPageSize = 5, 5
	}
	run := runReflectorInto(pcfg, ns, o, store)
	waitSynced(run.r, 60*time.Second)
	Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
	last := run.r.LastSyncResourceVersion()
	held := run.store.state()

	// The watch forwards nothing while ns changes: the reflector misses
	// these events.
	p.StallWatches(time.Minute)
	for _, n := range []string{"cm-3", "cm-11"} {
		Expect(cs.CoreV1().ConfigMaps(ns).Delete(ctx, n, metav1.DeleteOptions{})).To(Succeed())
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-5", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	cm.Data = map[string]string{"updated": "while the watch was down"}
	_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())

	// The resumed plain watch is answered 410 once; the relist is not.
	dropWatchAndAnswerResumeGone(p, ns)

	Eventually(func() bool {
		s := run.r.State()
		return len(relists(p, ns)) > 0 && s.Phase == reflector.PhaseWatching && rvLess(last, s.ResourceVersion)
	}).WithTimeout(60*time.Second).WithPolling(10*time.Millisecond).Should(BeTrue(), "the reflector did not relist and watch again")
	logRequests("requests after the drop", requests(p, "", ns))
	Expect(rec.Labels(reasons.FamilyRelist)).To(Equal([]string{"watch-gone"}), "one relist, caused by the 410")
	fills := relists(p, ns)
	Expect(isStreamingList(fills[0])).To(Equal(stream))
	Expect(query(fills[0]).Get("resourceVersion")).To(Equal(last), "the relist is NotOlderThan the store")
	if paginate {
		Expect(query(fills[0]).Get("limit")).To(Equal("5"))
		Expect(len(fills)).To(BeNumerically(">=", 4), "18 ConfigMaps in pages of 5")
	} else {
		Expect(fills).To(HaveLen(1))
	}

	expectStoreEqualsTruth(ctx, cs, run, ns)
	deleted, replaces := store.deletions()
	Expect(replaces).To(BeZero(), "a cache.Store is filled object by object, never replaced whole")
	for _, n := range []string{"cm-3", "cm-11"} {
		Expect(deleted).To(HaveKeyWithValue(n, held[ns+"/"+n]),
			"%s deleted by the relist, with the object the store held (no watch event carried its deletion)", n)
	}
	Expect(slices.Sorted(func(yield func(string) bool) {
		for k := range deleted {
			if !yield(k) {
				return
			}
		}
	})).To(Equal([]string{"cm-11", "cm-3"}), "only the deleted ConfigMaps are deleted")
	Expect(run.store.wentBack()).To(BeEmpty())
}

var _ = Describe("a relist fills the store object by object", Label("conformance", "needs-faults"), Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) {
		c = suite.StartHarness(ctx, harness.Options{Version: build.Current},
			"needs the harness's "+build.Current+" server and the fault proxy")
	})
	It("after a 410, a streaming relist delivers the objects deleted meanwhile as deletions and the store equals the server", func(ctx SpecContext) {
		relistAfterGoneSpec(ctx, c, true, false)
	})
	It("after a 410, a list relist delivers the objects deleted meanwhile as deletions and the store equals the server", func(ctx SpecContext) {
		relistAfterGoneSpec(ctx, c, false, false)
	})
	It("after a 410, a paginated relist (PaginateLists) delivers the objects deleted meanwhile as deletions and the store equals the server", func(ctx SpecContext) {
		relistAfterGoneSpec(ctx, c, false, true)
	})
	It("after a 410, with streaming lists off, a one-response relist gives the store each object as it is decoded (Add/Update, no Replace) and the store equals the server", func(ctx SpecContext) {
		oneResponseRelistSpec(ctx, c)
	})
})
