package reflector

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/capability"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/testfake"
	"github.com/steadywatch/steadywatch/lister"
)

// plannedBefore is the list a reflector sent to (re)fill its store, read
// from the code before the choice was rows: the reading the rows must keep.
// insideAfterRead: the client declares that client-go retries inside it
// only once the limit=1 read has run (clients.Inferred's scope check could
// not settle): the newest list, in pages.
func plannedBefore(q fallback.Query, initial bool, attempt int, paginate, objects bool, pageSize int64, cfc capability.Support, haveServer, retriesInside, insideAfterRead bool, probeRV string) (fallback.Query, bool) {
	switch {
	case q.Semantic == fallback.NotOlderThan && paginate && !initial && objects && pageSize > 0:
		return q.WithLimit(pageSize), false
	case q.Semantic == fallback.NotOlderThan:
		return q, false
	case q.Semantic != fallback.MostRecent || q.Continue != "" || attempt > 0 || paginate || pageSize <= 0:
		return q.WithLimit(pageSize), false
	case haveServer && cfc == capability.Yes:
		return q, false
	case haveServer && cfc == capability.No:
		return q.WithLimit(pageSize), false
	case retriesInside:
		return q.WithLimit(pageSize), false
	}
	if probeRV == "" || probeRV == "0" || insideAfterRead {
		return q.WithLimit(pageSize), true
	}
	return lister.NotOlderThan(probeRV), true
}

// TestListPlanIsARow walks every (re)fill a reflector plans, under every
// option and server belief that takes part, and checks that the query
// planList sends is the one the table's list-plan row names, carried out
// as it is (nothing after the lookup changes it), and the one the reflector
// sent before the choice was rows; a limit=1 read is sent exactly when a
// row asks for it.
func TestListPlanIsARow(t *testing.T) {
	rows := engine.Rows()
	queries := []fallback.Query{
		lister.MostRecent(), lister.MostRecent().WithContinue("tok"), lister.Any(),
		lister.NotOlderThan("10"), {Semantic: fallback.Exact, ResourceVersion: "10"},
	}
	n := 0
	for _, q := range queries {
		for _, initial := range []bool{false, true} {
			for _, attempt := range []int{0, 1} {
				for _, paginate := range []bool{false, true} {
					for _, objects := range []bool{false, true} {
						for _, pageSize := range []int64{0, 500} {
							for _, server := range []string{"none", "yes", "no", "unknown"} {
								for _, inside := range []string{"no", "yes", "after the read"} {
									for _, probeRV := range []string{"", "0", "42", "error"} {
										n++
										probes, retriesInside := 0, false
										fc := &fakeClient{ListFn: func(_ int, o metav1.ListOptions) (runtime.Object, error) {
											probes++
											if inside == "after the read" {
												retriesInside = true
											}
											if probeRV == "error" {
												return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", nil)
											}
											return cmList(probeRV), nil
										}}
										r := New(fc, &corev1.ConfigMap{}, cache.NewStore(cache.MetaNamespaceKeyFunc), fastOptions(&testfake.Recorder{}))
										retriesInside = inside == "yes"
										r.o.PaginateLists, r.o.pageSize = paginate, pageSize
										r.retriesInside = func() bool { return retriesInside }
										if !objects {
											r.objects = nil
										}
										cfc := capability.Unknown
										r.o.Server = nil
										if server != "none" {
											cfc = map[string]capability.Support{"yes": capability.Yes, "no": capability.No, "unknown": capability.Unknown}[server]
											r.o.Server = capability.Static(capability.Capabilities{Support: map[capability.Capability]capability.Support{capability.ConsistentListFromCache: cfc}})
										}
										s := listing{query: q, initial: initial, attempt: attempt}
										got, probe, d, err := r.plan(context.Background(), s)
										want, probed := plannedBefore(q, initial, attempt, paginate, objects, pageSize, cfc, server != "none", inside == "yes", inside == "after the read", probeRV)
										name := strings.Join([]string{q.String(), server, probeRV}, "/")
										if probed != (probes == 1) || probes > 1 {
											t.Fatalf("%s %+v: %d limit=1 reads, want probed=%t", name, s, probes, probed)
										}
										if probed && probeRV == "error" {
											if err == nil || probe != lister.MostRecent().WithLimit(1) || d.Then != engine.ThenPlanProbe {
												t.Fatalf("%s: err %v, probe %v, then %s; want the limit=1 read's failure", name, err, probe, d.Then)
											}
											continue
										}
										if err != nil || probe != q {
											t.Fatalf("%s: err %v, probe %v", name, err, probe)
										}
										if d.Row < 0 || !strings.HasPrefix(rows[d.Row].Pattern(), "op=list-plan") {
											t.Fatalf("%s %+v: row %d is not a list-plan row", name, s, d.Row)
										}
										rv := ""
										if probed {
											rv = probeRV
										}
										if carried := r.carryOutPlan(context.Background(), d, q, rv); got != carried {
											t.Fatalf("%s %+v: planList sent %v; row %d (%s) names %v", name, s, got, d.Row, d.Then, carried)
										}
										if got != want {
											t.Fatalf("%s initial=%t attempt=%d paginate=%t objects=%t pageSize=%d inside=%s: row %d sends %v, before the rows %v", name, initial, attempt, paginate, objects, pageSize, inside, d.Row, got, want)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d plans checked", n)
}
