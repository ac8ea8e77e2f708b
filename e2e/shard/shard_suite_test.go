// Package shard proves sharding against real kube-apiservers: a
// shardSelector (KEP-5866, "Sharded List and Watch") is applied and echoed
// in ListMeta.shardInfo by v1.37.2 with the ShardedListAndWatch gate on, and
// silently ignored by v1.37.2 with the gate off and by v1.18.19; the SDK's
// verification (internal/sharding.Verify) tells the two apart from the
// answer, and its client-side filter makes the result identical to the
// server's. Three replicas of examples/sharded, built with shard.New and no
// other wiring, split the objects and hand them over safely on each server.
package shard

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestShard(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "sharded list and watch (KEP-5866)")
}
