package main

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	shard "github.com/steadywatch/steadywatch/internal/sharding"
)

func TestObserveShardSelector(t *testing.T) {
	sent, err := shard.Parse(shardProbeSelector)
	if err != nil {
		t.Fatal(err)
	}
	other := "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
	for _, tc := range []struct {
		name             string
		list             runtime.Object
		err              error
		observed, result string
		verdict          string
	}{
		{"shardInfo echoes the selector (spelled otherwise)",
			&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')"}}},
			nil, SemShardInfoEchoed, ResultYes, VerdictAsSpecified},
		{"no shardInfo: ignored", &corev1.ConfigMapList{}, nil, SemShardSelectorIgnored, ResultNo, VerdictAsSpecified},
		{"shardInfo names another selector",
			&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{Selector: other}}},
			nil, SemShardInfoMismatch, ResultError, VerdictDiffers},
		{"shardInfo that does not parse",
			&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{Selector: "true"}}},
			nil, SemShardInfoMismatch, ResultError, VerdictDiffers},
		{"the list is refused", nil, apierrors.NewBadRequest("invalid shardSelector"), SemInvalid, ResultError, VerdictDiffers},
		{"a server error", nil, apierrors.NewInternalError(errors.New("boom")), SemError, ResultError, VerdictDiffers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, res, ev := observeShardSelector(tc.list, tc.err, sent)
			if obs != tc.observed || res != tc.result || ev == "" {
				t.Fatalf("observed %s, result %s, evidence %q; want %s, %s and evidence", obs, res, ev, tc.observed, tc.result)
			}
			if v := verdict(shardSelectorCell(), obs); v != tc.verdict {
				t.Fatalf("verdict %s, want %s", v, tc.verdict)
			}
		})
	}
}

func TestShardSelectorCellIsReportedAndDetected(t *testing.T) {
	cells := probeCells()
	c := cells[len(cells)-1]
	if c.ID != CellShardSelector || c.Kind != KindShardSelector || c.Paging != PagingLimit {
		t.Fatalf("last cell %+v, want the shardSelector cell with a limit", c)
	}
	e := &probeEnv{selector: probeLabel + "=x"}
	if o := e.wireOptions(c); o.Limit != probeLimit || o.LabelSelector != e.selector || o.ResourceVersion != "" {
		t.Fatalf("wire options %+v", o)
	}
	for _, res := range []string{ResultYes, ResultNo, ResultError} {
		r := probeReport{Cells: []cellReport{{ID: CellShardSelector, Result: res, Verdict: VerdictAsSpecified}}}
		r.summarize()
		if r.Detected.ShardSelector != res {
			t.Fatalf("detected.shardSelector %q, want %q", r.Detected.ShardSelector, res)
		}
	}
	r := probeReport{}
	r.summarize()
	if r.Detected.ShardSelector != "unknown" {
		t.Fatalf("without the cell, detected.shardSelector %q", r.Detected.ShardSelector)
	}
	q := wireQuery(metav1.ListOptions{Limit: 2, ShardSelector: shardProbeSelector})
	if want := "limit=2&shardSelector=" + shardProbeSelector; q != want {
		t.Fatalf("wire %q, want %q", q, want)
	}
}

// The pair of half-range lists: yes only when both halves echo their
// selector and hold only their own objects.
func TestObserveShardSelectorPair(t *testing.T) {
	var halves [2]shard.Selector
	for i, raw := range []string{shardProbeSelector, shardProbeSelectorUpper} {
		s, err := shard.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		halves[i] = s
	}
	// One uid per half, found by hashing.
	var uids [2]types.UID
	for i := 0; uids[0] == "" || uids[1] == ""; i++ {
		u := types.UID(fmt.Sprintf("uid-%d", i))
		in, err := halves[0].MatchesMeta(&metav1.ObjectMeta{UID: u})
		if err != nil {
			t.Fatal(err)
		}
		if in && uids[0] == "" {
			uids[0] = u
		} else if !in && uids[1] == "" {
			uids[1] = u
		}
	}
	echoed := func(half int, uid types.UID) runtime.Object {
		return &corev1.ConfigMapList{
			ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{Selector: halves[half].String()}},
			Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: uid}}},
		}
	}
	ignored := &corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{UID: uids[0]}}, {ObjectMeta: metav1.ObjectMeta{UID: uids[1]}}}}
	for _, tc := range []struct {
		name     string
		lists    [2]runtime.Object
		errs     [2]error
		observed string
		result   string
	}{
		{"both halves echoed, objects in range", [2]runtime.Object{echoed(0, uids[0]), echoed(1, uids[1])}, [2]error{}, SemShardInfoEchoed, ResultYes},
		{"neither echoed", [2]runtime.Object{ignored, ignored}, [2]error{}, SemShardSelectorIgnored, ResultNo},
		{"only one half echoed", [2]runtime.Object{echoed(0, uids[0]), ignored}, [2]error{}, SemShardInfoMismatch, ResultError},
		{"echoed, but an object of the other half", [2]runtime.Object{echoed(0, uids[1]), echoed(1, uids[1])}, [2]error{}, SemShardInfoMismatch, ResultError},
		{"the second list refused", [2]runtime.Object{ignored, nil}, [2]error{nil, apierrors.NewBadRequest("invalid shardSelector")}, SemInvalid, ResultError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, res, ev := observeShardSelectorPair(tc.lists, tc.errs, halves)
			if obs != tc.observed || res != tc.result || ev == "" {
				t.Fatalf("observed %s, result %s, evidence %q; want %s, %s and evidence", obs, res, ev, tc.observed, tc.result)
			}
		})
	}
}
