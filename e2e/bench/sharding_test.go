package main

import (
	"math/rand/v2"
	"strings"
	"testing"

	shard "github.com/steadywatch/steadywatch/internal/sharding"
)

// The static ranges of 1, 2 and 4 replicas cover the hash space exactly
// once, with equal numbers of slices.
func TestShardSelectorsPartitionTheHashSpace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	hashes := []uint64{0, ^uint64(0), 1 << 63, (1 << 63) - 1}
	for range 10000 {
		hashes = append(hashes, rng.Uint64())
	}
	for _, n := range []int{1, 2, 3, 4} {
		sels := make([]shard.Selector, n)
		for i := range sels {
			var err error
			if sels[i], err = shardingSelector(i, n); err != nil {
				t.Fatalf("shardingSelector(%d, %d): %v", i, n, err)
			}
			if _, err := shard.Parse(sels[i].String()); err != nil {
				t.Fatalf("shardingSelector(%d, %d) does not parse: %v", i, n, err)
			}
		}
		for _, h := range hashes {
			in := 0
			for _, s := range sels {
				if s.MatchesHash(h) {
					in++
				}
			}
			if in != 1 {
				t.Fatalf("%d replicas: hash %#x is in %d ranges, want 1", n, h, in)
			}
		}
	}
	// One member more than slices: exactly one replica has none, an error.
	none := 0
	for i := range shardingSlices + 1 {
		if _, err := shardingSelector(i, shardingSlices+1); err != nil {
			none++
		}
	}
	if none != 1 {
		t.Errorf("%d of %d replicas have no slices, want 1", none, shardingSlices+1)
	}
}

func TestShardReplicasSplitTheObjects(t *testing.T) {
	res := func(mode string, names ...string) shardingResult {
		return shardingResult{Mode: mode, Objects: len(names), Names: names}
	}
	for _, tc := range []struct {
		name string
		g    shardingGroup
		want string // "" = no error; else a substring of it
	}{
		{"split once", shardingGroup{Replicas: 2, Results: []shardingResult{res("server", "a", "b"), res("server", "c")}}, ""},
		{"mode not learnt", shardingGroup{Replicas: 2, Results: []shardingResult{res("", "a", "b"), res("server", "c")}}, ""},
		{"held twice", shardingGroup{Replicas: 2, Results: []shardingResult{res("server", "a", "b"), res("server", "b", "c")}}, "held by replicas 0 and 1"},
		{"one missing", shardingGroup{Replicas: 2, Results: []shardingResult{res("server", "a"), res("server", "c")}}, "hold 2 objects"},
		{"wrong mode", shardingGroup{Replicas: 2, Results: []shardingResult{res("client", "a", "b"), res("server", "c")}}, `mode "client"`},
		{"stock short", shardingGroup{Replicas: 0, Results: []shardingResult{{Objects: 2}}}, "stock synced 2"},
	} {
		err := tc.g.checkSplit(3, shard.ModeServer)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestSpliceShardingSection(t *testing.T) {
	sec := func(begin, end, body string) string { return begin + "\n" + body + "\n" + end + "\n\n" }
	sharded := func(body string) string { return sec(shardingBegin, shardingEnd, body) }
	for _, tc := range []struct{ name, page, want string }{
		{"after the relist memory section", "# B\n\n" + sec(relistBegin, relistEnd, "relist") + recoveryHeading + " y\n", "# B\n\n" + sec(relistBegin, relistEnd, "relist") + sharded("new") + recoveryHeading + " y\n"},
		{"replaces only the old section", "# B\n\n" + sharded("old") + recoveryHeading + " y\n", "# B\n\n" + sharded("new") + recoveryHeading + " y\n"},
		{"before the watch 410 recovery section", "# B\n\n## Other: x\n\n" + recoveryHeading + " y\n", "# B\n\n## Other: x\n\n" + sharded("new") + recoveryHeading + " y\n"},
		{"at the end", "# B\n\n## Other: x\n", "# B\n\n## Other: x\n\n" + sharded("new")},
	} {
		if got := spliceSharding(tc.page, sharded("new")); got != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}
