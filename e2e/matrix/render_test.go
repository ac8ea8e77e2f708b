package matrix

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/e2e/chaos"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
)

func TestMarkdownRendersEveryCellAndEscapesPipes(t *testing.T) {
	r := Report{Generated: "2026-01-01T00:00:00Z", Command: "go run ./cmd/matrix", Go: "go1.26", ClientGo: "v0.37.2",
		Rows: []Row{{Server: "v1.18.19", Config: Configs[0], Cells: []Cell{
			{Scenario: ScenarioSync, Client: Ours, Outcome: Pass, Detail: "synced in 0.2s"},
			{Scenario: ScenarioSync, Client: Stock, Outcome: Fail, Detail: "never synced | within 30s"},
		}}, {Server: "v1.33.9", Config: Configs[1], Err: "binary: build failed"}},
		Chaos: []chaos.Result{{Replay: 7, Server: "v1.36.3", Config: "HA", FaultsByKind: map[string]int{"drop-watches": 2},
			Informers: []chaos.InformerRun{{Name: "steadywatch", Converged: true, ConvergenceSeconds: 1.5}}}},
	}
	r.NotRun = []NotRun{{Server: "v1.22.17", Why: "not built | no time"}}
	md := Markdown(r)
	for _, want := range []string{
		"| v1.18.19 | watch cache on | initial sync (reflector.New) | ✅ synced in 0.2s | ❌ never synced \\| within 30s |",
		"| v1.18.19 | watch cache on | recovery from 410 (compaction + watch 410) | — ", // missing cell is n/a
		"| v1.33.9 | watch cache off | — | not run: binary: build failed | not run |",
		"| v1.36.3 | HA | 7 |", "| v1.22.17 | not built \\| no time |", "✅ 1.5 s", "GENERATED", `"replay": 7`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestListPath(t *testing.T) {
	if got := listPath(nil, "ns", true); got != "no list request" {
		t.Fatalf("got %q", got)
	}
	stream := faults.Request{Verb: "watch", Resource: "configmaps", Namespace: "ns", RawQuery: "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"}
	probe := faults.Request{Verb: "list", Resource: "configmaps", Namespace: "ns", RawQuery: "limit=1"}
	list := faults.Request{Verb: "list", Resource: "configmaps", Namespace: "ns", RawQuery: "limit=500&resourceVersion=0"}
	scope := faults.Request{Verb: "list", Resource: "configmaps", Namespace: "ns", RawQuery: "limit=1&resourceVersion=230"}
	for _, tc := range []struct {
		reqs []faults.Request
		want string
	}{
		{[]faults.Request{stream, probe}, "streaming list x1 (+ limit=1 read x1)"},               // the guard's count, not a fallback
		{[]faults.Request{probe, scope, stream, probe}, "streaming list x1 (+ limit=1 read x3)"}, // NewInformerFor's scope check too
		{[]faults.Request{stream, probe, list}, "streaming list x1 (+ limit=1 read x1), then list x1 (fell back)"},
		{[]faults.Request{stream, list}, "streaming list x1, then list x1 (fell back)"},
		{[]faults.Request{probe}, "list x1"},
	} {
		if got := listPath(tc.reqs, "ns", true); got != tc.want {
			t.Errorf("listPath(%v) = %q, want %q", tc.reqs, got, tc.want)
		}
	}
}

func TestListMetaReadsEveryListType(t *testing.T) {
	typed := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: make([]corev1.ConfigMap, 3)}
	paged := &metainternalversion.List{ListMeta: metav1.ListMeta{ResourceVersion: "8"}, Items: []runtime.Object{&corev1.ConfigMap{}, &corev1.ConfigMap{}}}
	for _, tc := range []struct {
		obj   runtime.Object
		rv    string
		items int
	}{{typed, "7", 3}, {paged, "8", 2}} {
		rv, n, err := listMeta(tc.obj)
		if err != nil || rv != tc.rv || n != tc.items {
			t.Errorf("listMeta(%T) = %q, %d, %v; want %q, %d", tc.obj, rv, n, err, tc.rv, tc.items)
		}
	}
}

func TestInvariantVerdict(t *testing.T) {
	for _, tc := range []struct {
		ir   chaos.InformerRun
		want string
	}{
		{chaos.InformerRun{Converged: true, ConvergenceSeconds: 3}, "kept all (converged in 3.0 s)"},
		{chaos.InformerRun{Converged: true, ConvergenceSeconds: 26.6}, "FAILED: converged only after 26.6 s"},
		{chaos.InformerRun{ConvergenceSeconds: -1, DeletesMissed: 2, Regressions: 1}, "FAILED: never converged, 2 deletes missed, 1 RV regressions"},
	} {
		if got := invariantVerdict(tc.ir); got != tc.want {
			t.Errorf("invariantVerdict(%+v) = %q, want %q", tc.ir, got, tc.want)
		}
	}
}
