package main

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
	shard "github.com/steadywatch/steadywatch/internal/sharding"
)

// The shardSelector cell asks whether the server applies the shardSelector
// of KEP-5866, "Sharded List and Watch"
// (https://github.com/kubernetes/enhancements/issues/5866: alpha since
// v1.36, feature gate ShardedListAndWatch). It sends one pair of lists of
// the probe's objects, each with a shardSelector covering one half of the
// uid hash space, and limit=2. A server that applies the selector echoes it
// in ListMeta.shardInfo and returns only objects of that half; one that does
// not know it (the gate off, a server before v1.36, a proxy that drops the
// parameter) ignores it silently and answers without shardInfo. Each answer
// is read with shard.Verify, the check steadywatch's sharded ListerWatcher
// makes on every list; "yes" needs both halves echoed with their objects in
// range, "no" neither echoed, anything else is an error. What it shows
// holds for the core group/version (configmaps, "v1") only: an aggregated
// API or a custom resource's group is served by other code and may differ,
// so steadywatch keeps the belief per group/version (capability.ForGroupVersion).

// KindShardSelector is the kind of the shardSelector cell.
const KindShardSelector = "shard-selector"

// CellShardSelector is the id of the shardSelector cell.
const CellShardSelector = "shard/selector-honoured"

// Observed values of the shardSelector cell.
const (
	// SemMayApplyShardSelector (expected): applying it is optional (an alpha
	// feature); ignoring it must leave the answer unfiltered.
	SemMayApplyShardSelector = "MayApplyShardSelector"
	SemShardInfoEchoed       = "ShardInfoEchoed"      // ListMeta.shardInfo echoes the selector sent: the server filtered
	SemShardSelectorIgnored  = "ShardSelectorIgnored" // no shardInfo: the server ignored the selector
	SemShardInfoMismatch     = "ShardInfoMismatch"    // shardInfo names another selector
)

// Results of the shardSelector cell (detected.shardSelector).
const (
	ResultYes   = "yes"
	ResultNo    = "no"
	ResultError = "error"
)

const (
	srcShardSelector = "KEP-5866 Sharded List and Watch: a server that applies shardSelector echoes it in ListMeta.shardInfo"
	// shardProbeSelector and shardProbeSelectorUpper cover the lower and
	// the upper half of the uid hash space.
	shardProbeSelector      = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	shardProbeSelectorUpper = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
	// shardGroupVersion is the group/version the cell's answer is about.
	shardGroupVersion = "v1"
)

func shardSelectorCell() cell {
	return cell{
		ID: CellShardSelector, Kind: KindShardSelector, RV: RVUnset, Paging: PagingLimit,
		Expected: SemMayApplyShardSelector, Source: srcShardSelector,
		Note: "two lists with limit=2, shardSelector=" + shardProbeSelector + " and its upper half: shardInfo echoed by both with objects in range (yes), by neither (no: ignored), or the error",
	}
}

// runShardSelectorCell sends the cell's pair of lists and records what
// their answers show (the wire form shown is the first list's).
func (e *probeEnv) runShardSelectorCell(ctx context.Context, opts metav1.ListOptions, r *cellReport) error {
	var (
		halves [2]shard.Selector
		lists  [2]runtime.Object
		errs   [2]error
	)
	for i, raw := range []string{shardProbeSelector, shardProbeSelectorUpper} {
		sel, err := shard.Parse(raw)
		if err != nil {
			return err
		}
		halves[i] = sel
		o := opts
		o.ShardSelector = sel.String()
		if i == 0 {
			r.Wire, r.Request.ShardSelector, r.GroupVersion = wireQuery(o), o.ShardSelector, shardGroupVersion
		}
		l, err := e.list(ctx, o)
		if err != nil {
			if f := fatal(ctx, "list", e, err); f != nil {
				return f
			}
			errs[i] = err
			continue
		}
		lists[i] = l
		r.Items += len(l.Items)
		if i == 0 {
			r.ServedResourceVersion = l.GetResourceVersion()
		}
	}
	r.HTTPStatus = 200
	for _, err := range errs {
		if err != nil {
			r.HTTPStatus, r.Message = statusOf(err), oneLine(err.Error())
			break
		}
	}
	r.Observed, r.Result, r.Evidence = observeShardSelectorPair(lists, errs, halves)
	return nil
}

// observeShardSelectorPair combines the answers to the two halves: yes when
// both echo their selector and hold only objects of their half, no when
// neither echoes it, an error otherwise.
func observeShardSelectorPair(lists [2]runtime.Object, errs [2]error, halves [2]shard.Selector) (observed, result, evidence string) {
	var res [2]string
	for i := range lists {
		o, r, ev := observeShardSelector(lists[i], errs[i], halves[i])
		if r == ResultError {
			return o, r, fmt.Sprintf("half %d of 2: %s", i+1, ev)
		}
		if r == ResultYes {
			if ev, ok := outsideHalf(lists[i], halves[i]); !ok {
				return SemShardInfoMismatch, ResultError, fmt.Sprintf("half %d of 2: shardInfo echoed, but %s", i+1, ev)
			}
		}
		res[i] = r
	}
	switch {
	case res[0] == ResultYes && res[1] == ResultYes:
		return SemShardInfoEchoed, ResultYes, "ListMeta.shardInfo echoes each half's selector and every object is in its half: the server filtered"
	case res[0] == ResultNo && res[1] == ResultNo:
		return SemShardSelectorIgnored, ResultNo, "no ListMeta.shardInfo for either half: the server ignored the selector (steadywatch filters on the client)"
	}
	return SemShardInfoMismatch, ResultError, fmt.Sprintf("one half echoed shardInfo and the other did not (lower: %s, upper: %s)", res[0], res[1])
}

// outsideHalf reports the first object of list that half does not select
// (ok false), or ok true when there is none.
func outsideHalf(list runtime.Object, half shard.Selector) (string, bool) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err.Error(), false
	}
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			return err.Error(), false
		}
		in, err := half.MatchesMeta(m)
		if err != nil {
			return err.Error(), false
		}
		if !in {
			return fmt.Sprintf("%s/%s (uid %s) is outside %s", m.GetNamespace(), m.GetName(), m.GetUID(), half.String()), false
		}
	}
	return "", true
}

// observeShardSelector classifies the answer to a list sent with the
// shardSelector sent: list, or the request's error.
func observeShardSelector(list runtime.Object, reqErr error, sent shard.Selector) (observed, result, evidence string) {
	if reqErr != nil {
		status := statusOf(reqErr)
		return errorSemantic(status, fallback.Classify(reqErr)), ResultError,
			fmt.Sprintf("the list with a shardSelector was answered %d: %s", status, oneLine(reqErr.Error()))
	}
	mode, err := shard.Verify(list, sent)
	var mm *shard.MismatchError
	switch {
	case errors.As(err, &mm):
		return SemShardInfoMismatch, ResultError, fmt.Sprintf("shardInfo names %q, not the selector sent", mm.Echoed)
	case err != nil:
		return SemError, ResultError, err.Error()
	case mode == shard.ModeServer:
		return SemShardInfoEchoed, ResultYes, "ListMeta.shardInfo echoes the selector: the server filtered"
	}
	return SemShardSelectorIgnored, ResultNo, "no ListMeta.shardInfo: the server ignored the selector (steadywatch filters on the client)"
}
