// Package shard splits one resource's objects among an operator's replicas
// with the hash ranges of KEP-5866, "Sharded List and Watch"
// (https://github.com/kubernetes/enhancements/issues/5866). One constructor,
// New, returns an informer that holds only this replica's share:
//
//	inf, err := shard.New(lw, &corev1.ConfigMap{}, shard.Options{
//		Leases: cs.CoordinationV1(), Namespace: "my-operator", Group: "my-operator",
//	})
//	inf.AddEventHandler(handlers) // enqueue, as with any informer
//	go inf.RunWithContext(ctx)
//
// and in the reconcile:
//
//	done, ok := inf.Owns(obj)
//	if !ok {
//		return nil // another replica reconciles it
//	}
//	defer done()
//
// The replicas find each other through coordination.k8s.io/v1 Leases, the
// Kubernetes API's own mechanism (no coordinator to run), and split the hash
// space of metadata.uid among the live ones. New wires everything else:
//
//   - each list and watch asks for this replica's range with a
//     shardSelector; a server that applies it (alpha since v1.36, feature
//     gate ShardedListAndWatch) echoes it in ListMeta.shardInfo, and where
//     the server ignores it (every other server, silently) the same hash
//     filters on the client: the cache holds the same objects either way;
//   - when members join or leave, the watch ends and the range is listed
//     again; a replica acts on newly assigned objects only after that list
//     holds them, and its handlers then receive an update for each of them
//     (objects of newly owned slices may have no event coming);
//   - an object that leaves the range is not reported to the handlers as
//     deleted;
//   - a replica stops acting on objects it no longer owns, and lets another
//     replica start on them only after its reconciles of them finished
//     (the done functions Owns returned were called).
//
// So at most one replica reconciles an object at a time. docs/sharding.md
// describes the handoff and the modes.
package shard
