package main

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/shard"
)

// The shardSelector cell asks whether the server applies the shardSelector
// of KEP-5866, "Sharded List and Watch"
// (https://github.com/kubernetes/enhancements/issues/5866: alpha since
// v1.36, feature gate ShardedListAndWatch). It sends one list of the probe's
// objects with a shardSelector covering half of the uid hash space and
// limit=2. A server that applies the selector echoes it in
// ListMeta.shardInfo; one that does not know it (the gate off, a server
// before v1.36, a proxy that drops the parameter) ignores it silently and
// answers without shardInfo. The answer is read with shard.Verify, the check
// steadywatch's sharded ListerWatcher makes on every list. What it shows
// holds for the core group/version (configmaps, "v1") only: an aggregated
// API or a custom resource's group is served by other code and may differ,
// so steadywatch keeps the belief per group/version (compat.ForGroupVersion).

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
	// shardProbeSelector covers the lower half of the uid hash space.
	shardProbeSelector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	// shardGroupVersion is the group/version the cell's answer is about.
	shardGroupVersion = "v1"
)

func shardSelectorCell() cell {
	return cell{
		ID: CellShardSelector, Kind: KindShardSelector, RV: RVUnset, Paging: PagingLimit,
		Expected: SemMayApplyShardSelector, Source: srcShardSelector,
		Note: "list with shardSelector=" + shardProbeSelector + " and limit=2: shardInfo echoed (yes), absent (no: ignored), or the error",
	}
}

// runShardSelectorCell sends the cell's list and records what its answer
// shows.
func (e *probeEnv) runShardSelectorCell(ctx context.Context, opts metav1.ListOptions, r *cellReport) error {
	sel, err := shard.Parse(shardProbeSelector)
	if err != nil {
		return err
	}
	opts.ShardSelector = sel.String()
	r.Wire, r.Request.ShardSelector, r.GroupVersion = wireQuery(opts), opts.ShardSelector, shardGroupVersion
	l, err := e.list(ctx, opts)
	if err != nil {
		if f := fatal(ctx, "list", e, err); f != nil {
			return f
		}
		r.HTTPStatus = statusOf(err)
		r.Message = oneLine(err.Error())
		r.Observed, r.Result, r.Evidence = observeShardSelector(nil, err, sel)
		return nil
	}
	r.HTTPStatus = 200
	r.ServedResourceVersion = l.GetResourceVersion()
	r.Items = len(l.Items)
	r.Observed, r.Result, r.Evidence = observeShardSelector(l, nil, sel)
	return nil
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
