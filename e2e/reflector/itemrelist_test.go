package reflector_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
	"github.com/steadywatch/steadywatch/e2e/internal/suite/reasons"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// sequence is one log of what the lister's transform is given (while it
// decodes a list, item by item) and what the store is given, in order.
type sequence struct {
	mu  sync.Mutex
	log []string
}

func (s *sequence) add(e string) { s.mu.Lock(); s.log = append(s.log, e); s.mu.Unlock() }
func (s *sequence) reset()       { s.mu.Lock(); s.log = nil; s.mu.Unlock() }
func (s *sequence) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// sequenceStore is a writeLog that logs each Add and Update to seq.
type sequenceStore struct {
	*writeLog
	seq *sequence
}

func (s *sequenceStore) Add(obj any) error {
	s.seq.add("store " + obj.(*corev1.ConfigMap).Name)
	return s.writeLog.Add(obj)
}

func (s *sequenceStore) Update(obj any) error {
	s.seq.add("store " + obj.(*corev1.ConfigMap).Name)
	return s.writeLog.Update(obj)
}

// oneResponseRelistSpec: a reflector with streaming lists off and no
// PaginateLists through a proxy has synced ns; its watch is dropped and the
// resumption answered 410, so it relists in one response (one list
// request, no limit). The relist's objects are applied as the response is
// decoded: the store is given each object right after the lister's
// transform decoded it, before the next one is decoded (a list decoded
// whole first would transform every object before the store gets the
// first). The store gets Adds and Updates, no Replace, and ends equal to
// the server.
func oneResponseRelistSpec(ctx context.Context, c *harness.Cluster) {
	cs := suite.Clientset(c.RESTConfig())
	ns := populate(ctx, cs, "onerelist", 20)
	p, pcfg, err := c.NewProxy(ctx, c.APIServers()[0])
	Expect(err).NotTo(HaveOccurred())
	seq := &sequence{}
	store := &sequenceStore{writeLog: &writeLog{rvLog: newRVLog(), deleted: map[string]string{}}, seq: seq}
	o := reflector.Options{Lister: lister.Options{Name: "one-response-relist", Metrics: reasons.New(), DisableStreamingList: true,
		Transform: func(obj any) (any, error) {
			seq.add("decoded " + obj.(*corev1.ConfigMap).Name)
			return obj, nil
		}}}
	o.Lister.Server = detectorServer(pcfg)
	r := reflector.New(suite.ConfigMaps(suite.Clientset(pcfg), ns), &corev1.ConfigMap{}, store, o)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer GinkgoRecover(); defer close(done); r.Run(rctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())
	})
	run := &running{r: r, store: store.rvLog}
	waitSynced(r, 60*time.Second)
	Eventually(p.Watches).WithTimeout(30 * time.Second).Should(Equal(1))
	last := r.LastSyncResourceVersion()

	p.StallWatches(time.Minute)
	Expect(cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-3", metav1.DeleteOptions{})).To(Succeed())
	p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true, Count: 1,
		Match: func(q url.Values) bool { return q.Get("resourceVersion") != "" && q.Get("resourceVersion") != "0" }})
	p.ResetRequests()
	seq.reset()
	Expect(p.DropWatches()).To(Equal(1))
	p.StallWatches(0)

	Eventually(func() bool {
		s := r.State()
		return len(relists(p, ns)) > 0 && s.Phase == reflector.PhaseWatching && rvLess(last, s.ResourceVersion)
	}).WithTimeout(60*time.Second).WithPolling(10*time.Millisecond).Should(BeTrue(), "the reflector did not relist and watch again")
	logRequests("requests after the drop", requests(p, "", ns))
	fills := relists(p, ns)
	Expect(fills).To(HaveLen(1), "one list request")
	Expect(fills[0].Verb).To(Equal("list"))
	Expect(query(fills[0]).Get("limit")).To(BeEmpty(), "a list in one response")

	// The relist's 19 objects: each decoded, then given to the store. The
	// deleted cm-3 is left out: the watch dropped may have handed its
	// deletion to the transform.
	var log []string
	for _, e := range seq.get() {
		if !strings.HasSuffix(e, " cm-3") {
			log = append(log, e)
		}
	}
	Expect(len(log)).To(BeNumerically(">=", 38), "log %q", log)
	for i := 0; i < 38; i += 2 {
		name := strings.TrimPrefix(log[i], "decoded ")
		Expect(log[i]).To(HavePrefix("decoded "), "log %q", log)
		Expect(log[i+1]).To(Equal("store "+name), "object %s given to the store before the next was decoded; log %q", name, log)
	}
	expectStoreEqualsTruth(ctx, cs, run, ns)
	deleted, replaces := store.deletions()
	Expect(replaces).To(BeZero(), "a cache.Store is filled object by object, never replaced whole")
	Expect(deleted).To(HaveKey("cm-3"))
	Expect(run.store.wentBack()).To(BeEmpty())
}
