package sharding

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Mode is where a shard filter was applied to an answer.
type Mode string

const (
	// ModeServer: the server applied the shardSelector; its
	// ListMeta.shardInfo echoed the selector sent.
	ModeServer Mode = "server"
	// ModeClient: the server ignored the shardSelector (no shardInfo: the
	// ShardedListAndWatch gate is off, a server before v1.36, an aggregated
	// API, a proxy that drops the parameter); the same hash filters on the
	// client.
	ModeClient Mode = "client"
)

// ErrShardInfoMismatch matches every *MismatchError (errors.Is).
var ErrShardInfoMismatch = errors.New("shardInfo does not echo the shardSelector sent")

// MismatchError is an answer whose ListMeta.shardInfo names a selector other
// than the one sent: its items are some other subset, which no client-side
// filter can complete. The list must be repeated without the parameter.
type MismatchError struct {
	Sent, Echoed string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("shard: the server's shardInfo selector %q is not the shardSelector sent, %q", e.Echoed, e.Sent)
}

// Is makes errors.Is(err, ErrShardInfoMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrShardInfoMismatch }

// Verify reads what a list answer proves about the shardSelector sent with
// it, the way KEP-2523's rule 2 reads ListMeta.resourceVersion: ModeServer
// when shardInfo echoes the selector (compared parsed, so spelling does not
// matter), ModeClient when there is no shardInfo, a *MismatchError when it
// names another selector (or one that does not parse).
func Verify(list runtime.Object, sent Selector) (Mode, error) {
	echoedRaw, present, err := shardInfoOf(list)
	if err != nil {
		return "", err
	}
	if !present {
		return ModeClient, nil
	}
	echoed, err := Parse(echoedRaw)
	if err != nil || echoed.String() != sent.String() {
		return "", &MismatchError{Sent: sent.String(), Echoed: echoedRaw}
	}
	return ModeServer, nil
}

// shardInfoOf reads ListMeta.shardInfo.selector of a typed or unstructured
// list; present is false when the list has no shardInfo.
func shardInfoOf(list runtime.Object) (selector string, present bool, err error) {
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		md, _ := u.Object["metadata"].(map[string]any)
		if _, found := md["shardInfo"]; !found {
			return "", false, nil
		}
		// Present but not an object with a selector string: an echo of no
		// selector, which Verify reports as a mismatch.
		info, _, _ := unstructured.NestedMap(u.Object, "metadata", "shardInfo")
		sel, _ := info["selector"].(string)
		return sel, true, nil
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", false, fmt.Errorf("shard: %w", err)
	}
	if sl, ok := lm.(metav1.ShardedListInterface); ok && sl.GetShardInfo() != nil {
		return sl.GetShardInfo().Selector, true, nil
	}
	return "", false, nil
}

// Filter keeps the items of list that s selects, in place, and returns how
// many it dropped. An item it cannot read is an error (nothing is dropped
// silently).
func Filter(list runtime.Object, s Selector) (dropped int, err error) {
	if s.Empty() {
		return 0, nil
	}
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return 0, fmt.Errorf("shard: %w", err)
	}
	kept := items[:0]
	for _, it := range items {
		ok, err := s.Matches(it)
		if err != nil {
			return 0, err
		}
		if ok {
			kept = append(kept, it)
		}
	}
	dropped = len(items) - len(kept)
	if dropped == 0 {
		return 0, nil
	}
	return dropped, meta.SetList(list, kept)
}
