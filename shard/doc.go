// Package shard splits one resource's objects among an operator's replicas
// with the hash ranges of KEP-5866, "Sharded List and Watch"
// (https://github.com/kubernetes/enhancements/issues/5866): a list or watch
// request carries a shardSelector such as
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// and a server that applies it (alpha since v1.36, feature gate
// ShardedListAndWatch) returns only the objects whose FNV-1a 64-bit hash of
// that field falls in one of the ranges, echoing the selector in
// ListMeta.shardInfo. A server that does not know the parameter ignores it
// silently and returns everything (the problem KEP-2523 describes for
// resourceVersionMatch), so every answer is verified (Verify) and, where the
// server did not filter, the same hash filters on the client (Selector.Matches):
// the result is identical either way.
//
// What it is: the selector's validation (Parse, before any request is sent),
// the hash and the match, the verification of a list's shardInfo, and the
// deterministic assignment of ranges to live members (Assign). What it is
// not: a coordinator. Which replicas are alive is what the Kubernetes API
// says (coordination.k8s.io/v1 Leases).
package shard
