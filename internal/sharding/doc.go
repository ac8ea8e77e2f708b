// Package sharding is the machinery behind package shard: KEP-5866
// shardSelectors (Parse, Selector, the FNV-1a hash), the verification of a
// list's ListMeta.shardInfo (Verify), the client-side filter, the sharded
// ListerWatcher decorator (Wrap), the delete-safe event handler (Handler)
// and the Lease-based Membership with its deterministic slice assignment
// (Assign). Package shard's New wires them; the plugin, e2e and the
// benchmarks use them directly.
package sharding
